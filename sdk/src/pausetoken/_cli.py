"""The ``pausetoken`` command line.

Each subcommand is one function that takes the parsed arguments and returns an exit status,
plus one function that declares its arguments; `COMMANDS` registers them all in one
place. Exit statuses: 0 success, 1 a token was refused (or a check failed), 2 a usage or
configuration error.

rich (the ``[cli]`` extra) is imported only by the subcommands that draw tables, and only
when they draw them, so ``pausetoken keygen``, ``status``, ``revoke`` and every ``--json``
output work without it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from pausetoken._install import install_hint
from pausetoken._keys import KeyRing
from pausetoken._policy import TokenPolicy
from pausetoken._registry import available_backends, load_signer, open_store, redact_url
from pausetoken._settings import ENV_PREFIX, Settings, _load_keys_file, parse_duration
from pausetoken._urls import store_family
from pausetoken._verify import decode_unverified, verify_token
from pausetoken.exceptions import (
    BackendNotInstalled,
    ConfigurationError,
    InvalidToken,
    PauseTokenError,
    UnknownBackend,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence

    from rich.console import Console

    from pausetoken._claims import Scope
    from pausetoken._service import PauseTokens
    from pausetoken._store_check import StepResult

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

_KEYGEN: Final = (
    "`pausetoken keygen -o FILE` writes a key set that passes every check; "
    f"set {ENV_PREFIX}KEYS_FILE to FILE"
)
_SHAPE: Final = "this is not a whole pausetoken token; check that it was copied completely"
#: What to do about each error code; a code without an entry gets no hint (a generic
#: hint attached to an unrelated error misleads).
_HINTS: Final[Mapping[str, str]] = {
    "settings_missing": (
        f"{_KEYGEN}; {ENV_PREFIX}STORE_URL names the store (e.g. sqlite+aiosqlite:///pausetoken.db)"
    ),
    "settings_unknown": "rename or unset that variable; docs/configuration.md lists them all",
    "settings_conflict": "keep one of the two settings named above",
    "settings_invalid": "correct the value of the setting named above",
    "settings_file_unreadable": "check the path, and that this user may read the file",
    "key_file_insecure": "chmod 600 the key file (`pausetoken keygen -o FILE` creates it so)",
    **dict.fromkeys(
        (
            "jwks_invalid",
            "key_is_pem",
            "key_invalid",
            "key_alg_mismatch",
            "key_ops_invalid",
            "key_too_short",
            "key_size_invalid",
            "key_whitespace",
            "key_not_ascii",
            "key_placeholder",
            "key_low_entropy",
            "empty_keyring",
            "duplicate_kid",
            "no_active_key",
        ),
        _KEYGEN,
    ),
    "kid_invalid": "a kid is 1 to 64 letters, digits and '_.:-'",
    "backend_not_installed": "install what the message names; `pausetoken backends` lists "
    "what is installed",
    "unknown_backend": "`pausetoken backends` lists the installed stores, signers and readers",
    "ambiguous_backend": "uninstall one of the two distributions (`pausetoken backends`)",
    "backend_import_failed": "run again with --debug to see why it fails to import",
    "backend_api_version": "upgrade the backend's distribution to one made for this pausetoken",
    "demo_not_installed": install_hint(
        "pausetoken[langgraph,sqlite,cli]", "pausetoken-langgraph[sqlite]"
    ),
    "demo_checkpointer_failed": "check that the checkpointer's database is running and that "
    "the URL names it (user, host, port, database)",
    "cli_rich_missing": install_hint("pausetoken[cli]"),
    "cli_usage": "`pausetoken {command} --help` lists the options",
    "cli_output_exists": "choose another path; remove that file first only if you mean to "
    "replace its key set",
    "cli_output_unwritable": "check that the directory exists and that you may write to it",
    "cli_benchmarks_missing": "run it in a clone of the pausetoken repository, or pass --dir DIR",
    "store_misconfigured": "waiting will not help: correct the URL (user, password, database "
    "name, path) or the database's permissions",
    "store_unavailable": "check that the database server is running and reachable from here "
    "(host and port in the URL)",
    "store_table_missing": "restore the table from a backup, or delete its row in "
    "pausetoken_schema to start afresh on purpose",
    "store_schema_too_new": "upgrade pausetoken-sqlalchemy to the release that created the table",
    **dict.fromkeys(
        ("token_malformed", "token_too_large", "token_header_invalid", "token_payload_invalid"),
        _SHAPE,
    ),
    "token_signature_invalid": "the token was not issued with these keys, or it was altered",
    "token_key_unknown": "the token's kid is not in this key set: use the key set of the "
    "service that minted it",
    "token_key_retired": "the key that signed it was retired: mint a new token",
    "token_algorithm_not_allowed": "the token's algorithm is not one of this key set's (sealed "
    "tokens need a dir key)",
    "token_header_forbidden": "pausetoken never mints such a header: the token was not "
    "minted by pausetoken",
    "token_type_invalid": "typ is not pause+jwt: this is not a pausetoken token",
    "token_claims_invalid": "the claims are not pausetoken's: was it minted by pausetoken?",
    "token_lifetime_too_long": f"the token outlives {ENV_PREFIX}MAX_LIFETIME; mint a shorter one",
    "token_not_yet_valid": "check that this machine's clock agrees with the minting service's",
    "token_issuer_invalid": f"set {ENV_PREFIX}ISSUER (inspect: --issuer) to the minting "
    "service's issuer",
    "token_audience_invalid": f"set {ENV_PREFIX}AUDIENCE (inspect: --audience) to the minting "
    "service's audience",
    "token_expired": "the token can no longer be used; mint a new one",
    "token_revoked": "the pause was revoked; mint a token for a new pause",
    "scope_mismatch": "pass the --scope the token was minted for",
}
#: Codes whose errors were raised ``from`` a driver's: the CLI shows that cause too.
_CAUSED: Final = frozenset(
    {"store_misconfigured", "store_unavailable", "store_table_missing", "demo_checkpointer_failed"}
)
# Store URL schemes people write that name no store, and what to write instead.
_SCHEME_FOR: Final = {"postgres": "postgresql", "sqlite3": "sqlite"}
_DEFAULT_DRIVER: Final = {"postgresql": "+asyncpg", "sqlite": "+aiosqlite"}


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


def _require_rich(command: str, *more: str, json_ok: bool = False) -> None:
    """Refuse, before any work, a command that draws with rich when rich is missing."""
    try:
        for module in ("rich.console", "rich.table", "rich.text", *more):
            importlib.import_module(module)  # rich is an optional extra
    except ImportError as exc:
        msg = f"`pausetoken {command}` draws its output with rich, which is not installed"
        if json_ok:
            msg += " (its --json output needs no rich)"
        raise ConfigurationError(msg, code="cli_rich_missing") from exc


def _console(*, stderr: bool = False) -> Console:
    from rich.console import Console  # noqa: PLC0415 - rich is an optional extra

    # Bound at call time so redirected streams (and tests capturing them) are honoured.
    stream = sys.stderr if stderr else sys.stdout
    # Piped output is read by programs and people alike: wide rows instead of folded cells.
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(file=stream, highlight=False, width=PIPED_WIDTH if piped else None)


def _say(text: str) -> None:
    """Write a message for humans to standard error (standard output stays machine-readable)."""
    sys.stderr.write(text + "\n")


def _print_json(value: object) -> None:
    # ASCII only: control characters of hostile values arrive escaped, never raw.
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=True, default=str) + "\n")


def _json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON on standard output (needs no rich)"
    )


def _cell(value: object) -> str:
    """Render a header or claim value safely: no markup, no control characters."""
    if value is None:
        return "-"
    if isinstance(value, str) and value.isprintable():
        text = value
    else:
        text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _hint(error: PauseTokenError, command: str) -> str | None:
    """What to do about ``error``: its own hint, else its code's, else none."""
    own = getattr(error, "hint", None)
    if isinstance(own, str):
        return own
    hint = _HINTS.get(error.code)
    return None if hint is None else hint.replace("{command}", command)


