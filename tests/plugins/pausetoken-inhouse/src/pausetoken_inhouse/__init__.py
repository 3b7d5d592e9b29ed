"""A demo store plugin: pauses kept in a dictionary of the process, chosen by ``inhouse://``."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any, ClassVar

from pausetoken.exceptions import ConfigurationError, StoreUnavailable
from pausetoken.plugins import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
)

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["InHouseStore"]


def _lapsed(row: PauseRecord, now: datetime) -> bool:
    """A claim whose lease ended: it may be taken over or revoked."""
    return (
        row.state is PauseState.CLAIMED and row.lease_until is not None and row.lease_until <= now
    )


def _held_by(row: PauseRecord | None, lease_id: str, state: PauseState) -> bool:
    return row is not None and row.state is state and row.lease_id == lease_id


class InHouseStore:
    """A process-local store registered by a separate distribution.

    Every method runs without awaiting anything, so on one event loop each one is atomic.
    """

    #: The store API it implements, as a literal: a pausetoken that does not drive it
    #: refuses the store instead of running it.
    api_version: ClassVar[int] = 2
    process_local: ClassVar[bool] = True

    def __init__(self) -> None:
        self._rows: dict[str, PauseRecord] = {}
        self._closed = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> InHouseStore:
        """Open ``inhouse://`` (no options).

        Raises:
            ConfigurationError: for any other URL or any option.
        """
        if url != "inhouse://" or options:
            msg = "the in-house store is opened as 'inhouse://' without options"
            raise ConfigurationError(msg)
        return cls()

    def _row(self, pause_key: str) -> PauseRecord | None:
        if self._closed:
            msg = "the in-house store was closed"
            raise StoreUnavailable(msg)
        return self._rows.get(pause_key)

    def _put(self, row: PauseRecord, **changes: Any) -> PauseRecord:
        """Store ``row`` with ``changes``, never lowering its expiry."""
        expires_at = max(row.expires_at, changes.pop("expires_at", row.expires_at))
        fields = {
            "pause_key": row.pause_key,
            "state": row.state,
            "scope_hash": row.scope_hash,
            "name": row.name,
            "response_hash": row.response_hash,
            "lease_id": row.lease_id,
            "lease_until": row.lease_until,
            **changes,
        }
        self._rows[row.pause_key] = stored = PauseRecord(**fields, expires_at=expires_at)
        return stored

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Claim a pause: one caller wins; the others learn why not."""
        row = self._row(request.pause_key)
        if row is None or _lapsed(row, request.now):
            fresh = PauseRecord(
                pause_key=request.pause_key,
                state=PauseState.CLAIMED,
                scope_hash=request.scope_hash,
                name=request.name,
                expires_at=request.expires_at if row is None else row.expires_at,
                response_hash=request.response_hash,
                lease_id=request.lease_id,
                lease_until=request.lease_until,
            )
            self._put(fresh, expires_at=request.expires_at)
            return ClaimResult(ClaimOutcome.CLAIMED)
        row = self._put(row, expires_at=request.expires_at)
        if row.state is PauseState.CLAIMED:
            return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=row.lease_until)
        if row.state is PauseState.REVOKED:
            return ClaimResult(ClaimOutcome.REVOKED)
        same = hmac.compare_digest(row.response_hash or "", request.response_hash)
        return ClaimResult(ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER)

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        """Extend the holder's lease (never shorten it)."""
        row = self._row(pause_key)
        if row is None or not _held_by(row, lease_id, PauseState.CLAIMED):
            return False
        if row.lease_until is None or row.lease_until < lease_until:
            self._put(row, lease_until=lease_until)
        return True

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        """Mark the pause redeemed by the holder; a repeat by the same lease confirms it."""
        row = self._row(pause_key)
        if row is None or not (
            _held_by(row, lease_id, PauseState.CLAIMED)
            or _held_by(row, lease_id, PauseState.REDEEMED)
        ):
            return False
        self._put(row, state=PauseState.REDEEMED, expires_at=expires_at)
        return True

    async def release(self, pause_key: str, lease_id: str) -> bool:
        """Drop the holder's claim so the pause can be answered again."""
        row = self._row(pause_key)
        if row is None or not _held_by(row, lease_id, PauseState.CLAIMED):
            return False
        del self._rows[pause_key]
        return True

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        """Revoke an unanswered pause; a live claim, a redemption or a revocation stays."""
        row = self._row(pause_key)
        if row is None:
            revoked = PauseRecord(
                pause_key=pause_key,
                state=PauseState.REVOKED,
                scope_hash=scope_hash,
                name=name,
                expires_at=expires_at,
            )
            return self._put(revoked)
        if _lapsed(row, now):
            return self._put(
                row,
                state=PauseState.REVOKED,
                expires_at=expires_at,
                response_hash=None,
                lease_id=None,
                lease_until=None,
            )
        return self._put(row, expires_at=expires_at)

    async def status(self, pause_key: str) -> PauseRecord | None:
        """The pause's record, or ``None``."""
        return self._row(pause_key)

    async def purge(self, before: datetime) -> int:
        """Delete the rows that expired before ``before``."""
        self._row("")  # refuses a closed store
        expired = [key for key, row in self._rows.items() if row.expires_at < before]
        for key in expired:
            del self._rows[key]
        return len(expired)

    async def check(self) -> None:
        """Nothing to connect to: only refuse a closed store."""
        self._row("")

    async def aclose(self) -> None:
        """Forget every row."""
        self._closed = True
        self._rows.clear()
