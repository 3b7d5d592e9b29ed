"""Reporting an error to the person at the terminal: its code, its cause, what to do.

What to do comes from the error's class (``actions``, declared per code), so the command
line and the Errors page say the same. Two kinds of code get a hint of the command line's
own instead: refusals whose declared action tells a *service* how to answer a request
("Answer 401 ..."), which the person holding the token cannot use, and codes where the
command line has an option or an install line to name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pausetoken._cli.output import say
from pausetoken._install import install_hint
from pausetoken._settings import ENV_PREFIX

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pausetoken.exceptions import PauseTokenError

__all__ = ["cause", "hint", "report"]

_SHAPE: Final = "this is not a whole pausetoken token; check that it was copied completely"
#: Hints of the command line's own, by code (every other code: its class's action).
TERMINAL_HINTS: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        ("token_malformed", "token_too_large", "token_header_invalid", "token_payload_invalid"),
        _SHAPE,
    ),
    "token_signature_invalid": "the token was not issued with these keys, or it was altered",
    "token_algorithm_not_allowed": "the token's algorithm is not one of this key set's (sealed "
    "tokens need a dir key)",
    "token_header_forbidden": "pausetoken never mints such a header: the token was not "
    "minted by pausetoken",
    "token_type_invalid": "typ is not pause+jwt: this is not a pausetoken token",
    "token_claims_invalid": "the claims are not pausetoken's: was it minted by pausetoken?",
    "token_issuer_invalid": f"set {ENV_PREFIX}ISSUER (inspect: --issuer) to the minting "
    "service's issuer",
    "token_audience_invalid": f"set {ENV_PREFIX}AUDIENCE (inspect: --audience) to the minting "
    "service's audience",
    "token_expired": "the token can no longer be used; mint a new one",
    "token_revoked": "the pause was revoked; mint a token for a new pause",
    "scope_mismatch": "pass the --scope the token was minted for",
    "store_unavailable": "check that the database server is running and reachable from here "
    "(host and port in the URL)",
    "cli_rich_missing": install_hint("pausetoken[cli]"),
}
#: Codes whose errors were raised ``from`` a driver's: the cause is shown too.
_CAUSED: Final = frozenset(
    {"store_misconfigured", "store_unavailable", "store_table_missing", "demo_checkpointer_failed"}
)


def hint(error: PauseTokenError, command: str) -> str:
    """What to do about ``error``, raised by ``pausetoken command``.

    An error that carries a ``hint`` of its own (a pasted token says what to remove) keeps
    it; ``COMMAND`` in a declared action becomes the command that ran.
    """
    own = getattr(error, "hint", None)
    if isinstance(own, str):
        return own
    text = TERMINAL_HINTS.get(error.code) or error.actions.get(error.code, error.action)
    return text.replace("pausetoken COMMAND", f"pausetoken {command}")


def cause(error: PauseTokenError) -> str | None:
    """The driver's reason behind a store or checkpointer error, when it adds something."""
    if error.code not in _CAUSED or error.__cause__ is None:
        return None
    from pausetoken._cli.store_check import failure_cause  # noqa: PLC0415 - on errors only

    found = failure_cause(error)
    return None if found in error.detail else found


def report(error: PauseTokenError, command: str) -> None:
    """Say ``error`` on standard error: its code and detail, its cause, what to do."""
    say(f"pausetoken {command}: error [{error.code}] {error.detail}")
    found = cause(error)
    if found:
        say(f"cause: {found}")
    say(f"hint: {hint(error, command)}")