def _cause(error: PauseTokenError) -> str | None:
    """The driver's reason behind a store or checkpointer error, when it adds something."""
    if error.code not in _CAUSED or error.__cause__ is None:
        return None
    from pausetoken._store_check import failure_cause  # noqa: PLC0415

    cause = failure_cause(error)
    return None if cause in error.detail else cause


def _report(error: PauseTokenError, label: str) -> None:
    _say(f"pausetoken {label}: error [{error.code}] {error.detail}")
    cause = _cause(error)
    if cause:
        _say(f"cause: {cause}")
    hint = _hint(error, label)
    if hint:
        _say(f"hint: {hint}")


# -- tokens from the command line -----------------------------------------------------------


class _PastedToken(InvalidToken):
    """A token given with something that is not part of it (a prefix, quotes, a break)."""

    def __init__(self, detail: str, hint: str) -> None:
        super().__init__(detail, code="token_malformed")
        self.hint = hint


_BEARER = re.compile(r"^\s*bearer\s", re.IGNORECASE)
_QUOTES: Final = "\"'`‘’“”"  # noqa: RUF001 - typographic quotes are what editors paste


def _read_token(argument: str) -> str:
    """The token in ``argument`` (``-``: standard input), refusing what was pasted with it.

    Standard input may end with one line break (``echo "$TOKEN" |`` adds it). Anything
    else around or inside the token is refused with a message that says what it is,
    without showing the token.
    """
    if argument == "-":
        raw = sys.stdin.read(MAX_STDIN_BYTES + 1)
        raw = raw.removesuffix("\n").removesuffix("\r")
    else:
        raw = argument
    if not raw.strip():
        raise ConfigurationError("no token given", code="cli_usage")
    _refuse_pasted(raw)
    return raw


