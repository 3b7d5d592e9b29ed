"""The consumption store protocol: exactly-once redemption in two phases.

A store remembers, per token id (``jti``), whether the token is being redeemed (a live
lease), was redeemed (and with which response hash) or was revoked. Every method is atomic
per ``jti``: among any number of concurrent callers for one ``jti``, exactly one gets
:attr:`ClaimOutcome.CLAIMED`.

Times are passed in by the caller (``now``) rather than read by the store, so that every
worker uses the same clock the service verified the token with, and tests can inject one.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "STORE_API_VERSION",
    "ClaimOutcome",
    "ClaimRequest",
    "ClaimResult",
    "TokenRecord",
    "TokenState",
    "TokenStore",
]

#: The store protocol version a plugin declares it implements (``api_version``).
STORE_API_VERSION = 1


class ClaimOutcome(enum.Enum):
    """What :meth:`TokenStore.claim` found."""

    #: The caller holds the lease now and may resume the run.
    CLAIMED = "claimed"
    #: Another caller holds a live lease.
    IN_PROGRESS = "in_progress"
    #: Already committed with the same response hash: an idempotent retry.
    REDEEMED_SAME = "redeemed_same"
    #: Already committed with another response: a conflict.
    REDEEMED_OTHER = "redeemed_other"
    #: The token was revoked.
    REVOKED = "revoked"


class TokenState(enum.Enum):
    """The state of a stored token row."""

    #: A lease is (or was, if ``lease_until`` passed) held on the token.
    CLAIMED = "claimed"
    #: The redemption was committed.
    REDEEMED = "redeemed"
    #: The token was revoked.
    REVOKED = "revoked"


@attrs.frozen
class ClaimRequest:
    """One attempt to claim a token.

    Attributes:
        jti: The row key (case-sensitive, of the ``jti`` form). The service passes the
            pause key (:attr:`~pausetoken.Claims.pause_key`), so every token minted for one
            pause shares one row and the pause is answered once.
        scope_hash: The token's scope hash, stored for revocation and audits.
        name: The interrupt name, stored for audits.
        response_hash: sha256 hex of the canonical response; decides same-answer retries.
        expires_at: When the row may be forgotten (the token's ``exp`` plus leeway).
        lease_id: A random id naming this attempt; only it may commit or release.
        lease_until: When the lease lapses if neither committed nor released.
        now: The caller's current time (aware UTC).
    """

    jti: str
    scope_hash: str
    name: str
    response_hash: str
    expires_at: datetime
    lease_id: str
    lease_until: datetime
    now: datetime


@attrs.frozen
class ClaimResult:
    """The answer to :meth:`TokenStore.claim`.

    Attributes:
        outcome: What the store found.
        lease_until: For ``IN_PROGRESS``, when the other caller's lease lapses.
    """

    outcome: ClaimOutcome
    lease_until: datetime | None = None


@attrs.frozen
class TokenRecord:
    """What a store knows of one token (see :meth:`TokenStore.status`)."""

    jti: str
    state: TokenState
    scope_hash: str
    name: str
    expires_at: datetime
    response_hash: str | None = None
    lease_id: str | None = None
    lease_until: datetime | None = None


@runtime_checkable
class TokenStore(Protocol):
    """Where single use is enforced. Implementations must be safe across processes.

    Semantics every implementation follows (the conformance kit in
    :mod:`pausetoken.testing` checks them):

    * ``claim``: no row, or a ``CLAIMED`` row whose lease ended (``lease_until <= now``):
      write ``CLAIMED`` with the request's lease and response hash, answer ``CLAIMED``.
      A live lease: ``IN_PROGRESS`` with its ``lease_until``. ``REDEEMED``: ``REDEEMED_SAME``
      or ``REDEEMED_OTHER`` by response hash. ``REVOKED``: ``REVOKED``.
    * ``commit``: only the current lease holder turns ``CLAIMED`` into ``REDEEMED``, even if
      its lease ran out while nobody took over. Returns whether it did.
    * ``release``: only the current lease holder removes its claim, so the token can be
      redeemed again. Returns whether it did.
    * ``revoke``: an absent or ``CLAIMED`` token becomes ``REVOKED``; a ``REDEEMED`` one
      stays redeemed. Returns the resulting record.
    * ``purge``: deletes rows whose ``expires_at`` is before ``before``; returns how many.
    * An unreachable engine raises :class:`~pausetoken.exceptions.StoreUnavailable`.
    """

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Try to take the lease on ``request.jti``."""
        ...

    async def commit(self, jti: str, lease_id: str) -> bool:
        """Mark the token redeemed if ``lease_id`` holds it."""
        ...

    async def release(self, jti: str, lease_id: str) -> bool:
        """Drop the claim if ``lease_id`` holds it, making the token redeemable again."""
        ...

    async def revoke(
        self, jti: str, scope_hash: str, name: str, expires_at: datetime
    ) -> TokenRecord:
        """Revoke the token unless it was already redeemed."""
        ...

    async def status(self, jti: str) -> TokenRecord | None:
        """What the store knows of ``jti``, or ``None`` if nothing."""
        ...

    async def purge(self, before: datetime) -> int:
        """Delete rows that expired before ``before``; return how many were deleted."""
        ...

    async def aclose(self) -> None:
        """Release what the store opened (never what it was handed)."""
        ...
