"""A quick conformance smoke for a configured store (``pausetoken store check URL``).

It prepares the store's schema (when the store has one) and calls its start-up ``check``
first, then exercises every protocol operation on rows of its own, keyed by fresh random
ids, so it is safe against a production table: its rows expire ten minutes later (and go
with the next purge), and its purge step removes only rows that already expired, as
``store purge`` does. It stops at the first step that fails, with the cause in one line.

Its concurrent claims go through fresh store instances (fresh connections) when it is given
a way to open them, each connected before all are released together: a claim that reads
and then writes is found out whether or not a connection pool was warm.
"""

from __future__ import annotations

import asyncio
import errno
import re
import secrets
import socket
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote, urlsplit

import attrs

from pausetoken._claims import new_jti
from pausetoken._race import race_tasks, warm_up
from pausetoken._store_api import ClaimOutcome, ClaimRequest, ClaimResult, PauseState
from pausetoken._urls import redact_url
from pausetoken.exceptions import PauseTokenError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from pausetoken._store_api import TokenStore

__all__ = ["STEPS", "StepResult", "check_store", "failure_cause"]

#: The steps of `check_store()`, in the order they run.
STEPS: Final = (
    "schema",
    "check",
    "claim, commit and replays",
    "release",
    "revoke",
    "concurrent claims",
    "purge",
)

_SCOPE = "0" * 64
_ANSWER = "a" * 64
_OTHER = "b" * 64
#: When the check's rows expire (engines with TTLs drop them by themselves).
_KEEP = timedelta(minutes=10)


@attrs.frozen
class StepResult:
    """One step of `check_store()`.

    Attributes:
        name: What was checked.
        passed: Whether the store behaved as the protocol says.
        detail: What was seen (an outcome or an error code), never data from other rows.
        cause: Why a step that raised failed, in one line without secrets (see
            `failure_cause()`); ``None`` when it passed or the store misbehaved.
        error: The error a failed step raised (for ``--debug``).
    """

    name: str
    passed: bool
    detail: str
    cause: str | None = None
    error: PauseTokenError | None = attrs.field(default=None, eq=False, repr=False)


class _Smoke:
    def __init__(
        self, store: TokenStore, now: datetime, opener: Callable[[], TokenStore] | None
    ) -> None:
        self.store = store
        self.opener = opener
        self.now = now
        self.expires = now + _KEEP

    def request(self, key: str, answer: str = _ANSWER, *, lease: str | None = None) -> ClaimRequest:
        return ClaimRequest(
            pause_key=key,
            scope_hash=_SCOPE,
            name="pausetoken-store-check",
            response_hash=answer,
            expires_at=self.expires,
            lease_id=lease or secrets.token_urlsafe(16),
            lease_until=self.now + timedelta(minutes=5),
            now=self.now,
        )

    async def lifecycle(self) -> str:
        key = new_jti()
        first = self.request(key)
        outcomes = [
            (await self.store.claim(first)).outcome,
            (await self.store.claim(self.request(key))).outcome,
        ]
        if outcomes != [ClaimOutcome.CLAIMED, ClaimOutcome.IN_PROGRESS]:
            return _fail(f"claim, claim again: {_names(outcomes)}")
        refused = await self.holder_only(key, first)
        if refused:
            return _fail(refused)
        replays = [
            (await self.store.claim(self.request(key))).outcome,
            (await self.store.claim(self.request(key, _OTHER))).outcome,
        ]
        if replays != [ClaimOutcome.REDEEMED_SAME, ClaimOutcome.REDEEMED_OTHER]:
            return _fail(f"claims after commit: {_names(replays)}")
        return "claimed, in progress, renewed, committed (twice), same answer, other answer"

    async def holder_only(self, key: str, first: ClaimRequest) -> str | None:
        """Which of renew and commit, by the holder and by another lease, went wrong."""
        store, lease, stranger = self.store, first.lease_id, "not-the-holder"
        later = first.lease_until + timedelta(minutes=1)
        checks: list[tuple[str, Callable[[], Awaitable[bool]], bool]] = [
            ("renew by another lease", lambda: store.renew(key, stranger, later), False),
            ("renew by the lease holder", lambda: store.renew(key, lease, later), True),
            ("commit by another lease", lambda: store.commit(key, stranger, self.expires), False),
            ("commit by the lease holder", lambda: store.commit(key, lease, self.expires), True),
            ("repeated commit by the holder", lambda: store.commit(key, lease, self.expires), True),
        ]
        for what, call, expected in checks:
            if await call() is not expected:
                return what
        return None

    async def release(self) -> str:
        key = new_jti()
        first = self.request(key)
        await self.store.claim(first)
        if not await self.store.release(key, first.lease_id):
            return _fail("the holder could not release")
        again = (await self.store.claim(self.request(key))).outcome
        if again is not ClaimOutcome.CLAIMED:
            return _fail(f"claim after release: {again.value}")
        return "released, then claimed again"

    async def revoke(self) -> str:
        key, live = new_jti(), new_jti()
        name = "pausetoken-store-check"
        record = await self.store.revoke(key, _SCOPE, name, self.expires, self.now)
        outcome = (await self.store.claim(self.request(key))).outcome
        status = await self.store.status(key)
        if record.state is not PauseState.REVOKED or outcome is not ClaimOutcome.REVOKED:
            return _fail(f"revoked then claimed: {outcome.value}")
        if status is None or status.state is not PauseState.REVOKED:
            return _fail("status after revoke")
        await self.store.claim(self.request(live))
        kept = await self.store.revoke(live, _SCOPE, name, self.expires, self.now)
        if kept.state is not PauseState.CLAIMED:
            return _fail(f"revoke of a live claim: {kept.state.value}")
        return "revoked, claim refused, status revoked, live claim kept"

    async def race(self, concurrency: int) -> str:
        key = new_jti()
        requests = [self.request(key) for _ in range(concurrency)]
        racers: list[TokenStore] = []
        try:
            if self.opener is None:
                await warm_up(self.store, concurrency)
                racers = [self.store] * concurrency
            else:
                for _ in range(concurrency):
                    racers.append(self.opener())
                for racer in racers:
                    await racer.check()
                await asyncio.gather(*(warm_up(racer, 1) for racer in racers))
            results = await race_tasks(
                [_claim(racer, request) for racer, request in zip(racers, requests, strict=True)]
            )
        finally:
            if self.opener is not None:
                for racer in racers:
                    await racer.aclose()
        winners = sum(result.outcome is ClaimOutcome.CLAIMED for result in results)
        if winners != 1:
            return _fail(f"{winners} of {concurrency} concurrent claims won")
        return f"1 of {concurrency} concurrent claims won"

    async def purge(self) -> str:
        # Only rows whose tokens can no longer verify: never reopens a replay window.
        deleted = await self.store.purge(self.now)
        if getattr(self.store, "expires_rows_itself", False):
            return "none needed: rows expire by themselves"
        return f"{deleted} expired row(s) removed"


