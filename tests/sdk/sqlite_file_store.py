"""A small store on a SQLite file (stdlib ``sqlite3``), shared between processes.

It exists to test ``race_processes`` and the conformance kit against a second, independent
implementation; it blocks the event loop and is not meant for anything else. Opened through
the ``module:attr`` escape hatch with the database path as an option.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any, ClassVar

from pausetoken import ClaimOutcome, ClaimRequest, ClaimResult, TokenRecord, TokenState

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    jti TEXT PRIMARY KEY, state TEXT NOT NULL, scope_hash TEXT NOT NULL, name TEXT NOT NULL,
    expires_at INTEGER NOT NULL, response_hash TEXT, lease_id TEXT, lease_until INTEGER
)
"""


def _ts(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp())


def _dt(value: int | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


class SQLiteFileStore:
    api_version: ClassVar[int] = 1

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self._db.execute(_SCHEMA)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SQLiteFileStore:
        return cls(options["path"])

    def _row(self, jti: str) -> TokenRecord | None:
        row = self._db.execute("SELECT * FROM tokens WHERE jti = ?", (jti,)).fetchone()
        if row is None:
            return None
        return TokenRecord(
            jti=row[0],
            state=TokenState(row[1]),
            scope_hash=row[2],
            name=row[3],
            expires_at=_dt(row[4]),  # type: ignore[arg-type]
            response_hash=row[5],
            lease_id=row[6],
            lease_until=_dt(row[7]),
        )

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._row(request.jti)
            lease_ended = row is not None and row.state is TokenState.CLAIMED
            if row is None or (lease_ended and row.lease_until <= request.now):  # type: ignore[operator]
                self._db.execute(
                    "INSERT OR REPLACE INTO tokens VALUES (?, 'claimed', ?, ?, ?, ?, ?, ?)",
                    (
                        request.jti,
                        request.scope_hash,
                        request.name,
                        _ts(request.expires_at),
                        request.response_hash,
                        request.lease_id,
                        _ts(request.lease_until),
                    ),
                )
                return ClaimResult(ClaimOutcome.CLAIMED)
            if row.state is TokenState.CLAIMED:
                return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=row.lease_until)
            if row.state is TokenState.REDEEMED:
                same = row.response_hash == request.response_hash
                return ClaimResult(
                    ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER
                )
            return ClaimResult(ClaimOutcome.REVOKED)
        finally:
            self._db.execute("COMMIT")

    async def commit(self, jti: str, lease_id: str) -> bool:
        cursor = self._db.execute(
            "UPDATE tokens SET state = 'redeemed' WHERE jti = ? AND state = 'claimed' "
            "AND lease_id = ?",
            (jti, lease_id),
        )
        return cursor.rowcount == 1

    async def release(self, jti: str, lease_id: str) -> bool:
        cursor = self._db.execute(
            "DELETE FROM tokens WHERE jti = ? AND state = 'claimed' AND lease_id = ?",
            (jti, lease_id),
        )
        return cursor.rowcount == 1

    async def revoke(
        self, jti: str, scope_hash: str, name: str, expires_at: datetime
    ) -> TokenRecord:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(
                "INSERT OR IGNORE INTO tokens (jti, state, scope_hash, name, expires_at) "
                "VALUES (?, 'revoked', ?, ?, ?)",
                (jti, scope_hash, name, _ts(expires_at)),
            )
            self._db.execute(
                "UPDATE tokens SET state = 'revoked', lease_id = NULL, lease_until = NULL "
                "WHERE jti = ? AND state = 'claimed'",
                (jti,),
            )
            record = self._row(jti)
        finally:
            self._db.execute("COMMIT")
        assert record is not None
        return record

    async def status(self, jti: str) -> TokenRecord | None:
        return self._row(jti)

    async def purge(self, before: datetime) -> int:
        cursor = self._db.execute("DELETE FROM tokens WHERE expires_at < ?", (_ts(before),))
        return cursor.rowcount

    async def aclose(self) -> None:
        self._db.close()
