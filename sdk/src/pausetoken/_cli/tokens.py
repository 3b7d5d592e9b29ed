"""``pausetoken inspect``, ``status`` and ``revoke``: the commands given a token.

``inspect`` reads the token (and, with ``--verify``, the service's settings); ``status``
and ``revoke`` ask the service's store, as the service would, with the settings in the
``PAUSETOKEN_*`` variables.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from pausetoken._cli.command import EXIT_OK, EXIT_REFUSED, FunctionCommand
from pausetoken._cli.output import cell, console, json_argument, print_json, require_rich, say
from pausetoken._cli.store import check_store_url, url_family
from pausetoken._cli.token_input import parse_scope, read_token, scope_argument, token_argument
from pausetoken.exceptions import CommandLineError, ConfigurationError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from rich.console import Console

    from pausetoken._service import PauseTokens
    from pausetoken._settings import Settings

__all__ = ["INSPECT", "REVOKE", "STATUS"]

#: What each status means, for people (standard error).
_MEANINGS: Final = {
    "active": "not answered yet: it can still be redeemed",
    "in_progress": "a redeemer holds a live claim on its pause right now",
    "redeemed": "answered: it can never be used again",
    "revoked": "revoked: it can never be redeemed",
    "expired": "expired: it can no longer be redeemed",
}


# -- inspect --------------------------------------------------------------------------------


def _inspect_arguments(parser: argparse.ArgumentParser) -> None:
    from pausetoken._policy import DEFAULT_AUDIENCE, DEFAULT_ISSUER  # noqa: PLC0415
    from pausetoken._settings import ENV_PREFIX  # noqa: PLC0415

    token_argument(parser)
    parser.add_argument(
        "--verify", action="store_true", help="check signature and claims with the key set"
    )
    parser.add_argument(
        "--keys",
        metavar="FILE",
        help=f"JWKS file to verify with (default: {ENV_PREFIX}KEYS_FILE or {ENV_PREFIX}KEYS)",
    )
    parser.add_argument(
        "--signer",
        metavar="NAME",
        help="signer plugin to verify with (default: 'sealed' for sealed tokens, else 'jose')",
    )
    parser.add_argument(
        "--issuer",
        help=f"required iss (default: {ENV_PREFIX}ISSUER or {DEFAULT_ISSUER!r})",
    )
    parser.add_argument(
        "--audience",
        help=f"required aud (default: {ENV_PREFIX}AUDIENCE or {DEFAULT_AUDIENCE!r})",
    )
    json_argument(parser)


def _verifying(args: argparse.Namespace) -> Settings:
    """The service's settings, with the key file, issuer and audience the options give."""
    from pausetoken._settings import verifier_settings  # noqa: PLC0415

    settings = verifier_settings(keys_file=args.keys)
    given = {"issuer": args.issuer, "audience": args.audience}
    try:
        return attrs.evolve(settings, **{name: value for name, value in given.items() if value})
    except ConfigurationError as exc:
        msg = f"--issuer or --audience: {exc.detail}"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE) from exc


def _inspect(args: argparse.Namespace) -> int:
    from pausetoken._policy import DEFAULT_MAX_TOKEN_BYTES  # noqa: PLC0415 - loaded on use
    from pausetoken._registry import load_signer  # noqa: PLC0415
    from pausetoken._verify import decode_unverified, verify_token  # noqa: PLC0415

    if not args.json:
        require_rich("inspect", json_ok=True)
    token = read_token(args.token)
    settings = _verifying(args) if args.verify else None
    limit = DEFAULT_MAX_TOKEN_BYTES if settings is None else settings.max_token_bytes
    header, claims = decode_unverified(token, max_token_bytes=limit)
    if settings is not None:
        name = args.signer or ("sealed" if "enc" in header else "jose")
        signer = load_signer(name).from_keys(settings.keys)
        verified = verify_token(token, signer=signer, policy=settings.policy, now=time.time())
        claims = verified.to_dict()
    if args.json:
        print_json({"verified": settings is not None, "header": dict(header), "claims": claims})
    else:
        status = "VERIFIED" if settings is not None else "UNVERIFIED"
        _render_token(console(), header, claims, status)
    return EXIT_OK