async def check_store(
    store: TokenStore,
    *,
    concurrency: int = 20,
    now: datetime | None = None,
    opener: Callable[[], TokenStore] | None = None,
    url: str | None = None,
) -> list[StepResult]:
    """Run the smoke against ``store`` and report each step, up to the first that fails.

    Steps (`STEPS`): the schema (created, or already present, when the store says
    which), the store's start-up ``check``, the claim/renew/commit life cycle, release,
    revoke, ``concurrency`` concurrent claims of one pause, and a purge of rows that already
    expired. The first step that fails ends the check: the later ones would only fail for
    the same cause. A step that raises is reported with the error's code and its cause.

    The schema step calls the store's ``ensure_schema()`` when it has one: a store whose
    ``ensure_schema()`` returns ``True`` when it created the schema and ``False`` when it
    was there is reported as "created" or "already present".

    Args:
        store: The store to check.
        concurrency: How many claims race for one pause.
        now: The current time (default: the system clock).
        opener: Opens another store on the same data (``lambda: open_store(url)``); the
            concurrent claims then go one per fresh store, each connected before the race.
            Without it they go through ``store``, after opening ``concurrency``
            connections on it.
        url: The store's URL, to name the host and port of a refused connection and to
            keep its password out of causes.

    Returns:
        One result per step that ran, in order; only the last can have failed.
    """
    smoke = _Smoke(store, now or datetime.now(UTC), opener)
    steps: dict[str, Callable[[], Awaitable[str]]] = {
        "schema": lambda: _schema(store),
        "check": lambda: _check(store),
        "claim, commit and replays": smoke.lifecycle,
        "release": smoke.release,
        "revoke": smoke.revoke,
        "concurrent claims": lambda: smoke.race(concurrency),
        "purge": smoke.purge,
    }
    results = []
    for name in STEPS:
        try:
            detail = await steps[name]()
        except PauseTokenError as exc:
            cause = failure_cause(exc, url)
            results.append(StepResult(name, passed=False, detail=exc.code, cause=cause, error=exc))
            break
        passed = not detail.startswith(_FAILED)
        results.append(StepResult(name, passed=passed, detail=detail.removeprefix(_FAILED)))
        if not passed:
            break
    return results


_FAILED = "FAILED: "


def _fail(detail: str) -> str:
    return _FAILED + detail


def _names(outcomes: list[ClaimOutcome]) -> str:
    return ", ".join(outcome.value for outcome in outcomes)


async def _schema(store: TokenStore) -> str:
    # Not part of the store protocol: stores with a schema offer it (SQLAlchemyStore does).
    ensure: Callable[[], Awaitable[object]] | None = getattr(store, "ensure_schema", None)
    if ensure is None:
        return "none to create"
    created = await ensure()
    if created is True:
        return "created"
    if created is False:
        return "already present"
    return "ready (the store does not say whether it created it)"


async def _check(store: TokenStore) -> str:
    await store.check()
    # Not part of the store protocol: what check() found worth saying (RedisStore's
    # persistence warning, for example).
    warnings: tuple[str, ...] = tuple(getattr(store, "warnings", ()))
    return "; ".join(("ready", *(f"warning: {w}" for w in warnings)))


