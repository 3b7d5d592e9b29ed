"""Deliberately broken stores: a ``MemoryStore`` with one bug each.

``test_testing_kit.py`` runs the conformance kit against every one and asserts that the
kit fails it, in the tests named in its table. Each bug is one that a real backend can
have (most were seen in review): a claim that reads and then writes, a commit or release
that does not check the holder, a takeover that keeps part of the old row, a one-call
consume that reads then writes, redeems over a live claim or is not idempotent, times that lose
their microseconds, expiries that go down, an engine TTL that ends a millisecond early, a
``check()`` that never looks. `ReadThenWriteFileClaim` is shared between processes (a
SQLite file): only the multi-process race can catch it.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

import attrs
from sqlite_file_store import SQLiteFileStore

from pausetoken import MemoryStore
from pausetoken.plugins import ClaimOutcome, ClaimRequest, ClaimResult, PauseRecord, PauseState

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["BROKEN"]


def _lapsed(row: PauseRecord | None, now: datetime) -> bool:
    return (
        row is not None
        and row.state is PauseState.CLAIMED
        and row.lease_until is not None
        and (row.lease_until <= now)
    )


def _claimed(request: ClaimRequest, row: PauseRecord | None) -> PauseRecord:
    expires = request.expires_at if row is None else max(row.expires_at, request.expires_at)
    return PauseRecord(
        pause_key=request.pause_key,
        state=PauseState.CLAIMED,
        scope_hash=request.scope_hash,
        name=request.name,
        expires_at=expires,
        response_hash=request.response_hash,
        lease_id=request.lease_id,
        lease_until=request.lease_until,
    )


class ReadThenWriteClaim(MemoryStore):
    """Claim reads the row, makes a round trip, then writes: concurrent claims all win."""

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        row = await self.status(request.pause_key)
        await asyncio.sleep(0)  # the round trip between the SELECT and the INSERT
        if row is None or _lapsed(row, request.now):
            with self._lock:
                self._rows[request.pause_key] = _claimed(request, row)
            return ClaimResult(ClaimOutcome.CLAIMED)
        return await super().claim(request)


class ColdPoolReadThenWrite(MemoryStore):
    """Read-then-write behind a pool that starts with one warm connection.

    The first claimer takes the warm connection and writes while the others are still
    connecting, so racing through a cold pool finds one winner; with every connection
    open before the race, they all read an empty row and all win.
    """

    def __init__(self) -> None:
        super().__init__()
        self._idle = 1  # the connection the fixture used to prepare the table

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[None]:
        if self._idle:
            self._idle -= 1
        else:
            await asyncio.sleep(0.01)  # connecting
        try:
            yield
        finally:
            self._idle += 1

    async def status(self, pause_key: str) -> PauseRecord | None:
        async with self._connection():
            await asyncio.sleep(0)
            return await super().status(pause_key)

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        async with self._connection():
            row = await super().status(request.pause_key)
            await asyncio.sleep(0)
            if row is None or _lapsed(row, request.now):
                with self._lock:
                    self._rows[request.pause_key] = _claimed(request, row)
                return ClaimResult(ClaimOutcome.CLAIMED)
            return await super().claim(request)


class CommitIgnoresHolder(MemoryStore):
    """Commit redeems a claimed row whichever lease presents itself."""

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        with self._lock:
            row = self._rows.get(pause_key)
            if row is not None and row.state is PauseState.CLAIMED and row.lease_id is not None:
                lease_id = row.lease_id
        return await super().commit(pause_key, lease_id, expires_at)


class ReleaseOfRedeemed(MemoryStore):
    """Release deletes the row of its lease whatever its state, reopening a redeemed pause."""

    async def release(self, pause_key: str, lease_id: str) -> bool:
        with self._lock:
            row = self._rows.get(pause_key)
            if row is None or row.lease_id != lease_id:
                return False
            del self._rows[pause_key]
            return True


class TakeoverOfLiveLease(MemoryStore):
    """Claim takes over any claimed row, live lease or not."""

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        with self._lock:
            row = self._rows.get(request.pause_key)
            if row is not None and row.state is PauseState.CLAIMED:
                self._rows[request.pause_key] = attrs.evolve(row, lease_until=request.now)
        return await super().claim(request)


class RevokeOverwritesRedeemed(MemoryStore):
    """Revoke turns a redeemed pause into a revoked one."""

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        with self._lock:
            row = self._rows.get(pause_key)
            if row is not None and row.state is PauseState.REDEEMED:
                row = attrs.evolve(
                    row,
                    state=PauseState.REVOKED,
                    expires_at=max(row.expires_at, expires_at),
                    response_hash=None,
                    lease_id=None,
                    lease_until=None,
                )
                self._rows[pause_key] = row
                return row
        return await super().revoke(pause_key, scope_hash, name, expires_at, now)


class TakeoverKeepsOldAnswer(MemoryStore):
    """A takeover writes the new lease but keeps the old holder's response hash."""

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        with self._lock:
            before = self._rows.get(request.pause_key)
        result = await super().claim(request)
        if result.outcome is ClaimOutcome.CLAIMED and before is not None:
            with self._lock:
                row = self._rows[request.pause_key]
                self._rows[request.pause_key] = attrs.evolve(
                    row, response_hash=before.response_hash
                )
        return result


