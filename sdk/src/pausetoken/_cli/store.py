"""``pausetoken store check`` and ``store purge``, and the check every store URL gets first."""

from __future__ import annotations

import traceback
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from pausetoken._cli.command import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    FunctionCommand,
    debug_parent,
)
from pausetoken._cli.output import cell, console, json_argument, print_json, require_rich, say
from pausetoken.exceptions import CommandLineError, ConfigurationError, UnknownBackend

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Coroutine

    from pausetoken._cli.store_check import StepResult

__all__ = ["STORE", "check_store_url", "url_family"]

# Store URL schemes people write that name no store, and what to write instead.
_SCHEME_FOR: Final = {"postgres": "postgresql", "sqlite3": "sqlite"}
_DEFAULT_DRIVER: Final = {"postgresql": "+asyncpg", "sqlite": "+aiosqlite"}
#: The fewest claims that make a race.
_MIN_RACERS: Final = 2


def url_family(url: str) -> str | None:
    """The store family a URL names; ``None`` for a ``module:attr`` target."""
    from pausetoken._urls import store_family  # noqa: PLC0415 - loaded when a command runs

    return store_family(url) if "://" in url else None


def check_store_url(url: str, *, where: str) -> None:
    """Refuse a store URL whose scheme names no store but resembles one (``postgres://``).

    The message says which URL to write instead, its password hidden.

    Examples:
        >>> try:
        ...     check_store_url("postgres://app:secret@db/tokens", where="--store")
        ... except UnknownBackend as exc:
        ...     print(exc.detail)  # doctest: +ELLIPSIS
        --store: postgres:// names no store; did you mean postgresql+asyncpg://app:***@db/tokens ...

    Args:
        url: The store URL.
        where: Where it was given (``--store``, ``PAUSETOKEN_STORE_URL``), for the message.

    Raises:
        UnknownBackend: for ``postgres://`` and ``sqlite3://`` URLs.
    """
    family = url_family(url)
    better = None if family is None else _SCHEME_FOR.get(family)
    if family is None or better is None:
        return
    from pausetoken._urls import redact_url  # noqa: PLC0415 - loaded when a command runs

    scheme = url.split("://", 1)[0]
    driver = scheme[len(family) :] or _DEFAULT_DRIVER.get(better, "")
    suggestion = redact_url(f"{better}{driver}://{url.split('://', 1)[1]}")
    msg = (
        f"{where}: {family}:// names no store; did you mean {suggestion} ({better}, with a "
        "driver, as SQLAlchemy spells it)?"
    )
    raise UnknownBackend(msg)


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="create the schema, then run a short conformance smoke",
        description="Create the schema if needed, then claim, commit, release, revoke and "
        "race claims on rows of the check's own (they expire ten minutes later). Stops at "
        "the first step that fails and says why.",
        parents=[debug_parent()],
    )
    check.add_argument("url", metavar="URL", help="the store URL (its password is never shown)")
    check.add_argument(
        "--concurrency", type=int, default=20, help="claims racing for one token (default 20)"
    )
    json_argument(check)
    check.set_defaults(store_action=_check, label="store check")
    purge = actions.add_parser(
        "purge",
        help="delete rows whose tokens expired",
        description="Delete rows whose tokens expired before --before (default: now). A "
        "purged token can never verify again, so purging never reopens a replay window.",
        parents=[debug_parent()],
    )
    purge.add_argument("url", metavar="URL", help="the store URL (its password is never shown)")
    purge.add_argument(
        "--before",
        metavar="WHEN",
        help="an ISO 8601 time in the past, or an age such as 7d or 12h (default: now)",
    )
    purge.set_defaults(store_action=_purge, label="store purge")


def _run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only store commands run an event loop

    action: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = args.store_action
    return asyncio.run(action(args))


# -- check ----------------------------------------------------------------------------------


