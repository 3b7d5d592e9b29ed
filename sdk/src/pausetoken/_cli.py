"""The ``pausetoken`` command line.

Each subcommand is one function that takes the parsed arguments and returns an exit status,
plus one function that declares its arguments; :data:`COMMANDS` registers them all in one
place. Exit statuses: 0 success, 1 a token was refused, 2 a usage or configuration error.

rich (the ``[cli]`` extra) is imported only by the subcommands that draw tables, so
``pausetoken keygen`` works without it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from pausetoken._keys import KeyRing
from pausetoken._registry import available_backends, load_signer, open_store, redact_url
from pausetoken._settings import ENV_PREFIX, Settings, _read_keys_file, parse_duration
from pausetoken._verify import TokenPolicy, decode_unverified, verify_token
from pausetoken.exceptions import ConfigurationError, PauseTokenError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping, Sequence

    from rich.console import Console

__all__ = ["COMMANDS", "Command", "main"]

EXIT_OK: Final = 0
EXIT_REFUSED: Final = 1
EXIT_USAGE: Final = 2

#: Longest token read from standard input; real tokens are a few KiB.
MAX_STDIN_BYTES: Final = 1 << 20
#: Width of tables written to a pipe or a file rather than a terminal.
PIPED_WIDTH: Final = 200
#: Longest value shown in a table cell; longer values are cut with an ellipsis.
MAX_CELL: Final = 160

_SHAPE_CODES: Final = frozenset(
    {"token_malformed", "token_too_large", "token_header_invalid", "token_payload_invalid"}
)
_RICH_MISSING: Final = 'this command draws tables with rich: pip install "pausetoken[cli]"'
_HINTS: Final = {
    "settings": "check the PAUSETOKEN_* variables or the options given; see `pausetoken --help`",
    "backend": "`pausetoken backends` lists what is installed",
    "token": "the token was not issued with these keys and settings, or it was altered",
    "shape": "this is not a whole pausetoken token; check that it was copied completely",
    "time": "the token can no longer be used; mint a new one",
}


@attrs.frozen
class Command:
    """One ``pausetoken`` subcommand.

    Attributes:
        name: What the user types (``"keygen"``).
        help: One line for ``pausetoken --help``.
        arguments: Declares the subcommand's arguments on its parser (it may add nested
            subcommands of its own).
        run: Does the work; returns the exit status.
    """

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# -- output ---------------------------------------------------------------------------------


def _console(*, stderr: bool = False) -> Console:
    try:
        from rich.console import Console  # noqa: PLC0415 - rich is an optional extra
    except ImportError as exc:
        raise ConfigurationError(_RICH_MISSING, code="cli_rich_missing") from exc
    # Bound at call time so redirected streams (and tests capturing them) are honoured.
    stream = sys.stderr if stderr else sys.stdout
    # Piped output is read by programs and people alike: wide rows instead of folded cells.
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(file=stream, highlight=False, width=PIPED_WIDTH if piped else None)


def _say(text: str) -> None:
    """Write a hint for humans to standard error (standard output stays machine-readable)."""
    sys.stderr.write(text + "\n")


def _cell(value: object) -> str:
    """Render a header or claim value safely: no markup, no control characters."""
    if value is None:
        return "-"
    if isinstance(value, str) and value.isprintable():
        text = value
    else:
        text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _hint(error: PauseTokenError) -> str:
    from pausetoken.exceptions import (  # noqa: PLC0415 - keeps the top-level import short
        AmbiguousBackend,
        BackendNotInstalled,
        TokenExpired,
        TokenRevoked,
        UnknownBackend,
    )

    if isinstance(error, BackendNotInstalled | UnknownBackend | AmbiguousBackend):
        return _HINTS["backend"]
    if isinstance(error, ConfigurationError):
        return _HINTS["settings"]
    if isinstance(error, TokenExpired | TokenRevoked):
        return _HINTS["time"]
    if error.code in _SHAPE_CODES:
        return _HINTS["shape"]
    return _HINTS["token"]


# -- keygen ---------------------------------------------------------------------------------


def _keygen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--alg",
        choices=("HS256", "EdDSA", "ES256", "dir"),
        default="HS256",
        help="HS256 (shared secret, the default), EdDSA or ES256 (key pairs), "
        "dir (a 256-bit key for sealed tokens)",
    )
    parser.add_argument("--kid", help="key id (default: a random one)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the key set to FILE, created readable only by you (mode 0600); "
        "an existing FILE is never overwritten",
    )


def _keygen(args: argparse.Namespace) -> int:
    keys = KeyRing.generate(args.alg, kid=args.kid)
    text = json.dumps(keys.to_jwks(private=True), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        _say(
            "pausetoken: this key set is secret. Save it to a file readable only by the "
            "service (`pausetoken keygen -o FILE` does) and set PAUSETOKEN_KEYS_FILE to its path."
        )
        return EXIT_OK
    _write_private_file(args.output, text)
    _say(
        f"pausetoken: wrote the key set to {args.output} (mode 0600); set "
        "PAUSETOKEN_KEYS_FILE to its path and keep it out of images and repositories."
    )
    return EXIT_OK


def _write_private_file(path: str, text: str) -> None:
    """Create ``path`` with mode 0600 and write ``text``; never overwrite or follow a link."""
    # O_EXCL: an existing file or symlink (even a dangling one) is refused, not replaced.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError as exc:
        msg = f"{path} exists; keygen never overwrites a file: choose another path"
        raise ConfigurationError(msg, code="cli_output_exists") from exc
    except OSError as exc:
        msg = f"cannot create {path}: {exc.strerror or type(exc).__name__}"
        raise ConfigurationError(msg, code="cli_output_unwritable") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            if hasattr(os, "fchmod"):  # the umask can only remove bits; 0600 exactly
                os.fchmod(file.fileno(), 0o600)
            file.write(text)
    except OSError as exc:
        Path(path).unlink(missing_ok=True)  # no half-written key file left behind
        msg = f"cannot write {path}: {exc.strerror or type(exc).__name__}"
        raise ConfigurationError(msg, code="cli_output_unwritable") from exc


# -- inspect --------------------------------------------------------------------------------


def _inspect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("token", metavar="TOKEN", help="the token, or - to read standard input")
    parser.add_argument(
        "--verify", action="store_true", help="check signature and claims with the key set"
    )
    parser.add_argument(
        "--keys",
        metavar="FILE",
        help="JWKS file to verify with (default: PAUSETOKEN_KEYS_FILE or PAUSETOKEN_KEYS)",
    )
    parser.add_argument(
        "--signer",
        metavar="NAME",
        help="signer plugin to verify with (default: 'sealed' for sealed tokens, else 'jose')",
    )
    defaults = attrs.fields(Settings)
    parser.add_argument(
        "--issuer",
        help=f"required iss (default: PAUSETOKEN_ISSUER or {defaults.issuer.default!r})",
    )
    parser.add_argument(
        "--audience",
        help=f"required aud (default: PAUSETOKEN_AUDIENCE or {defaults.audience.default!r})",
    )


def _read_token(argument: str) -> str:
    raw = sys.stdin.read(MAX_STDIN_BYTES + 1) if argument == "-" else argument
    token = raw.strip()
    if not token:
        raise ConfigurationError("no token given", code="cli_usage")
    return token


def _verification_keys(path: str | None, environ: Mapping[str, str]) -> KeyRing:
    if path is not None:
        return KeyRing.from_jwks(_read_keys_file(path, None, "--keys"))
    if environ.get(f"{ENV_PREFIX}KEYS_FILE"):
        path = environ[f"{ENV_PREFIX}KEYS_FILE"]
        return KeyRing.from_jwks(_read_keys_file(path, None, f"{ENV_PREFIX}KEYS_FILE"))
    if environ.get(f"{ENV_PREFIX}KEYS"):
        return KeyRing.from_jwks(environ[f"{ENV_PREFIX}KEYS"])
    msg = (
        f"--verify needs the key set: pass --keys FILE or set {ENV_PREFIX}KEYS_FILE "
        f"(create one with `pausetoken keygen`)"
    )
    raise ConfigurationError(msg, code="settings_missing")


def _policy(issuer: str | None, audience: str | None) -> TokenPolicy:
    policy = TokenPolicy()
    try:
        if issuer:
            policy = attrs.evolve(policy, issuer=issuer)
        if audience:
            policy = attrs.evolve(policy, audience=audience)
    except ValueError as exc:
        msg = "--issuer and --audience must be 1 to 512 characters"
        raise ConfigurationError(msg, code="cli_usage") from exc
    return policy


def _inspect(args: argparse.Namespace) -> int:
    token = _read_token(args.token)
    console = _console()
    header, claims = decode_unverified(token)
    status = "UNVERIFIED"
    if args.verify:
        environ = os.environ
        policy = _policy(
            args.issuer or environ.get(f"{ENV_PREFIX}ISSUER"),
            args.audience or environ.get(f"{ENV_PREFIX}AUDIENCE"),
        )
        keys = _verification_keys(args.keys, environ)
        name = args.signer or ("sealed" if "enc" in header else "jose")
        signer = load_signer(name).from_keys(keys)
        verified = verify_token(token, signer=signer, policy=policy, now=time.time())
        claims = verified.to_dict()
        status = "VERIFIED"
    _render_token(console, header, claims, status)
    return EXIT_OK


def _render_token(
    console: Console, header: Mapping[str, Any], claims: Mapping[str, Any] | None, status: str
) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    style = "bold green" if status == "VERIFIED" else "bold yellow"
    console.print(Text(status, style=style))
    if status != "VERIFIED":
        console.print(Text("Nothing below is trusted: the signature and claims were not checked."))
    table = Table(title="header", show_header=True)
    table.add_column("field", overflow="fold")
    table.add_column("value", overflow="fold")
    for name, value in header.items():
        table.add_row(Text(_cell(name)), Text(_cell(value)))
    console.print(table)
    if claims is None:
        console.print(Text("claims: sealed (encrypted); use --verify with the key set"))
        return
    table = Table(title="claims", show_header=True)
    table.add_column("claim", overflow="fold")
    table.add_column("value", overflow="fold")
    for name, value in claims.items():
        shown = _cell(value)
        if name in {"iat", "exp", "nbf"} and isinstance(value, int) and not isinstance(value, bool):
            try:
                shown += f"  ({datetime.fromtimestamp(value, tz=UTC).isoformat()})"
            except (OverflowError, OSError, ValueError):
                shown += "  (out of range)"
        table.add_row(Text(_cell(name)), Text(shown))
    console.print(table)


# -- backends -------------------------------------------------------------------------------

_KINDS: Final = ("stores", "signers", "checkpoints")


def _backends_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def _backends(args: argparse.Namespace) -> int:
    del args
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    console = _console()
    table = Table(title="pausetoken backends")
    for column in ("kind", "name", "target", "distribution", "version", "imports"):
        table.add_column(column, overflow="fold")
    for kind in _KINDS:
        for backend in available_backends(kind):
            try:
                backend.load()
            except ConfigurationError as exc:
                imports = Text(f"no: {exc.code}", style="red")
            else:
                imports = Text("yes", style="green")
            table.add_row(
                kind,
                Text(_cell(backend.name)),
                Text(_cell(backend.target)),
                Text(_cell(backend.distribution)),
                Text(_cell(backend.version)),
                imports,
            )
    console.print(table)
    return EXIT_OK


# -- demo -----------------------------------------------------------------------------------

_DEMO_MISSING: Final = (
    "the demo runs a LangGraph graph on SQLite: "
    'pip install "pausetoken[langgraph,sqlite,cli]" "pausetoken-langgraph[sqlite]"'
)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir", metavar="DIR", help="keep the SQLite files here (default: a temporary directory)"
    )
    parser.add_argument(
        "--store", metavar="URL", help="token store URL (default: a SQLite file in the directory)"
    )
    parser.add_argument(
        "--checkpointer",
        metavar="URL",
        help="postgresql://... for LangGraph's AsyncPostgresSaver (default: SQLite)",
    )


def _demo(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only the demo runs an event loop
    import tempfile  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from pausetoken.exceptions import BackendNotInstalled  # noqa: PLC0415

    try:
        from pausetoken_langgraph._demo import run_demo  # noqa: PLC0415 - optional distribution
    except ImportError as exc:
        raise BackendNotInstalled(_DEMO_MISSING, code="demo_not_installed") from exc
    console = _console()
    with tempfile.TemporaryDirectory(prefix="pausetoken-demo-") as scratch:
        directory = Path(args.dir) if args.dir else Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        passed = asyncio.run(
            run_demo(
                directory=directory,
                store_url=args.store,
                checkpointer_url=args.checkpointer,
                console=console,
            )
        )
    return EXIT_OK if passed else EXIT_REFUSED


# -- store ----------------------------------------------------------------------------------


def _store_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="create the schema, then run a short conformance smoke",
        description="Create the schema if needed, then claim, commit, release, revoke and "
        "race claims on rows of the check's own (they expire ten minutes later).",
    )
    check.add_argument("url", metavar="URL", help="the store URL (its password is never shown)")
    check.add_argument(
        "--concurrency", type=int, default=20, help="claims racing for one token (default 20)"
    )
    check.set_defaults(store_action=_store_check)
    purge = actions.add_parser(
        "purge",
        help="delete rows whose tokens expired",
        description="Delete rows whose tokens expired before --before (default: now). A "
        "purged token can never verify again, so purging never reopens a replay window.",
    )
    purge.add_argument("url", metavar="URL", help="the store URL (its password is never shown)")
    purge.add_argument(
        "--before",
        metavar="WHEN",
        help="an ISO 8601 time in the past, or an age such as 7d or 12h (default: now)",
    )
    purge.set_defaults(store_action=_store_purge)


def _store(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only store commands run an event loop

    action: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = args.store_action
    return asyncio.run(action(args))


async def _store_check(args: argparse.Namespace) -> int:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    from pausetoken._store_check import check_store  # noqa: PLC0415

    if args.concurrency < 2:  # noqa: PLR2004 - a race needs two
        msg = "--concurrency must be at least 2"
        raise ConfigurationError(msg, code="cli_usage")
    store = open_store(args.url)
    try:
        # Racers on fresh stores (fresh connections), unless the store is process-local:
        # then each fresh one would hold its own rows.
        shared = not getattr(store, "process_local", False)
        opener = (lambda: open_store(args.url)) if shared else None
        results = await check_store(store, concurrency=args.concurrency, opener=opener)
    finally:
        await store.aclose()
    table = Table(title=f"pausetoken store check {redact_url(args.url)}")
    for column in ("step", "result", "detail"):
        table.add_column(column, overflow="fold")
    for result in results:
        verdict = Text("pass", style="green") if result.passed else Text("FAIL", style="red")
        table.add_row(result.name, verdict, Text(_cell(result.detail)))
    _console().print(table)
    return EXIT_OK if all(result.passed for result in results) else EXIT_REFUSED


async def _store_purge(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    before = now if args.before is None else _purge_cutoff(args.before, now)
    store = open_store(args.url)
    try:
        deleted = await store.purge(before)
    finally:
        await store.aclose()
    print(deleted)  # noqa: T201 - the count is the command's output
    _say(f"pausetoken: removed {deleted} row(s) that expired before {before.isoformat()}")
    return EXIT_OK


def _purge_cutoff(text: str, now: datetime) -> datetime:
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
        raise ConfigurationError(msg, code="cli_usage")
    return moment


# -- registration and entry point -----------------------------------------------------------

#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "keygen",
        "print a new key set (JWKS), or write it to a private file with -o",
        _keygen_arguments,
        _keygen,
    ),
    Command(
        "inspect",
        "show a token's header and claims, optionally verified",
        _inspect_arguments,
        _inspect,
    ),
    Command(
        "backends",
        "list installed stores, signers and checkpoint readers",
        _backends_arguments,
        _backends,
    ),
    Command("demo", "run a LangGraph approval flow end to end on SQLite", _demo_arguments, _demo),
    Command(
        "store", "check a store (schema and a smoke test) or purge it", _store_arguments, _store
    ),
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``pausetoken`` with every registered subcommand.

    Returns:
        The parser; the chosen command's :class:`Command` is in the ``command`` attribute.
    """
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show tracebacks on errors",
    )
    parser = argparse.ArgumentParser(
        prog="pausetoken",
        description="Signed, single-use resume tokens for human-in-the-loop pauses.",
        parents=[debug],
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in COMMANDS:
        sub = subparsers.add_parser(
            command.name, help=command.help, description=command.help, parents=[debug]
        )
        command.arguments(sub)
        sub.set_defaults(command=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pausetoken`` command line.

    Args:
        argv: The arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 success, 1 a token was refused, 2 a usage or configuration error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    command: Command = args.command
    try:
        return command.run(args)
    except PauseTokenError as exc:
        if debug:
            traceback.print_exc()
        _say(f"pausetoken {command.name}: error [{exc.code}] {exc.detail}")
        _say(f"hint: {_hint(exc)}")
        return EXIT_USAGE if isinstance(exc, ConfigurationError) else EXIT_REFUSED
    except KeyboardInterrupt:
        _say(f"pausetoken {command.name}: interrupted")
        return 130
    except Exception as exc:
        if debug:
            raise
        # The message of an unexpected error may quote its input; show only its type.
        _say(f"pausetoken {command.name}: unexpected {type(exc).__name__}")
        _say("hint: run again with --debug to see the traceback")
        return EXIT_REFUSED