class TakeoverKeepsOldScope(MemoryStore):
    """A takeover writes the new lease and answer but keeps the old scope hash and name."""

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        with self._lock:
            before = self._rows.get(request.pause_key)
        result = await super().claim(request)
        if result.outcome is ClaimOutcome.CLAIMED and before is not None:
            with self._lock:
                row = self._rows[request.pause_key]
                self._rows[request.pause_key] = attrs.evolve(
                    row, scope_hash=before.scope_hash, name=before.name
                )
        return result


class SecondPrecisionTimes(MemoryStore):
    """Times come back without their microseconds (a ``DATETIME`` column without ``(6)``)."""

    async def status(self, pause_key: str) -> PauseRecord | None:
        row = await super().status(pause_key)
        if row is None:
            return None
        until = None if row.lease_until is None else row.lease_until.replace(microsecond=0)
        return attrs.evolve(
            row, expires_at=row.expires_at.replace(microsecond=0), lease_until=until
        )


class RevokeKeepsTheLease(MemoryStore):
    """Revoking a lapsed claim keeps its response hash and lease fields."""

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        with self._lock:
            before = self._rows.get(pause_key)
        record = await super().revoke(pause_key, scope_hash, name, expires_at, now)
        if (
            before is None
            or record.state is not PauseState.REVOKED
            or before.state is not PauseState.CLAIMED
        ):
            return record
        record = attrs.evolve(
            record,
            response_hash=before.response_hash,
            lease_id=before.lease_id,
            lease_until=before.lease_until,
        )
        with self._lock:
            self._rows[pause_key] = record
        return record


class CommitClearsTheLease(MemoryStore):
    """Commit forgets which lease committed (``lease_id`` and ``lease_until`` set to None)."""

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        done = await super().commit(pause_key, lease_id, expires_at)
        if done:
            with self._lock:
                row = self._rows[pause_key]
                self._rows[pause_key] = attrs.evolve(row, lease_id=None, lease_until=None)
        return done


class ClaimLowersTheExpiry(MemoryStore):
    """Every claim writes its own expiry, even below the row's."""

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        result = await super().claim(request)
        with self._lock:
            row = self._rows.get(request.pause_key)
            if row is not None:
                self._rows[request.pause_key] = attrs.evolve(row, expires_at=request.expires_at)
        return result


class CommitNotIdempotent(MemoryStore):
    """A second commit by the lease that committed reports failure (protocol version 1)."""

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        with self._lock:
            row = self._rows.get(pause_key)
            if row is not None and row.state is PauseState.REDEEMED:
                return False
        return await super().commit(pause_key, lease_id, expires_at)


class RevokeOfLiveClaim(MemoryStore):
    """Revoke revokes a claim whose lease is live (protocol version 1)."""

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        with self._lock:
            row = self._rows.get(pause_key)
            if row is not None and row.state is PauseState.CLAIMED and row.lease_until is not None:
                now = max(now, row.lease_until)
        return await super().revoke(pause_key, scope_hash, name, expires_at, now)


class RenewLowersTheLease(MemoryStore):
    """Renew writes the lease end it is given, even an earlier one."""

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        held = await super().renew(pause_key, lease_id, lease_until)
        if held:
            with self._lock:
                row = self._rows[pause_key]
                self._rows[pause_key] = attrs.evolve(row, lease_until=lease_until)
        return held