async def _check(args: argparse.Namespace) -> int:
    from pausetoken._cli.store_check import check_store  # noqa: PLC0415
    from pausetoken._registry import open_store  # noqa: PLC0415 - loaded when the command runs

    if not args.json:
        require_rich("store check", json_ok=True)
    if args.concurrency < _MIN_RACERS:
        msg = f"--concurrency must be at least {_MIN_RACERS}"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    check_store_url(args.url, where="URL")
    store = open_store(args.url)
    try:
        # Racers on fresh stores (fresh connections), unless the store is process-local:
        # then each fresh one would hold its own rows.
        shared = not getattr(store, "process_local", False)
        opener = (lambda: open_store(args.url)) if shared else None
        results = await check_store(
            store, concurrency=args.concurrency, opener=opener, url=args.url
        )
    finally:
        await store.aclose()
    failed = results[-1] if results and not results[-1].passed else None
    if args.json:
        print_json(_check_report(args.url, results))
    else:
        _render_check(args.url, results)
    if failed is None:
        return EXIT_OK
    return _report_failed_step(failed, debug=bool(getattr(args, "debug", False)))


def _check_report(url: str, results: list[StepResult]) -> dict[str, Any]:
    from pausetoken._cli.store_check import STEPS  # noqa: PLC0415
    from pausetoken._urls import redact_url  # noqa: PLC0415

    steps: list[dict[str, Any]] = []
    for result in results:
        raised = result.error is not None
        steps.append(
            {
                "name": result.name,
                "result": "pass" if result.passed else "fail",
                "detail": None if raised else result.detail,
                "code": result.detail if raised else None,
                "cause": result.cause,
            }
        )
    steps += [
        {"name": name, "result": "not run", "detail": None, "code": None, "cause": None}
        for name in STEPS[len(results) :]
    ]
    passed = all(result.passed for result in results) and len(results) == len(STEPS)
    return {"url": redact_url(url), "passed": passed, "steps": steps}


def _render_check(url: str, results: list[StepResult]) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    from pausetoken._cli.store_check import STEPS  # noqa: PLC0415
    from pausetoken._urls import redact_url  # noqa: PLC0415

    table = Table(title=f"pausetoken store check {redact_url(url)}")
    for column in ("step", "result", "detail"):
        table.add_column(column, overflow="fold")
    for result in results:
        verdict = Text("pass", style="green") if result.passed else Text("FAIL", style="red")
        table.add_row(result.name, verdict, Text(cell(result.cause or result.detail)))
    for name in STEPS[len(results) :]:
        table.add_row(Text(name, style="dim"), Text("not run", style="dim"), "")
    console().print(table)


def _report_failed_step(failed: StepResult, *, debug: bool) -> int:
    from pausetoken._cli.hints import hint  # noqa: PLC0415 - on errors only

    where = f'stopped at step "{failed.name}": '
    if failed.error is None:
        say(f"pausetoken store check: FAIL {where}{failed.detail}")
        say(
            "hint: the store does not behave as the store protocol says; its conformance "
            "kit (pausetoken.testing.StoreConformance) shows where"
        )
        return EXIT_REFUSED
    if debug:
        traceback.print_exception(failed.error)
    error = failed.error
    say(f"pausetoken store check: error [{error.code}] {where}{failed.cause or error.detail}")
    say(f"hint: {hint(error, 'store check')}")
    return EXIT_USAGE if isinstance(error, ConfigurationError) else EXIT_REFUSED


# -- purge ----------------------------------------------------------------------------------


async def _purge(args: argparse.Namespace) -> int:
    from pausetoken._registry import open_store  # noqa: PLC0415 - loaded when the command runs

    now = datetime.now(UTC)
    before = now if args.before is None else _purge_cutoff(args.before, now)
    check_store_url(args.url, where="URL")
    store = open_store(args.url)
    try:
        deleted = await store.purge(before)
    finally:
        await store.aclose()
    print(deleted)  # noqa: T201 - the count is the command's output
    if getattr(store, "expires_rows_itself", False):
        # A TTL store (Redis PEXPIREAT): the server removes each row at its expiry.
        say("pausetoken: nothing to purge: this store's rows expire by themselves at their expiry")
        return EXIT_OK
    say(f"pausetoken: removed {deleted} row(s) that expired before {before.isoformat()}")
    return EXIT_OK


def _purge_cutoff(text: str, now: datetime) -> datetime:
    from pausetoken._settings import parse_duration  # noqa: PLC0415

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = now - parse_duration(text)
    else:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    if moment > now:
        # A row whose token is still valid must stay: deleting it would allow a replay.
        msg = "--before must not be in the future: live tokens' rows would be deleted"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    return moment


STORE: Final = FunctionCommand(
    "check a store (schema and a smoke test) or purge it", _arguments, _run
)