def _refuse_pasted(raw: str) -> None:
    if _BEARER.match(raw):
        msg = (
            "the token starts with 'Bearer ', the HTTP authorization scheme, which is not "
            "part of the token"
        )
        raise _PastedToken(msg, "pass only what follows 'Bearer '")
    stripped = raw.strip()
    if stripped[0] in _QUOTES or stripped[-1] in _QUOTES:
        msg = "the token is wrapped in quotes, which are not part of it"
        raise _PastedToken(msg, "pass the token without its quotes")
    breaks = [index for index, char in enumerate(raw) if char in "\r\n"]
    if breaks and all(not char.strip() for char in raw[breaks[0] :]):
        msg = "the token ends with a line break"
        hint = "remove it, or pass the token on standard input with - (one final break is fine)"
        raise _PastedToken(msg, hint)
    if breaks:
        msg = (
            f"the token has a line break after character {breaks[0]} of {len(raw)}: it was "
            "wrapped when it was copied"
        )
        raise _PastedToken(msg, "join its lines into one (tr -d '\\n' removes line breaks)")
    if raw != stripped:
        msg = "the token starts or ends with spaces"
        raise _PastedToken(msg, "remove the spaces around it")
    if any(char.isspace() for char in raw):
        msg = "the token contains spaces, which are never part of a token"
        raise _PastedToken(msg, "copy the token again, whole and on one line")


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
    _json_argument(parser)


def _verification_keys(path: str | None, environ: Mapping[str, str]) -> KeyRing:
    if path is not None:
        return _load_keys_file(path, None, "--keys")
    variable = f"{ENV_PREFIX}KEYS_FILE"
    if environ.get(variable):
        return _load_keys_file(environ[variable], None, variable)
    variable = f"{ENV_PREFIX}KEYS"
    if environ.get(variable):
        try:
            return KeyRing.from_jwks(environ[variable])
        except ConfigurationError as exc:
            msg = f"{variable}: {exc.detail}"
            raise ConfigurationError(msg, code=exc.code) from exc
    msg = (
        f"--verify needs the key set: pass --keys FILE or set {ENV_PREFIX}KEYS_FILE "
        f"(create one with `pausetoken keygen -o FILE`)"
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
    if not args.json:
        _require_rich("inspect", json_ok=True)
    token = _read_token(args.token)
    header, claims = decode_unverified(token)
    verified = False
    if args.verify:
        environ = os.environ
        policy = _policy(
            args.issuer or environ.get(f"{ENV_PREFIX}ISSUER"),
            args.audience or environ.get(f"{ENV_PREFIX}AUDIENCE"),
        )
        keys = _verification_keys(args.keys, environ)
        name = args.signer or ("sealed" if "enc" in header else "jose")
        signer = load_signer(name).from_keys(keys)
        claims = verify_token(token, signer=signer, policy=policy, now=time.time()).to_dict()
        verified = True
    if args.json:
        _print_json({"verified": verified, "header": dict(header), "claims": claims})
    else:
        _render_token(_console(), header, claims, "VERIFIED" if verified else "UNVERIFIED")
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


# -- status and revoke ----------------------------------------------------------------------

_SCOPE_FORMS: Final = (
    "--scope is TENANT, TENANT/SUB_TENANT or TENANT/SUB_TENANT/NAMESPACE (TENANT//NAMESPACE "
    'without a sub-tenant), or a JSON object such as {"tenant_id": "acme", "namespace": "x"}'
)
_SCOPE_FIELDS: Final = ("tenant_id", "sub_tenant_id", "namespace")
#: What each status means, for people (standard error).
_MEANINGS: Final = {
    "active": "not answered yet: it can still be redeemed",
    "in_progress": "a redeemer holds a live claim on its pause right now",
    "redeemed": "answered: it can never be used again",
    "revoked": "revoked: it can never be redeemed",
    "expired": "expired: it can no longer be redeemed",
}


def _token_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        f"The service's settings are read from the {ENV_PREFIX}* variables "
        f"({ENV_PREFIX}STORE_URL and {ENV_PREFIX}KEYS_FILE at least)."
    )
    parser.add_argument("token", metavar="TOKEN", help="the token, or - to read standard input")
    parser.add_argument(
        "--scope",
        required=True,
        metavar="SCOPE",
        help="the scope the token was minted for: TENANT[/SUB_TENANT[/NAMESPACE]] "
        "(TENANT//NAMESPACE without a sub-tenant) or a JSON object with tenant_id, "
        "sub_tenant_id and namespace",
    )
    _json_argument(parser)


