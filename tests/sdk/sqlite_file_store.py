"""A small store on a SQLite file (stdlib ``sqlite3``), shared between processes.

It exists to test ``race_processes`` and the conformance kit against a second, independent
implementation; it blocks the event loop and is not meant for anything else. Opened through
the ``module:attr`` escape hatch with the database path as an option. Times are stored as
integer microseconds since the epoch, so they round-trip exactly.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest, ClaimResult, PauseRecord, PauseState

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pauses (
    pause_key TEXT PRIMARY KEY, state TEXT NOT NULL, scope_hash TEXT NOT NULL,
    name TEXT NOT NULL, expires_at INTEGER NOT NULL, response_hash TEXT, lease_id TEXT,
    lease_until INTEGER
)
"""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _ts(value: datetime) -> int:
    return (value - _EPOCH) // _MICROSECOND


def _dt(value: int) -> datetime:
    return _EPOCH + value * _MICROSECOND


class SQLiteFileStore:
    api_version: ClassVar[int] = 2

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None)
        # No fsync per write: what is tested is atomicity between connections, not durability,
        # and syncing made this store the slowest part of the core's tests.
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute(_SCHEMA)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SQLiteFileStore:
        del url
        return cls(options["path"])

    def _row(self, key: str) -> PauseRecord | None:
        row = self._db.execute("SELECT * FROM pauses WHERE pause_key = ?", (key,)).fetchone()
        if row is None:
            return None
        return PauseRecord(
            pause_key=row[0],
            state=PauseState(row[1]),
            scope_hash=row[2],
            name=row[3],
            expires_at=_dt(row[4]),
            response_hash=row[5],
            lease_id=row[6],
            lease_until=None if row[7] is None else _dt(row[7]),
        )

    def _write(self, row: PauseRecord) -> None:
        """Insert or overwrite ``row`` whole."""
        self._db.execute(
            "INSERT OR REPLACE INTO pauses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.pause_key,
                row.state.value,
                row.scope_hash,
                row.name,
                _ts(row.expires_at),
                row.response_hash,
                row.lease_id,
                None if row.lease_until is None else _ts(row.lease_until),
            ),
        )

    def _raise_expiry(self, key: str, expires_at: datetime) -> None:
        self._db.execute(
            "UPDATE pauses SET expires_at = max(expires_at, ?) WHERE pause_key = ?",
            (_ts(expires_at), key),
        )

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        return self._take(request, PauseState.CLAIMED)

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        return self._take(request, PauseState.REDEEMED)

    def _take(self, request: ClaimRequest, state: PauseState) -> ClaimResult:
        key = request.pause_key
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._row(key)
            lapsed = (
                row is not None
                and row.state is PauseState.CLAIMED
                and row.lease_until is not None
                and row.lease_until <= request.now
            )
            if row is None or lapsed:
                expires = (
                    request.expires_at if row is None else max(row.expires_at, request.expires_at)
                )
                self._write(
                    PauseRecord(
                        pause_key=key,
                        state=state,
                        scope_hash=request.scope_hash,
                        name=request.name,
                        expires_at=expires,
                        response_hash=request.response_hash,
                        lease_id=request.lease_id,
                        lease_until=request.lease_until,
                    )
                )
                return ClaimResult(ClaimOutcome.CLAIMED)
            self._raise_expiry(key, request.expires_at)
            if row.state is PauseState.CLAIMED:
                return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=row.lease_until)
            if row.state is PauseState.REDEEMED:
                if state is PauseState.REDEEMED and row.lease_id == request.lease_id:
                    return ClaimResult(ClaimOutcome.CLAIMED)  # a retried consume, confirmed
                same = row.response_hash == request.response_hash
                return ClaimResult(
                    ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER
                )
            return ClaimResult(ClaimOutcome.REVOKED)
        finally:
            self._db.execute("COMMIT")

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        cursor = self._db.execute(
            "UPDATE pauses SET lease_until = max(lease_until, ?) "
            "WHERE pause_key = ? AND state = 'claimed' AND lease_id = ?",
            (_ts(lease_until), pause_key, lease_id),
        )
        return cursor.rowcount == 1

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        cursor = self._db.execute(
            "UPDATE pauses SET state = 'redeemed', expires_at = max(expires_at, ?) "
            "WHERE pause_key = ? AND state IN ('claimed', 'redeemed') AND lease_id = ?",
            (_ts(expires_at), pause_key, lease_id),
        )
        return cursor.rowcount == 1

    async def release(self, pause_key: str, lease_id: str) -> bool:
        cursor = self._db.execute(
            "DELETE FROM pauses WHERE pause_key = ? AND state = 'claimed' AND lease_id = ?",
            (pause_key, lease_id),
        )
        return cursor.rowcount == 1

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(
                "INSERT OR IGNORE INTO pauses (pause_key, state, scope_hash, name, expires_at) "
                "VALUES (?, 'revoked', ?, ?, ?)",
                (pause_key, scope_hash, name, _ts(expires_at)),
            )
            self._raise_expiry(pause_key, expires_at)
            self._db.execute(
                "UPDATE pauses SET state = 'revoked', response_hash = NULL, lease_id = NULL, "
                "lease_until = NULL WHERE pause_key = ? AND state = 'claimed' "
                "AND lease_until <= ?",
                (pause_key, _ts(now)),
            )
            record = self._row(pause_key)
        finally:
            self._db.execute("COMMIT")
        assert record is not None
        return record

    async def status(self, pause_key: str) -> PauseRecord | None:
        return self._row(pause_key)

    async def purge(self, before: datetime) -> int:
        cursor = self._db.execute("DELETE FROM pauses WHERE expires_at < ?", (_ts(before),))
        return cursor.rowcount

    async def check(self) -> None:
        try:
            self._db.execute("SELECT 1 FROM pauses LIMIT 1").fetchall()
        except sqlite3.ProgrammingError as exc:  # closed
            msg = "the SQLite file store was closed"
            raise StoreUnavailable(msg) from exc

    async def aclose(self) -> None:
        self._db.close()