def _claim(store: TokenStore, request: ClaimRequest) -> Callable[[], Awaitable[ClaimResult]]:
    return lambda: store.claim(request)


# -- the cause of a failure, in one line ----------------------------------------------------

#: Network errors a connection attempt ends with, in words.
_NETWORK_ERRORS: Final = {
    errno.ECONNREFUSED: "connection refused",
    errno.ETIMEDOUT: "connection timed out",
    errno.EHOSTUNREACH: "no route to host",
    errno.ENETUNREACH: "network unreachable",
    errno.ECONNRESET: "connection reset",
}
_ERRNO = re.compile(r"\[Errno (-?\d+)\]")
# asyncio's "Connect call failed ('127.0.0.1', 5433)".
_ADDRESS = re.compile(r"\('([^']+)', (\d+)\)")
# libpq's (psycopg's) 'connection to server at "127.0.0.1", port 5433 failed: Connection refused'.
_LIBPQ_REFUSED = re.compile(r'at "([^"]+)", port (\d+) failed: Connection refused')
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"]+")
#: Longest cause shown; driver messages may run on.
MAX_CAUSE: Final = 240
_DEFAULT_PORTS: Final = {"postgresql": 5432, "postgres": 5432, "mysql": 3306, "mariadb": 3306}


def failure_cause(error: BaseException, url: str | None = None) -> str:
    """Why ``error`` happened, in one line a user can act on, without secrets.

    The chain of causes is searched: a refused or unreachable connection is named with its
    address (``connection refused on 127.0.0.1:5433``), an unknown host by its name, and
    otherwise the innermost driver message is used (``database "x" does not exist``,
    ``unable to open database file``). Wrappers (SQLAlchemy's) are skipped. URLs in the
    text are redacted, the password of ``url`` is removed wherever it appears, and the
    line is cut at `MAX_CAUSE` characters.

    Examples:
        >>> failure_cause(ConnectionRefusedError(111, "Connect call failed ('::1', 5433)"))
        'connection refused on [::1]:5433'

    Args:
        error: The error, usually a [`PauseTokenError`][pausetoken.exceptions.PauseTokenError]
            raised
            ``from`` the driver's.
        url: The URL that was used, for the host and port and its password.

    Returns:
        One line.
    """
    chain = list(_chain(error))
    for exc in chain:
        network = _network_cause(exc, url)
        if network is not None:
            return _scrub(network, url)
    drivers = [exc for exc in chain if not _ours_or_wrapper(exc) and _message(exc)]
    if drivers:
        message = _message(drivers[-1])
        refused = _LIBPQ_REFUSED.search(message)
        if refused is not None:
            message = f"connection refused on {_address(refused[1], int(refused[2]))}"
        return _scrub(message, url)
    if isinstance(error, PauseTokenError):
        return _scrub(error.detail, url)
    return type(error).__name__


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, then its causes outward-in (``__cause__``, ``orig``, ``__context__``)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        if current.__cause__ is not None:
            current = current.__cause__
        elif isinstance(orig, BaseException):
            current = orig
        else:
            current = current.__context__


def _ours_or_wrapper(exc: BaseException) -> bool:
    module = type(exc).__module__
    return isinstance(exc, PauseTokenError) or module.split(".", 1)[0] == "sqlalchemy"


def _message(exc: BaseException) -> str:
    args = exc.args
    # MySQL drivers carry (error number, message).
    if len(args) == 2 and isinstance(args[0], int) and isinstance(args[1], str):  # noqa: PLR2004
        return args[1]
    return str(exc).strip()


def _network_cause(exc: BaseException, url: str | None) -> str | None:
    host, port = _host_and_port(url)
    if isinstance(exc, socket.gaierror):
        return f"host name not found: {host}" if host else "host name not found"
    if not isinstance(exc, OSError):
        return None
    number = exc.errno
    if number is None:
        found = _ERRNO.search(str(exc))
        number = int(found[1]) if found else None
    words = _NETWORK_ERRORS.get(number) if number is not None else None
    if words is None:
        return None
    found = _ADDRESS.search(str(exc))
    if found is not None:
        host, port = found[1], int(found[2])
    return f"{words} on {_address(host, port)}" if host else words


def _address(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown


def _host_and_port(url: str | None) -> tuple[str | None, int | None]:
    if not url or "://" not in url:
        return None, None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None, None
    family = parts.scheme.split("+", 1)[0].lower()
    return parts.hostname, port or _DEFAULT_PORTS.get(family)


def _scrub(text: str, url: str | None) -> str:
    line = " ".join(text.strip().splitlines()[:1]) if text.strip() else ""
    if url:
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        for secret in {password, unquote(password or "")} - {None, ""}:
            line = line.replace(str(secret), "***")
        # The store's own messages name the URL, which the report shows once already.
        shown = redact_url(url)
        for prefix in (f"cannot use the token store at {shown}: ", f"{shown}: "):
            line = line.removeprefix(prefix)
    line = _URL.sub(lambda match: redact_url(match[0]), line)
    return line if len(line) <= MAX_CAUSE else line[: MAX_CAUSE - 1] + "…"