def _parse_scope(text: str) -> Scope:
    """Read ``--scope``; the message never repeats the value (it may name a customer)."""
    from pausetoken._claims import Scope  # noqa: PLC0415

    text = text.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            msg = f"--scope is not valid JSON; {_SCOPE_FORMS}"
            raise ConfigurationError(msg, code="cli_usage") from exc
        if (
            not isinstance(data, dict)
            or not set(data) <= set(_SCOPE_FIELDS)
            or not isinstance(data.get("tenant_id"), str)
            or not all(isinstance(data.get(f), str | None) for f in _SCOPE_FIELDS[1:])
        ):
            msg = "--scope as JSON takes tenant_id and, optionally, sub_tenant_id and namespace"
            raise ConfigurationError(msg, code="cli_usage")
        parts: list[str | None] = [data.get(field) for field in _SCOPE_FIELDS]
    else:
        pieces = text.split("/")
        if len(pieces) > len(_SCOPE_FIELDS):
            raise ConfigurationError(_SCOPE_FORMS, code="cli_usage")
        parts = [piece or None for piece in pieces]
        parts += [None] * (len(_SCOPE_FIELDS) - len(parts))
    tenant, sub_tenant, namespace = parts
    if not tenant or not tenant.strip():
        msg = f"--scope needs a tenant; {_SCOPE_FORMS}"
        raise ConfigurationError(msg, code="cli_usage")
    return Scope(tenant, sub_tenant_id=sub_tenant, namespace=namespace)


def _family(url: str) -> str | None:
    """The store family a URL names; ``None`` for a ``module:attr`` target."""
    return store_family(url) if "://" in url else None


def _check_store_url(url: str, where: str) -> None:
    """Refuse a store URL scheme that names no store but resembles one (``postgres://``)."""
    family = _family(url)
    better = None if family is None else _SCHEME_FOR.get(family)
    if family is None or better is None:
        return
    scheme = url.split("://", 1)[0]
    driver = scheme[len(family) :] or _DEFAULT_DRIVER.get(better, "")
    suggestion = redact_url(f"{better}{driver}://{url.split('://', 1)[1]}")
    msg = (
        f"{where}: {family}:// names no store; did you mean {suggestion} ({better}, with a "
        "driver, as SQLAlchemy spells it)?"
    )
    raise UnknownBackend(msg)


def _service_from_env(command: str) -> PauseTokens:
    from pausetoken._memory_checkpoints import MemoryCheckpoints  # noqa: PLC0415
    from pausetoken._service import PauseTokens  # noqa: PLC0415

    settings = Settings.from_env()
    variable = f"{ENV_PREFIX}STORE_URL"
    _check_store_url(settings.store_url, variable)
    if _family(settings.store_url) == "memory":
        msg = (
            f"{variable} is memory://, whose rows live in one process: `pausetoken {command}` "
            "would see none of the service's; give it the service's store URL"
        )
        raise ConfigurationError(msg, code="cli_usage")
    # Status and revoke never read a checkpoint: no reader is loaded from the settings.
    return PauseTokens.from_settings(settings, checkpoints=MemoryCheckpoints())


