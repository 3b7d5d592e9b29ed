"""The ``TOKEN`` and ``--scope`` arguments: read as given, refused with a reason when pasted badly.

Messages say what is wrong with the argument without repeating it: a token is a secret,
and a scope may name a customer.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Final

from pausetoken.exceptions import CommandLineError, InvalidToken

if TYPE_CHECKING:
    import argparse

    from pausetoken._claims import Scope

__all__ = ["parse_scope", "read_token", "scope_argument", "token_argument"]

_BEARER = re.compile(r"^\s*bearer\s", re.IGNORECASE)
_QUOTES: Final = "\"'`‘’“”"  # noqa: RUF001 - typographic quotes are what editors paste
_SCOPE_FORMS: Final = (
    "--scope is TENANT, TENANT/SUB_TENANT or TENANT/SUB_TENANT/NAMESPACE (TENANT//NAMESPACE "
    'without a sub-tenant), or a JSON object such as {"tenant_id": "acme", "namespace": "x"}'
)
_SCOPE_FIELDS: Final = ("tenant_id", "sub_tenant_id", "namespace")


class _PastedToken(InvalidToken):
    """A token given with something that is not part of it (a prefix, quotes, a break)."""

    def __init__(self, detail: str, hint: str) -> None:
        super().__init__(detail, code=InvalidToken.TOKEN_MALFORMED)
        self.hint = hint


def token_argument(parser: argparse.ArgumentParser) -> None:
    """Declare the ``TOKEN`` argument."""
    parser.add_argument("token", metavar="TOKEN", help="the token, or - to read standard input")


def scope_argument(parser: argparse.ArgumentParser) -> None:
    """Declare the required ``--scope`` option."""
    parser.add_argument(
        "--scope",
        required=True,
        metavar="SCOPE",
        help="the scope the token was minted for: TENANT[/SUB_TENANT[/NAMESPACE]] "
        "(TENANT//NAMESPACE without a sub-tenant) or a JSON object with tenant_id, "
        "sub_tenant_id and namespace",
    )


def read_token(argument: str) -> str:
    """The token in ``argument`` (``-``: standard input), refusing what was pasted with it.

    Standard input may end with one line break (``echo "$TOKEN" |`` adds it). Anything
    else around or inside the token is refused with a message that says what it is,
    without showing the token.

    Raises:
        ConfigurationError: ``cli_usage`` when no token is given.
        InvalidToken: ``token_malformed`` for a token pasted with something around or in it.
    """
    if argument == "-":
        from pausetoken._policy import MAX_TOKEN_BYTES  # noqa: PLC0415

        # The longest token any setting accepts, its line break, and one character more: a
        # longer input stays too long, and is refused as such.
        raw = sys.stdin.read(MAX_TOKEN_BYTES + len("\r\n") + 1)
        raw = raw.removesuffix("\n").removesuffix("\r")
    else:
        raw = argument
    if not raw.strip():
        raise CommandLineError("no token given", code=CommandLineError.CLI_USAGE)
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


def parse_scope(text: str) -> Scope:
    """Read ``--scope``; the message never repeats the value (it may name a customer).

    Raises:
        ConfigurationError: ``cli_usage`` for a scope in none of the forms.
    """
    from pausetoken._claims import Scope  # noqa: PLC0415 - loaded when a command runs

    text = text.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            msg = f"--scope is not valid JSON; {_SCOPE_FORMS}"
            raise CommandLineError(msg, code=CommandLineError.CLI_USAGE) from exc
        if (
            not isinstance(data, dict)
            or not set(data) <= set(_SCOPE_FIELDS)
            or not isinstance(data.get("tenant_id"), str)
            or not all(isinstance(data.get(f), str | None) for f in _SCOPE_FIELDS[1:])
        ):
            msg = "--scope as JSON takes tenant_id and, optionally, sub_tenant_id and namespace"
            raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
        parts: list[str | None] = [data.get(field) for field in _SCOPE_FIELDS]
    else:
        pieces = text.split("/")
        if len(pieces) > len(_SCOPE_FIELDS):
            raise CommandLineError(_SCOPE_FORMS, code=CommandLineError.CLI_USAGE)
        parts = [piece or None for piece in pieces]
        parts += [None] * (len(_SCOPE_FIELDS) - len(parts))
    tenant, sub_tenant, namespace = parts
    if not tenant or not tenant.strip():
        msg = f"--scope needs a tenant; {_SCOPE_FORMS}"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    return Scope(tenant, sub_tenant_id=sub_tenant, namespace=namespace)
