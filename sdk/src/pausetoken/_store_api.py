"""The consumption store protocol: each pause answered exactly once, in two phases.

A store keeps one row per **pause key** ([`pause_key`][pausetoken.Claims.pause_key]): the pause in
its runtime (thread, checkpoint, interrupt, and the issuer/audience namespace that keeps
applications sharing one table apart). The key never includes the scope, so every token
minted for one pause, under any scope, meets the same row and only one answer wins.

Every method is atomic per pause key: among any number of concurrent callers for one key,
exactly one gets `ClaimOutcome.CLAIMED`.

Times are passed in by the caller rather than read by the store, so that every worker uses
the clock the service verified the token with (less its clock-skew allowance, see
`ClaimRequest.now`), and tests can inject one. Stores keep times with microsecond
precision: what is written is what `TokenStore.status()` returns.

The full rules, state by state, are in the "Writing a plugin" page of the documentation;
the conformance kit in [`pausetoken.testing`][pausetoken.testing] checks every one of them.
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
    "PauseRecord",
    "PauseState",
    "SupportsConsume",
    "TokenStore",
]

#: The store protocol version a plugin declares it implements (``api_version``).
#: Version 2 added ``renew`` and ``check``, pause keys, expiry that is only ever raised,
#: idempotent commits and the live-claim rule of ``revoke``.
STORE_API_VERSION = 2


class ClaimOutcome(enum.Enum):
    """What `TokenStore.claim()` found."""

    #: The caller holds the lease now and may resume the run.
    CLAIMED = "claimed"
    #: Another caller holds a live lease.
    IN_PROGRESS = "in_progress"
    #: Already committed with the same response hash: an idempotent retry.
    REDEEMED_SAME = "redeemed_same"
    #: Already committed with another response: a conflict.
    REDEEMED_OTHER = "redeemed_other"
    #: The pause was revoked.
    REVOKED = "revoked"


class PauseState(enum.Enum):
    """The state of a stored pause row."""

    #: A lease is (or was, if ``lease_until`` passed) held on the pause.
    CLAIMED = "claimed"
    #: The redemption was committed.
    REDEEMED = "redeemed"
    #: The pause was revoked.
    REVOKED = "revoked"


@attrs.frozen
class ClaimRequest:
    """One attempt to claim a pause.

    Attributes:
        pause_key: The row key ([`pause_key`][pausetoken.Claims.pause_key]; case-sensitive,
            1 to 64 characters of the ``jti`` alphabet).
        scope_hash: The presenting token's scope hash, stored for audits.
        name: The interrupt name, stored for audits.
        response_hash: sha256 hex of the canonical response; decides same-answer retries.
        expires_at: The row may be forgotten after this. A store keeps the later of this and
            the expiry it already has: expiry is only ever raised.
        lease_id: A random id naming this attempt; only it may renew, commit or release.
        lease_until: When the lease lapses unless renewed, committed or released.
        now: The caller's clock less its clock-skew allowance (aware UTC). A lease with
            ``lease_until <= now`` has ended and may be taken over.
    """

    pause_key: str
    scope_hash: str
    name: str
    response_hash: str
    expires_at: datetime
    lease_id: str
    lease_until: datetime
    now: datetime


@attrs.frozen
class ClaimResult:
    """The answer to `TokenStore.claim()`.

    Attributes:
        outcome: What the store found.
        lease_until: For ``IN_PROGRESS``, when the holder's lease lapses.
    """

    outcome: ClaimOutcome
    lease_until: datetime | None = None


@attrs.frozen
class PauseRecord:
    """What a store knows of one pause (see `TokenStore.status()`).

    Which fields each state holds:

    * ``CLAIMED``: the holder's ``scope_hash``, ``name``, ``response_hash``, ``lease_id``
      and ``lease_until`` (a takeover overwrites all five; a renewal raises
      ``lease_until``).
    * ``REDEEMED``: as they were when the holder committed (``lease_id`` names the lease
      that committed).
    * ``REVOKED``: ``scope_hash`` and ``name`` of the row (or of the revoking call if there
      was no row); ``response_hash``, ``lease_id`` and ``lease_until`` are ``None``.

    ``expires_at`` in every state is the latest expiry any call gave.
    """

    pause_key: str
    state: PauseState
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
    [`pausetoken.testing`][pausetoken.testing] checks them):

    * ``claim``: no row, or a ``CLAIMED`` row whose lease ended (``lease_until <= now``):
      write ``CLAIMED`` with the request's scope hash, name, response hash and lease, answer
      ``CLAIMED``. A live lease: ``IN_PROGRESS`` with its ``lease_until``. ``REDEEMED``:
      ``REDEEMED_SAME`` or ``REDEEMED_OTHER`` by response hash. ``REVOKED``: ``REVOKED``.
      In every case the row's expiry becomes the later of its own and the request's.
    * ``renew``: only the current lease holder of a ``CLAIMED`` row moves its
      ``lease_until`` (to the later of the two). Returns whether it holds the lease. A
      holder whose lease ended may renew until someone takes over; a renewal never changes
      ``expires_at``.
    * ``commit``: only the current lease holder turns ``CLAIMED`` into ``REDEEMED``, even if
      its lease ran out while nobody took over; raises the expiry. A commit by the lease
      that already committed returns ``True`` again (so a retried commit whose first
      attempt landed is confirmed), and raises the expiry again when its own is later.
      Returns whether the row is redeemed by this lease.
    * ``release``: only the current lease holder of a ``CLAIMED`` row removes it, so the
      pause can be redeemed again. Returns whether it did.
    * ``revoke``: an absent row, or a ``CLAIMED`` one whose lease ended
      (``lease_until <= now``), becomes ``REVOKED``. A live claim is left as it is (its body
      may already have acted): the answer says ``CLAIMED``. ``REDEEMED`` and ``REVOKED`` rows
      stay as they are. The expiry is raised in every case. Returns the resulting record.
    * ``purge``: deletes rows whose ``expires_at`` is before ``before``; returns how many.
    * ``check``: at start-up, whether the store can serve (connects, prepares its schema).
      Returns ``None``; may run again; raises ``StoreUnavailable`` on a closed store. It may
      leave schema records, never a row ``status`` or ``purge`` would meet.
    * Times are aware datetimes from the Unix epoch to 2**53 microseconds after it (2255),
      kept and compared to the microsecond.
    * An unreachable engine raises [`StoreUnavailable`][pausetoken.exceptions.StoreUnavailable];
      permanent misconfiguration found by ``check`` raises
      [`ConfigurationError`][pausetoken.exceptions.ConfigurationError].
    """

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Try to take the lease on ``request.pause_key``."""
        ...

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        """Extend the lease ``lease_id`` holds to ``lease_until``; whether it still holds it."""
        ...

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        """Mark the pause redeemed if ``lease_id`` holds it (or already committed it)."""
        ...

    async def release(self, pause_key: str, lease_id: str) -> bool:
        """Drop the claim if ``lease_id`` holds it, making the pause redeemable again."""
        ...

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        """Revoke the pause unless it was redeemed or a live lease holds it."""
        ...

    async def status(self, pause_key: str) -> PauseRecord | None:
        """What the store knows of ``pause_key``, or ``None`` if nothing."""
        ...

    async def purge(self, before: datetime) -> int:
        """Delete rows that expired before ``before``; return how many were deleted."""
        ...

    async def check(self) -> None:
        """Confirm, once at start-up, that the store can serve.

        It must reach the engine (a closed store raises ``StoreUnavailable``) and may leave
        what the schema needs, never a pause row.

        Raises:
            ConfigurationError: a permanent problem (credentials, a missing database, a
                read-only user, a table that its schema record says existed but is gone).
            StoreUnavailable: a transient one (the engine cannot be reached now).
        """
        ...

    async def aclose(self) -> None:
        """Release what the store opened (never what it was handed)."""
        ...


@runtime_checkable
class SupportsConsume(Protocol):
    """An optional store capability: claim and commit in one atomic operation.

    [`PauseTokens.consume()`][pausetoken.PauseTokens.consume] runs no body between its claim
    and its commit, so a store that offers ``consume`` lets it redeem in one round trip; a
    store without it is claimed and committed in two, with the same outcomes.

    ``consume(request)`` is atomic per pause key together with every other method (among
    concurrent ``claim`` and ``consume`` calls on one key, exactly one gets
    ``ClaimOutcome.CLAIMED``) and does exactly what ``claim(request)`` followed at once by
    ``commit(request.pause_key, request.lease_id, request.expires_at)`` would:

    * no row, or a ``CLAIMED`` row whose lease ended (``lease_until <= now``): write
      ``REDEEMED`` with the request's ``scope_hash``, ``name``, ``response_hash``,
      ``lease_id`` and ``lease_until``, answer ``CLAIMED`` (the caller redeemed the pause);
    * a ``REDEEMED`` row whose ``lease_id`` is the request's: answer ``CLAIMED`` again (a
      retried consume whose first attempt landed is confirmed, as a retried commit is);
    * a live lease: ``IN_PROGRESS`` with its ``lease_until``; another ``REDEEMED`` row:
      ``REDEEMED_SAME`` or ``REDEEMED_OTHER`` by response hash; ``REVOKED``: ``REVOKED``;
      these leave every field but the expiry as it was;
    * in every case the row's expiry becomes the later of its own and the request's.

    The conformance kit checks all of it, and races ``consume`` against ``claim``, when the
    store has the method.
    """

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        """Claim and commit ``request.pause_key`` at once; see the class docs."""
        ...