def _status(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only store commands run an event loop

    token = _read_token(args.token)
    scope = _parse_scope(args.scope)

    async def run() -> str:
        async with _service_from_env("status") as tokens:
            return (await tokens.status(token, scope=scope)).value

    status = asyncio.run(run())
    if args.json:
        _print_json({"status": status})
    else:
        print(status)  # noqa: T201 - the status is the command's output
        _say(f"pausetoken status: the token is {_MEANINGS[status]}")
    return EXIT_OK


def _revoke(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only store commands run an event loop

    token = _read_token(args.token)
    scope = _parse_scope(args.scope)

    async def run() -> str:
        async with _service_from_env("revoke") as tokens:
            return (await tokens.revoke(token, scope=scope)).value

    status = asyncio.run(run())
    if args.json:
        _print_json({"status": status, "revoked": status == "revoked"})
    else:
        print(status)  # noqa: T201 - the status is the command's output
    if status == "revoked":
        _say("pausetoken revoke: the pause is revoked; no token minted for it can be redeemed")
        return EXIT_OK
    if status == "redeemed":
        _say("pausetoken revoke: too late, the pause was already answered; nothing was revoked")
    else:
        _say(
            "pausetoken revoke: a redeemer holds a live claim on the pause, so it was not "
            "revoked; run revoke again once that redemption has ended"
        )
    return EXIT_REFUSED


# -- backends -------------------------------------------------------------------------------

_KINDS: Final = ("stores", "signers", "checkpoints")


def _backends_arguments(parser: argparse.ArgumentParser) -> None:
    _json_argument(parser)


def _backends(args: argparse.Namespace) -> int:
    if not args.json:
        _require_rich("backends", json_ok=True)
    listing: dict[str, list[dict[str, Any]]] = {kind: [] for kind in _KINDS}
    for kind in _KINDS:
        for backend in available_backends(kind):
            try:
                backend.load()
            except ConfigurationError as exc:
                error: str | None = exc.code
            else:
                error = None
            listing[kind].append(
                {
                    "name": backend.name,
                    "target": backend.target,
                    "distribution": backend.distribution,
                    "version": backend.version,
                    "imports": error is None,
                    "error": error,
                }
            )
    if args.json:
        _print_json(listing)
        return EXIT_OK
    _render_backends(listing)
    return EXIT_OK


def _render_backends(listing: Mapping[str, list[dict[str, Any]]]) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    # Three narrow columns, kinds as sections: readable in 80 columns. Targets are in --json.
    table = Table(title="pausetoken backends")
    for column in ("name", "provided by", "imports"):
        table.add_column(column, overflow="fold")
    for kind in _KINDS:
        table.add_row(Text(kind, style="bold"), "", "")
        for backend in listing[kind]:
            provider = " ".join(
                str(part) for part in (backend["distribution"], backend["version"]) if part
            )
            imports = (
                Text("yes", style="green")
                if backend["imports"]
                else Text(f"no: {backend['error']}", style="red")
            )
            table.add_row(
                Text("  " + _cell(backend["name"])), Text(_cell(provider or "code")), imports
            )
        if kind != _KINDS[-1]:
            table.add_section()
    _console().print(table)


# -- demo -----------------------------------------------------------------------------------


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
        help="postgresql://... for LangGraph's AsyncPostgresSaver, or sqlite:///PATH "
        "(default: SQLite in the directory)",
    )


def _demo(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only the demo runs an event loop
    import tempfile  # noqa: PLC0415

    try:
        from pausetoken_langgraph._demo import run_demo  # noqa: PLC0415 - optional distribution
    except ImportError as exc:
        msg = "the demo runs a LangGraph graph on SQLite; its distributions are not installed"
        raise BackendNotInstalled(msg, code="demo_not_installed") from exc
    _require_rich("demo")
    if args.store:
        _check_store_url(args.store, "--store")
    with tempfile.TemporaryDirectory(prefix="pausetoken-demo-") as scratch:
        directory = Path(args.dir) if args.dir else Path(scratch)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create --dir {directory}: {exc.strerror or type(exc).__name__}"
            raise ConfigurationError(msg, code="cli_usage") from exc
        passed = asyncio.run(
            run_demo(
                directory=directory,
                store_url=args.store,
                checkpointer_url=args.checkpointer,
                console=_console(),
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
        "race claims on rows of the check's own (they expire ten minutes later). Stops at "
        "the first step that fails and says why.",
        parents=[_debug_parent()],
    )
    check.add_argument("url", metavar="URL", help="the store URL (its password is never shown)")
    check.add_argument(
        "--concurrency", type=int, default=20, help="claims racing for one token (default 20)"
    )
    _json_argument(check)
    check.set_defaults(store_action=_store_check, label="store check")
    purge = actions.add_parser(
        "purge",
        help="delete rows whose tokens expired",
        description="Delete rows whose tokens expired before --before (default: now). A "
        "purged token can never verify again, so purging never reopens a replay window.",
        parents=[_debug_parent()],
    )
    purge.add_argument("url", metavar="URL", help="the store URL (its password is never shown)")
    purge.add_argument(
        "--before",
        metavar="WHEN",
        help="an ISO 8601 time in the past, or an age such as 7d or 12h (default: now)",
    )
    purge.set_defaults(store_action=_store_purge, label="store purge")


def _store(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only store commands run an event loop

    action: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = args.store_action
    return asyncio.run(action(args))


async def _store_check(args: argparse.Namespace) -> int:
    from pausetoken._store_check import check_store  # noqa: PLC0415

    if not args.json:
        _require_rich("store check", json_ok=True)
    if args.concurrency < 2:  # noqa: PLR2004 - a race needs two
        msg = "--concurrency must be at least 2"
        raise ConfigurationError(msg, code="cli_usage")
    _check_store_url(args.url, "URL")
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
        _print_json(_check_report(args.url, results))
    else:
        _render_check(args.url, results)
    if failed is None:
        return EXIT_OK
    return _report_failed_step(failed, debug=bool(getattr(args, "debug", False)))


def _check_report(url: str, results: list[StepResult]) -> dict[str, Any]:
    from pausetoken._store_check import STEPS  # noqa: PLC0415

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

    from pausetoken._store_check import STEPS  # noqa: PLC0415

    table = Table(title=f"pausetoken store check {redact_url(url)}")
    for column in ("step", "result", "detail"):
        table.add_column(column, overflow="fold")
    for result in results:
        verdict = Text("pass", style="green") if result.passed else Text("FAIL", style="red")
        table.add_row(result.name, verdict, Text(_cell(result.cause or result.detail)))
    for name in STEPS[len(results) :]:
        table.add_row(Text(name, style="dim"), Text("not run", style="dim"), "")
    _console().print(table)


def _report_failed_step(failed: StepResult, *, debug: bool) -> int:
    where = f'stopped at step "{failed.name}": '
    if failed.error is None:
        _say(f"pausetoken store check: FAIL {where}{failed.detail}")
        _say(
            "hint: the store does not behave as the store protocol says; its conformance "
            "kit (pausetoken.testing.StoreConformance) shows where"
        )
        return EXIT_REFUSED
    if debug:
        traceback.print_exception(failed.error)
    error = failed.error
    _say(f"pausetoken store check: error [{error.code}] {where}{failed.cause or error.detail}")
    hint = _hint(error, "store check")
    if hint:
        _say(f"hint: {hint}")
    return EXIT_USAGE if isinstance(error, ConfigurationError) else EXIT_REFUSED


async def _store_purge(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    before = now if args.before is None else _purge_cutoff(args.before, now)
    _check_store_url(args.url, "URL")
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


# -- bench ----------------------------------------------------------------------------------

# Lines with a ratio, as the benchmarks print them: a label ending in "ratio ..." and a
# number, then maybe "(target >= 1.0)"; a "mint 5,993 ops/s joserfc 25,876 ops/s ratio 0.23"
# row names its rates before the word.
_RATIO = re.compile(r"^(?P<before>.*?)\bratio\b(?P<after>.*?):?\s+(?P<value>\d+\.\d+)(?P<rest>.*)$")
_TARGET = re.compile(r"target\s*(?P<op>[<>]=?)\s*(?P<bound>\d+(?:\.\d+)?)")
_RATE = re.compile(r"\s+[\d,.]+\s*(?:ops/s|µs|ms)\b")
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<name>[\w.]+)'")
#: Longest line of a running benchmark shown beside the progress bar.
_PROGRESS_LINE: Final = 60


@attrs.frozen
class _Ratio:
    benchmark: str
    name: str
    value: float
    target: str | None
    met: bool | None


@attrs.frozen
class _BenchRun:
    name: str
    status: int
    lines: tuple[str, ...]


def _bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="benchmarks to run, by script name without .py (default: all)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="pass --quick to each benchmark (fewer repeats)"
    )
    parser.add_argument(
        "--dir",
        metavar="DIR",
        help="the benchmarks directory (default: benchmarks/ of this pausetoken checkout)",
    )


def _bench(args: argparse.Namespace) -> int:
    _require_rich("bench", "rich.progress", "rich.markup")
    scripts = _bench_scripts(_bench_dir(args.dir), args.names)
    runs = _run_benchmarks(scripts, quick=args.quick)
    ratios = [ratio for run in runs for ratio in _ratios(run)]
    _render_ratios(ratios)
    failed = [run for run in runs if run.status != 0]
    for run in failed:
        command = f"python {scripts[run.name]}{' --quick' if args.quick else ''}"
        _say(f"pausetoken bench: {run.name} failed (exit status {run.status})")
        missing = next(
            (m for line in run.lines if (m := _MISSING_MODULE.search(line)) is not None), None
        )
        if missing is not None:
            _say(f"cause: it needs the module {missing['name']!r}, which is not installed")
        _say(f"hint: `{command}` shows its whole output")
    if not ratios and not failed:
        _say("pausetoken bench: the benchmarks printed no ratio")
    return EXIT_REFUSED if failed else EXIT_OK


def _bench_dir(given: str | None) -> Path:
    if given is not None:
        directory = Path(given)
        if not directory.is_dir():
            msg = f"--dir {given} is not a directory"
            raise ConfigurationError(msg, code="cli_benchmarks_missing")
        return directory
    for root in _checkouts():
        if (root / "benchmarks").is_dir():
            return root / "benchmarks"
    msg = (
        "the benchmarks are scripts in a checkout of the pausetoken repository "
        "(benchmarks/), not part of the installed package, and no checkout was found: "
        "neither this installation nor the working directory is one"
    )
    raise ConfigurationError(msg, code="cli_benchmarks_missing")


def _checkouts() -> Iterator[Path]:
    """Checkouts of the repository: the one this code runs from, then the working directory."""
    here = Path(__file__).resolve()
    # sdk/src/pausetoken/_cli.py in a checkout (an editable install).
    candidates = [here.parents[3]] if len(here.parents) > 3 else []  # noqa: PLR2004
    candidates.append(Path.cwd())
    for root in candidates:
        if (root / "sdk" / "src" / "pausetoken").is_dir():
            yield root


def _bench_scripts(directory: Path, names: Sequence[str]) -> dict[str, Path]:
    found = {p.stem: p for p in sorted(directory.glob("*.py")) if not p.name.startswith("_")}
    if not found:
        msg = f"no benchmark scripts (*.py) in {directory}"
        raise ConfigurationError(msg, code="cli_benchmarks_missing")
    unknown = [name for name in names if name not in found]
    if unknown:
        msg = f"no benchmark named {', '.join(unknown)}; there are {', '.join(found)}"
        raise ConfigurationError(msg, code="cli_usage")
    return {name: found[name] for name in (names or found)}


def _run_benchmarks(scripts: Mapping[str, Path], *, quick: bool) -> list[_BenchRun]:
    from rich.markup import escape  # noqa: PLC0415 - rich is an optional extra
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    runs = []
    columns = (
        SpinnerColumn(),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    # The bar goes to standard error; the ratio table alone goes to standard output.
    with Progress(*columns, console=_console(stderr=True)) as progress:
        task = progress.add_task("", total=len(scripts))
        for name, path in scripts.items():

            def show(line: str, name: str = name) -> None:
                text = line.strip()[:_PROGRESS_LINE]
                progress.update(task, description=escape(f"{name}: {text}"))

            show("starting")
            runs.append(_run_benchmark(name, path, quick=quick, on_line=show))
            progress.advance(task)
        progress.update(task, description="done")
    return runs


def _run_benchmark(
    name: str, path: Path, *, quick: bool, on_line: Callable[[str], None]
) -> _BenchRun:
    import subprocess  # noqa: PLC0415 - only bench starts processes

    command = [sys.executable, str(path), *(["--quick"] if quick else [])]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    lines: list[str] = []
    with subprocess.Popen(  # noqa: S603 - our own interpreter on the repository's scripts
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=env,
        cwd=path.parent.parent,
    ) as process:
        try:
            assert process.stdout is not None  # noqa: S101 - stdout=PIPE
            for line in process.stdout:
                lines.append(line.rstrip("\n"))
                if line.strip():
                    on_line(line)
        except BaseException:
            process.kill()
            raise
        status = process.wait()
    return _BenchRun(name, status, tuple(lines))


def _ratios(run: _BenchRun) -> Iterator[_Ratio]:
    """The ratios a benchmark printed, in lines and in the ``ratio`` column of tables.

    A line is ``... ratio NAME: VALUE (target OP BOUND)``; a table has a header row of
    words with ``ratio`` among them, and rows of numbers.
    """
    section = ""
    columns: list[str] | None = None
    for line in run.lines:
        words = line.split()
        if line.startswith("== "):
            section = line[3:].split(":", 1)[0].strip() + ": "
            continue
        if "ratio" in words and not any(_number(word) is not None for word in words):
            columns = words
            continue
        if columns is not None and len(words) == len(columns) and _number(words[0]) is not None:
            at = columns.index("ratio")
            value = _number(words[at])
            if value is not None and at >= 2:  # noqa: PLR2004 - the two rates it divides
                label = f"{columns[at - 2]} / {columns[at - 1]} at {columns[0]} {words[0]}"
                yield _Ratio(run.name, section + label, value, None, None)
            continue
        columns = None
        match = _RATIO.match(line)
        if match is None:
            continue
        before = " vs ".join(p.strip() for p in _RATE.split(match["before"]) if p.strip())
        label = " ".join(f"{before} {match['after']}".split()) or "ratio"
        value = float(match["value"])
        target = _TARGET.search(match["rest"])
        bound = None if target is None else float(target["bound"])
        met = None
        if target is not None and bound is not None:
            met = value >= bound if target["op"].startswith(">") else value <= bound
        shown = None if target is None else f"{target['op']} {target['bound']}"
        yield _Ratio(run.name, section + label, value, shown, met)


def _number(word: str) -> float | None:
    try:
        return float(word.replace(",", ""))
    except ValueError:
        return None


def _render_ratios(ratios: list[_Ratio]) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    table = Table(title="pausetoken benchmarks: ratios")
    for column in ("benchmark", "ratio", "value", "target"):
        table.add_column(column, overflow="fold")
    table.columns[2].justify = "right"
    for ratio in ratios:
        style = {True: "green", False: "bold red", None: ""}[ratio.met]
        target = ratio.target or "-"
        if ratio.met is False:
            target += " (missed)"
        table.add_row(
            ratio.benchmark,
            Text(ratio.name),
            Text(f"{ratio.value:.2f}", style=style),
            Text(target, style=style),
        )
    _console().print(table)


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
        "status",
        "say where a token stands: active, in_progress, redeemed, revoked or expired",
        _token_arguments,
        _status,
    ),
    Command(
        "revoke",
        "revoke the pause a token answers, unless it was already answered",
        _token_arguments,
        _revoke,
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
    Command(
        "bench",
        "run the benchmarks of a checkout and print their ratios",
        _bench_arguments,
        _bench,
    ),
)


def _debug_parent() -> argparse.ArgumentParser:
    """``--debug``, accepted before or after any subcommand (a parent of every parser)."""
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug",
        action="store_true",
        # Suppressed default: a subcommand's parser never resets a --debug given before it.
        default=argparse.SUPPRESS,
        help="show tracebacks on errors",
    )
    return debug


class _Version(argparse.Action):
    """``--version``: the installed distributions, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show the versions of pausetoken and its backends, then exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        import importlib.metadata  # noqa: PLC0415
        import platform  # noqa: PLC0415

        def version(name: str) -> str | None:
            try:
                return importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                return None

        extras = [
            f"{name} {found}"
            for name in ("pausetoken-sqlalchemy", "pausetoken-langgraph")
            if (found := version(name)) is not None
        ]
        shown = f" ({', '.join(extras)})" if extras else ""
        line = f"pausetoken {version('pausetoken') or 'unknown'}{shown}"
        sys.stdout.write(f"{line}, Python {platform.python_version()}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``pausetoken`` with every registered subcommand.

    Returns:
        The parser; the chosen command's `Command` is in the ``command`` attribute.
    """
    parser = argparse.ArgumentParser(
        prog="pausetoken",
        description="Signed, single-use resume tokens for human-in-the-loop pauses.",
        parents=[_debug_parent()],
    )
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in COMMANDS:
        sub = subparsers.add_parser(
            command.name, help=command.help, description=command.help, parents=[_debug_parent()]
        )
        command.arguments(sub)
        sub.set_defaults(command=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pausetoken`` command line.

    Args:
        argv: The arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 success, 1 a token was refused or a check failed, 2 a usage or
        configuration error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    command: Command = args.command
    label: str = getattr(args, "label", command.name)
    try:
        return command.run(args)
    except PauseTokenError as exc:
        if debug:
            traceback.print_exc()
        _report(exc, label)
        return EXIT_USAGE if isinstance(exc, ConfigurationError) else EXIT_REFUSED
    except KeyboardInterrupt:
        _say(f"pausetoken {label}: interrupted")
        return 130
    except Exception as exc:
        if debug:
            raise
        # The message of an unexpected error may quote its input; show only its type.
        _say(f"pausetoken {label}: unexpected {type(exc).__name__}")
        _say("hint: run again with --debug to see the traceback")
        return EXIT_REFUSED