def _render_token(
    out: Console, header: Mapping[str, Any], claims: Mapping[str, Any] | None, status: str
) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    style = "bold green" if status == "VERIFIED" else "bold yellow"
    out.print(Text(status, style=style))
    if status != "VERIFIED":
        out.print(Text("Nothing below is trusted: the signature and claims were not checked."))
    table = Table(title="header", show_header=True)
    table.add_column("field", overflow="fold")
    table.add_column("value", overflow="fold")
    for name, value in header.items():
        table.add_row(Text(cell(name)), Text(cell(value)))
    out.print(table)
    if claims is None:
        out.print(Text("claims: sealed (encrypted); use --verify with the key set"))
        return
    table = Table(title="claims", show_header=True)
    table.add_column("claim", overflow="fold")
    table.add_column("value", overflow="fold")
    for name, value in claims.items():
        shown = cell(value)
        if name in {"iat", "exp", "nbf"} and isinstance(value, int) and not isinstance(value, bool):
            try:
                shown += f"  ({datetime.fromtimestamp(value, tz=UTC).isoformat()})"
            except (OverflowError, OSError, ValueError):
                shown += "  (out of range)"
        table.add_row(Text(cell(name)), Text(shown))
    out.print(table)


# -- status and revoke ----------------------------------------------------------------------


def _token_arguments(parser: argparse.ArgumentParser) -> None:
    from pausetoken._settings import ENV_PREFIX  # noqa: PLC0415 - loaded when the command runs

    parser.epilog = (
        f"The service's settings are read from the {ENV_PREFIX}* variables "
        f"({ENV_PREFIX}STORE_URL and {ENV_PREFIX}KEYS_FILE at least)."
    )
    token_argument(parser)
    scope_argument(parser)
    json_argument(parser)


def _service_from_env(command: str) -> PauseTokens:
    from pausetoken._memory_checkpoints import MemoryCheckpoints  # noqa: PLC0415
    from pausetoken._service import PauseTokens  # noqa: PLC0415
    from pausetoken._settings import ENV_PREFIX, Settings  # noqa: PLC0415

    settings = Settings.from_env()
    variable = f"{ENV_PREFIX}STORE_URL"
    check_store_url(settings.store_url, where=variable)
    if url_family(settings.store_url) == "memory":
        msg = (
            f"{variable} is memory://, whose rows live in one process: `pausetoken {command}` "
            "would see none of the service's; give it the service's store URL"
        )
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    # Status and revoke never read a checkpoint: no reader is loaded from the settings.
    return PauseTokens.from_settings(settings, checkpoints=MemoryCheckpoints())


def _ask_store(command: Literal["status", "revoke"], args: argparse.Namespace) -> str:
    """Call the service's method ``command`` for the token of ``args``; the token's status."""
    import asyncio  # noqa: PLC0415 - only store commands run an event loop

    token = read_token(args.token)
    scope = parse_scope(args.scope)

    async def run() -> str:
        async with _service_from_env(command) as tokens:
            status: str = (await getattr(tokens, command)(token, scope=scope)).value
            return status

    return asyncio.run(run())


def _status(args: argparse.Namespace) -> int:
    status = _ask_store("status", args)
    if args.json:
        print_json({"status": status})
    else:
        print(status)  # noqa: T201 - the status is the command's output
        say(f"pausetoken status: the token is {_MEANINGS[status]}")
    return EXIT_OK


def _revoke(args: argparse.Namespace) -> int:
    status = _ask_store("revoke", args)
    if args.json:
        print_json({"status": status, "revoked": status == "revoked"})
    else:
        print(status)  # noqa: T201 - the status is the command's output
    if status == "revoked":
        say("pausetoken revoke: the pause is revoked; no token minted for it can be redeemed")
        return EXIT_OK
    if status == "redeemed":
        say("pausetoken revoke: too late, the pause was already answered; nothing was revoked")
    else:
        say(
            "pausetoken revoke: a redeemer holds a live claim on the pause, so it was not "
            "revoked; run revoke again once that redemption has ended"
        )
    return EXIT_REFUSED


INSPECT: Final = FunctionCommand(
    "show a token's header and claims, optionally verified", _inspect_arguments, _inspect
)
STATUS: Final = FunctionCommand(
    "say where a token stands: active, in_progress, redeemed, revoked or expired",
    _token_arguments,
    _status,
)
REVOKE: Final = FunctionCommand(
    "revoke the pause a token answers, unless it was already answered", _token_arguments, _revoke
)
