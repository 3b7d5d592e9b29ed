"""The signer protocol: turns a claim set into a token and back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["SIGNERS_API_VERSION", "Signer"]

#: The signer protocol version a plugin declares it implements (``api_version``).
SIGNERS_API_VERSION = 1


@runtime_checkable
class Signer(Protocol):
    """Signs claim sets and verifies tokens cryptographically.

    ``verify`` does every check up to and including the signature and the payload's JSON
    shape, in the Security page's verification order (shape, header, ``alg`` allow-list,
    header whitelist, ``typ``, ``kid``, retirement, signature, payload JSON). Claim checks
    (required claims, time, issuer, audience, ``jti`` format) are done by pausetoken itself
    after ``verify``, the same way for every signer.

    A signer published under the ``pausetoken.signers`` entry-point group is a class (or
    factory) with ``api_version = 1`` and ``from_keys(keys, *, max_token_bytes, **options)``;
    [`from_settings()`][pausetoken.PauseTokens.from_settings] passes the configured token size
    limit and
    the ``signer_options`` setting.
    """

    def sign(self, claims: Mapping[str, Any]) -> str:
        """Return a compact token carrying ``claims``."""
        ...

    def verify(self, token: str, *, now: float) -> dict[str, Any]:
        """Return the token's claim set, or raise ``InvalidToken``.

        The error is [`InvalidToken`][pausetoken.exceptions.InvalidToken] with the code of
        the check that failed.

        Args:
            token: The compact token.
            now: Current time in seconds since the epoch (for key retirement).
        """
        ...
