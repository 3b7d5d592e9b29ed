"""``PauseTokenStateCodec``: MCP's ``requestState`` sealed on a pausetoken key ring."""

from __future__ import annotations

import base64
import binascii
import logging
import time
from typing import TYPE_CHECKING, Final

from mcp.server.request_state import InvalidRequestState

from pausetoken import JoseSigner, SealedSigner
from pausetoken.exceptions import ConfigurationError, PauseTokenError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pausetoken import KeyRing, Signer

__all__ = ["DEFAULT_MAX_STATE_BYTES", "PauseTokenStateCodec"]

logger = logging.getLogger("pausetoken.mcp")

#: The longest ``requestState`` the codec parses (a sealed envelope with two pause tokens
#: inside is about 4 KiB); anything longer is refused before it is parsed.
DEFAULT_MAX_STATE_BYTES: Final = 16_384
# The one claim of a sealed state: the envelope MCP's boundary built, base64url. The name
# keeps a request state apart from a pause token sealed with the same ring (neither one's
# claims are the other's).
_CLAIM: Final = "mcp_request_state"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(raw) != text:  # only the canonical spelling
        msg = "non-canonical base64url"
        raise ValueError(msg)
    return raw


class PauseTokenStateCodec:
    """A ``RequestStateCodec`` (mcp >= 2.3) over a pausetoken ``KeyRing``.

    MCP's ``RequestStateBoundary`` builds the envelope (expiry, the tool name and argument
    digest of the round, the audience, the principal) and this codec protects it: sealed as
    a JWE (``dir`` + ``A256GCM``, pausetoken's `SealedSigner`) by default, so the client
    cannot read the state, or signed only (``JoseSigner``, HS256 or an asymmetric key) when
    the ring holds signing keys and ``signed_only=True``. Every worker loading the same ring
    reads every other worker's state, and rotation follows the ring: the active key seals,
    the older keys still unseal until their retirement.

    Unsealing checks the length before parsing anything, then pausetoken's strict token
    checks (shape, header, ``kid``, tag or signature, JSON). Every failure is
    ``InvalidRequestState`` with a short reason (``too_large``, ``malformed``, or the
    pausetoken error code), never another exception type and never the state itself.

    Args:
        keys: The ring: ``dir`` keys (``KeyRing.generate("dir")``) for sealing; signing keys
            with ``signed_only=True``.
        signed_only: Sign instead of seal: the client can then read the state.
        max_bytes: The longest state accepted (and produced).

    Raises:
        ConfigurationError: the ring does not fit the mode (``alg_not_allowed``), or
            ``max_bytes`` is not a positive number.

    Examples:
        >>> from pausetoken import KeyRing
        >>> codec = PauseTokenStateCodec(KeyRing.generate("dir"))
        >>> codec.unseal(codec.seal(b'{"v":1}'))
        b'{"v":1}'
    """

    __slots__ = ("_clock", "_signer", "max_bytes", "signed_only")

    def __init__(
        self,
        keys: KeyRing,
        *,
        signed_only: bool = False,
        max_bytes: int = DEFAULT_MAX_STATE_BYTES,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """Create the codec; see the class docstring for the arguments."""
        if max_bytes < 1:
            msg = "max_bytes must be a positive number of bytes"
            raise ConfigurationError(msg)
        self.signed_only = signed_only
        self.max_bytes = max_bytes
        self._signer: Signer = (
            JoseSigner(keys, max_token_bytes=max_bytes)
            if signed_only
            else SealedSigner(keys, max_token_bytes=max_bytes)
        )
        self._clock: Callable[[], float] = clock or time.time

    def seal(self, payload: bytes) -> str:
        """Protect ``payload`` (the boundary's envelope) under the ring's active key.

        Raises:
            InvalidRequestState: the sealed state would be longer than ``max_bytes``.
        """
        try:
            return self._signer.sign({_CLAIM: _b64(payload)})
        except PauseTokenError as exc:
            raise InvalidRequestState(exc.code) from None

    def unseal(self, token: str) -> bytes:
        """Check and open a state this codec (or a worker on the same ring) sealed.

        Raises:
            InvalidRequestState: the state is too long, malformed, unauthentic, sealed with
                an unknown or retired key, or not a request state.
        """
        if not isinstance(token, str) or len(token) > self.max_bytes:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestState("too_large" if isinstance(token, str) else "malformed")
        try:
            claims = self._signer.verify(token, now=self._clock())
        except PauseTokenError as exc:
            logger.debug("request state refused: %s", exc.code)
            raise InvalidRequestState(exc.code) from None
        except Exception:  # noqa: BLE001 - a codec raises nothing but InvalidRequestState
            raise InvalidRequestState("malformed") from None
        value = claims.get(_CLAIM)
        if not isinstance(value, str) or len(claims) != 1:
            raise InvalidRequestState("not_a_request_state")
        try:
            return _unb64(value)
        except (ValueError, binascii.Error):
            raise InvalidRequestState("malformed") from None

    def __repr__(self) -> str:
        mode = "signed" if self.signed_only else "sealed"
        return f"PauseTokenStateCodec({mode}, max_bytes={self.max_bytes})"