class TTLRoundedDownToMilliseconds(MemoryStore):
    """An engine TTL set from the expiry rounded down to milliseconds (``PEXPIREAT`` of
    ``int(ms)``): the engine removes a row up to 1 ms before its ``expires_at``.
    """

    expires_rows_itself: ClassVar[bool] = True

    async def status(self, pause_key: str) -> PauseRecord | None:
        with self._lock:
            row = self._rows.get(pause_key)
            if row is not None:
                ttl = row.expires_at.replace(microsecond=row.expires_at.microsecond // 1000 * 1000)
                if datetime.now(UTC) >= ttl:
                    del self._rows[pause_key]
        return await super().status(pause_key)


class CheckAlwaysSucceeds(MemoryStore):
    """``check()`` answers without looking at anything, even on a closed store."""

    async def check(self) -> None:
        return None


class ReadThenWriteConsume(MemoryStore):
    """Consume reads the row, makes a round trip, then writes: concurrent consumes all win."""

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        row = await self.status(request.pause_key)
        await asyncio.sleep(0)  # the round trip between the SELECT and the INSERT
        if row is None or _lapsed(row, request.now):
            with self._lock:
                self._rows[request.pause_key] = attrs.evolve(
                    _claimed(request, row), state=PauseState.REDEEMED
                )
            return ClaimResult(ClaimOutcome.CLAIMED)
        return await super().consume(request)


class ConsumeOverLiveLease(MemoryStore):
    """Consume redeems a pause whose claim is still live (its holder's body may be running)."""

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        with self._lock:
            row = self._rows.get(request.pause_key)
            if row is not None and row.state is PauseState.CLAIMED:
                self._rows[request.pause_key] = attrs.evolve(
                    _claimed(request, row), state=PauseState.REDEEMED
                )
                return ClaimResult(ClaimOutcome.CLAIMED)
        return await super().consume(request)


class ConsumeNotIdempotent(MemoryStore):
    """A consume retried by the lease that landed it is answered as somebody else's replay."""

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        row = await self.status(request.pause_key)
        if row is not None and row.state is PauseState.REDEEMED:
            return await self.claim(request)
        return await super().consume(request)


#: Every broken store, by name.
BROKEN: dict[str, type[MemoryStore]] = {
    cls.__name__: cls
    for cls in (
        ReadThenWriteClaim,
        ColdPoolReadThenWrite,
        CommitIgnoresHolder,
        ReleaseOfRedeemed,
        TakeoverOfLiveLease,
        RevokeOverwritesRedeemed,
        TakeoverKeepsOldAnswer,
        TakeoverKeepsOldScope,
        SecondPrecisionTimes,
        RevokeKeepsTheLease,
        CommitClearsTheLease,
        ClaimLowersTheExpiry,
        CommitNotIdempotent,
        RevokeOfLiveClaim,
        RenewLowersTheLease,
        TTLRoundedDownToMilliseconds,
        CheckAlwaysSucceeds,
        ReadThenWriteConsume,
        ConsumeOverLiveLease,
        ConsumeNotIdempotent,
    )
}


class ReadThenWriteFileClaim(SQLiteFileStore):
    """A store shared between processes whose claim is two round trips: read, then write.

    No transaction holds the two together, so two processes that both read an empty row
    both write it and both win. Each process has one connection, so its own claims run one
    after the other: only claims of the same pause from two processes at the same moment
    can collide, which only a race across processes (`race_processes`) can arrange.
    """

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._connection = asyncio.Lock()

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        async with self._connection:
            row = self._row(request.pause_key)
            await asyncio.sleep(0)  # the round trip between the SELECT and the INSERT
            if row is None or _lapsed(row, request.now):
                self._write(_claimed(request, row))
                return ClaimResult(ClaimOutcome.CLAIMED)
        return await super().claim(request)


class ReadThenWriteFileConsume(SQLiteFileStore):
    """`ReadThenWriteFileClaim` for the one-call consume: read, then write, unprotected."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._connection = asyncio.Lock()

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        async with self._connection:
            row = self._row(request.pause_key)
            await asyncio.sleep(0)  # the round trip between the SELECT and the INSERT
            if row is None or _lapsed(row, request.now):
                self._write(attrs.evolve(_claimed(request, row), state=PauseState.REDEEMED))
                return ClaimResult(ClaimOutcome.CLAIMED)
        return await super().consume(request)
