"""The statements behind each store operation, one family of engines per class.

The hot path talks to the driver connection SQLAlchemy checked out for the store, so each
operation costs one prepared statement and no transaction wrapper (every connection the
store holds is in autocommit mode).

* PostgreSQL and SQLite (>= 3.35): ``INSERT ... ON CONFLICT ... DO UPDATE ... WHERE ...
  RETURNING``. A claim that lost reads the row afterwards to say why.
* MySQL and MariaDB: ``INSERT ... ON DUPLICATE KEY UPDATE`` with conditional assignments.
  The statement reports what it found through ``LAST_INSERT_ID(expr)``, which the server
  returns in the OK packet, so the outcome comes from data the server sent rather than from
  the affected-row count (which ``CLIENT_FOUND_ROWS`` makes ambiguous).
"""

# Table names are quoted by the dialect's identifier preparer; every value is a bound
# parameter, so building these statements from f-strings injects nothing.
# ruff: noqa: S608

from __future__ import annotations

import hmac
import time
from abc import ABC, abstractmethod
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import attrs

from pausetoken import ClaimOutcome, ClaimResult, TokenRecord, TokenState
from pausetoken.exceptions import StoreUnavailable
from pausetoken_sqlalchemy._schema import MAX_JTI_BYTES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pausetoken import ClaimRequest

__all__ = [
    "ClaimArgs",
    "MySQLStatements",
    "PostgresStatements",
    "SqliteStatements",
    "Statements",
    "from_us",
    "to_us",
]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: How often a claim that lost to a row which then vanished or lapsed is retried.
_CLAIM_ATTEMPTS: Final = 4
#: Rows one purge statement deletes at most, so no statement holds locks for long.
PURGE_BATCH: Final = 1000

_RECORD_COLUMNS: Final = (
    "jti, state, scope_hash, name, expires_at_us, response_hash, lease_id, lease_until_us"
)


def to_us(moment: datetime) -> int:
    """Microseconds since the Unix epoch for an aware datetime (exact, no float).

    Raises:
        ValueError: ``moment`` is naive.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        msg = "store times must be timezone-aware (UTC)"
        raise ValueError(msg)
    since = moment - _EPOCH  # on the hot path: plain integer arithmetic is 3x faster
    return (since.days * 86_400 + since.seconds) * 1_000_000 + since.microseconds


def from_us(value: int) -> datetime:
    """The aware UTC datetime for microseconds since the Unix epoch."""
    return _EPOCH + timedelta(microseconds=value)


def encode_jti(jti: str) -> bytes:
    """The bytes stored in the binary ``jti`` column.

    Raises:
        ValueError: The ``jti`` is empty or longer than the column holds.
    """
    raw = jti.encode("utf-8", "surrogatepass")
    if not raw or len(raw) > MAX_JTI_BYTES:
        msg = f"a jti must be 1 to {MAX_JTI_BYTES} bytes of UTF-8"
        raise ValueError(msg)
    return raw


def _wall_clock_us() -> int:
    # Audit timestamps only (updated_at); decisions always use the caller's ``now``.
    return time.time_ns() // 1000


# Not frozen: a frozen attrs class costs about 2 µs more to build, once per claim.
@attrs.define
class ClaimArgs:
    """A :class:`~pausetoken.ClaimRequest` converted to column values (never mutated)."""

    jti: bytes
    scope_hash: str
    name: str
    response_hash: str
    lease_id: str
    lease_until_us: int
    expires_at_us: int
    now_us: int

    @classmethod
    def from_request(cls, request: ClaimRequest) -> ClaimArgs:
        """Convert (and validate) a claim request before any connection is used."""
        return cls(
            jti=encode_jti(request.jti),
            scope_hash=request.scope_hash,
            name=request.name,
            response_hash=request.response_hash,
            lease_id=request.lease_id,
            lease_until_us=to_us(request.lease_until),
            expires_at_us=to_us(request.expires_at),
            now_us=to_us(request.now),
        )


def _unexpected_state(state: object) -> StoreUnavailable:
    return StoreUnavailable(
        f"the token store holds a row in an unknown state ({state!r:.20}); failing closed"
    )


def _record(row: Sequence[Any]) -> TokenRecord:
    jti, state, scope_hash, name, expires_at_us, response_hash, lease_id, lease_until_us = row
    try:
        token_state = TokenState(state)
    except ValueError as exc:
        raise _unexpected_state(state) from exc
    return TokenRecord(
        jti=bytes(jti).decode("utf-8", "surrogatepass"),
        state=token_state,
        scope_hash=scope_hash,
        name=name,
        expires_at=from_us(expires_at_us),
        response_hash=response_hash,
        lease_id=lease_id,
        lease_until=None if lease_until_us is None else from_us(lease_until_us),
    )


def _decide(row: Sequence[Any], args: ClaimArgs) -> ClaimResult | None:
    """What a claim that lost finds in the row; ``None`` when it should try again."""
    state, response_hash, lease_until_us = row
    if state == TokenState.CLAIMED.value:
        if lease_until_us is not None and lease_until_us > args.now_us:
            return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=from_us(lease_until_us))
        return None
    if state == TokenState.REDEEMED.value:
        same = response_hash is not None and hmac.compare_digest(
            response_hash.encode(), args.response_hash.encode()
        )
        return ClaimResult(ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER)
    if state == TokenState.REVOKED.value:
        return ClaimResult(ClaimOutcome.REVOKED)
    raise _unexpected_state(state)


class Statements(ABC):
    """The store operations for one family of engines, run on a driver connection."""

    def __init__(self, quoted_table: str) -> None:
        """Prepare the statements for the (already quoted) table name."""
        self.table = quoted_table

    async def claim(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        """Claim ``args.jti``: exactly one concurrent caller gets ``CLAIMED``."""
        for _ in range(_CLAIM_ATTEMPTS):
            result = await self._try_claim(conn, args)
            if result is not None:
                return result
            row = await self._claim_state(conn, args.jti)
            if row is None:
                continue  # released between the two statements: claim again
            decided = _decide(row, args)
            if decided is not None:
                return decided
        # The row kept changing under us: someone else is working on this token right now.
        return ClaimResult(ClaimOutcome.IN_PROGRESS)

    @abstractmethod
    async def _try_claim(self, conn: Any, args: ClaimArgs) -> ClaimResult | None:
        """Run the claim statement; ``None`` when it lost and the row must be read."""

    @abstractmethod
    async def _claim_state(self, conn: Any, jti: bytes) -> Sequence[Any] | None:
        """``(state, response_hash, lease_until_us)`` of ``jti``, or ``None``."""

    @abstractmethod
    async def commit(self, conn: Any, jti: bytes, lease_id: str) -> bool:
        """Turn the lease holder's claim into a redemption."""

    @abstractmethod
    async def release(self, conn: Any, jti: bytes, lease_id: str) -> bool:
        """Delete the lease holder's claim."""

    @abstractmethod
    async def revoke(
        self, conn: Any, jti: bytes, scope_hash: str, name: str, expires_at_us: int
    ) -> TokenRecord:
        """Revoke an absent or claimed token; return the resulting record."""

    @abstractmethod
    async def status(self, conn: Any, jti: bytes) -> TokenRecord | None:
        """The stored record of ``jti``."""

    @abstractmethod
    async def purge_batch(self, conn: Any, before_us: int) -> int:
        """Delete at most :data:`PURGE_BATCH` expired rows; return how many."""


class _ReturningStatements(Statements):
    """PostgreSQL and SQLite: ``ON CONFLICT`` upserts with ``RETURNING``."""

    def __init__(self, quoted_table: str) -> None:
        super().__init__(quoted_table)
        t, p = quoted_table, self._param
        self._claim_sql = (
            f"INSERT INTO {t} AS t (jti, scope_hash, name, state, response_hash, lease_id,"
            " lease_until_us, expires_at_us, created_at_us, updated_at_us)"
            f" VALUES ({p(1)}, {p(2)}, {p(3)}, 'claimed', {p(4)}, {p(5)}, {p(6)}, {p(7)},"
            f" {p(8)}, {p(8)})"
            " ON CONFLICT (jti) DO UPDATE SET scope_hash = excluded.scope_hash,"
            " name = excluded.name, response_hash = excluded.response_hash,"
            " lease_id = excluded.lease_id, lease_until_us = excluded.lease_until_us,"
            " expires_at_us = excluded.expires_at_us, updated_at_us = excluded.updated_at_us"
            f" WHERE t.state = 'claimed' AND t.lease_until_us <= {p(8)}"
            " RETURNING lease_id"
        )
        self._claim_state_sql = (
            f"SELECT state, response_hash, lease_until_us FROM {t} WHERE jti = {p(1)}"
        )
        self._commit_sql = (
            f"UPDATE {t} SET state = 'redeemed', updated_at_us = {p(3)}"
            f" WHERE jti = {p(1)} AND state = 'claimed' AND lease_id = {p(2)} RETURNING 1"
        )
        self._release_sql = (
            f"DELETE FROM {t} WHERE jti = {p(1)} AND state = 'claimed' AND lease_id = {p(2)}"
            " RETURNING 1"
        )
        self._revoke_sql = (
            f"INSERT INTO {t} AS t (jti, scope_hash, name, state, expires_at_us,"
            " created_at_us, updated_at_us)"
            f" VALUES ({p(1)}, {p(2)}, {p(3)}, 'revoked', {p(4)}, {p(5)}, {p(5)})"
            " ON CONFLICT (jti) DO UPDATE SET state = 'revoked',"
            " updated_at_us = excluded.updated_at_us WHERE t.state = 'claimed'"
            f" RETURNING {_RECORD_COLUMNS}"
        )
        self._status_sql = f"SELECT {_RECORD_COLUMNS} FROM {t} WHERE jti = {p(1)}"
        self._purge_sql = (
            f"DELETE FROM {t} WHERE jti IN (SELECT jti FROM {t}"
            f" WHERE expires_at_us < {p(1)} LIMIT {PURGE_BATCH}) RETURNING 1"
        )

    @staticmethod
    @abstractmethod
    def _param(index: int) -> str:
        """The driver's placeholder for the ``index``-th (1-based) parameter."""

    @abstractmethod
    async def _fetch(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        """Run one statement and return all its rows."""

    async def _try_claim(self, conn: Any, args: ClaimArgs) -> ClaimResult | None:
        rows = await self._fetch(
            conn,
            self._claim_sql,
            (
                args.jti,
                args.scope_hash,
                args.name,
                args.response_hash,
                args.lease_id,
                args.lease_until_us,
                args.expires_at_us,
                args.now_us,
            ),
        )
        # The row came back only if this statement inserted it or took over a lapsed lease.
        if rows and rows[0][0] == args.lease_id:
            return ClaimResult(ClaimOutcome.CLAIMED)
        return None

    async def _claim_state(self, conn: Any, jti: bytes) -> Sequence[Any] | None:
        rows = await self._fetch(conn, self._claim_state_sql, (jti,))
        return rows[0] if rows else None

    async def commit(self, conn: Any, jti: bytes, lease_id: str) -> bool:
        return bool(await self._fetch(conn, self._commit_sql, (jti, lease_id, _wall_clock_us())))

    async def release(self, conn: Any, jti: bytes, lease_id: str) -> bool:
        return bool(await self._fetch(conn, self._release_sql, (jti, lease_id)))

    async def revoke(
        self, conn: Any, jti: bytes, scope_hash: str, name: str, expires_at_us: int
    ) -> TokenRecord:
        for _ in range(_CLAIM_ATTEMPTS):
            rows = await self._fetch(
                conn, self._revoke_sql, (jti, scope_hash, name, expires_at_us, _wall_clock_us())
            )
            if rows:
                return _record(rows[0])
            # Already redeemed or revoked: nothing changed, report what is there.
            record = await self.status(conn, jti)
            if record is not None:
                return record
        msg = "the token's row kept changing while it was being revoked; try again"
        raise StoreUnavailable(msg)

    async def status(self, conn: Any, jti: bytes) -> TokenRecord | None:
        rows = await self._fetch(conn, self._status_sql, (jti,))
        return _record(rows[0]) if rows else None

    async def purge_batch(self, conn: Any, before_us: int) -> int:
        return len(await self._fetch(conn, self._purge_sql, (before_us,)))


class PostgresStatements(_ReturningStatements):
    """PostgreSQL through asyncpg (prepared statements cached per connection)."""

    @staticmethod
    def _param(index: int) -> str:
        return f"${index}"

    async def _fetch(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        rows: Sequence[Any] = await conn.fetch(sql, *args)
        return rows


class SqliteStatements(_ReturningStatements):
    """SQLite through aiosqlite: each statement and its rows in one trip to its thread."""

    @staticmethod
    def _param(index: int) -> str:
        # Named, not numbered (``?1``): Python 3.12 deprecates numbered placeholders bound
        # from a sequence and 3.14 refuses them.
        return f":p{index}"

    async def _fetch(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        named = {f"p{index}": value for index, value in enumerate(args, start=1)}
        rows: Sequence[Any] = await conn.execute_fetchall(sql, named)
        return rows


# Codes the MySQL claim statement reports through LAST_INSERT_ID(expr). A fresh insert
# reports 0 (the table has no AUTO_INCREMENT column).
_MY_INSERTED: Final = 0
_MY_TAKEN_OVER: Final = 1
_MY_SAME: Final = 2
_MY_OTHER: Final = 3
_MY_REVOKED: Final = 4
_MY_IN_PROGRESS: Final = 5
_MY_OUTCOMES: Final = {
    _MY_INSERTED: ClaimResult(ClaimOutcome.CLAIMED),
    _MY_TAKEN_OVER: ClaimResult(ClaimOutcome.CLAIMED),
    _MY_SAME: ClaimResult(ClaimOutcome.REDEEMED_SAME),
    _MY_OTHER: ClaimResult(ClaimOutcome.REDEEMED_OTHER),
    _MY_REVOKED: ClaimResult(ClaimOutcome.REVOKED),
}


class MySQLStatements(Statements):
    """MySQL and MariaDB through asyncmy."""

    def __init__(self, quoted_table: str) -> None:
        super().__init__(quoted_table)
        t = quoted_table
        lapsed = "(state = 'claimed' AND lease_until_us <= %s)"
        # MySQL assigns left to right and later expressions see earlier assignments, so the
        # report comes first and lease_until_us (which ``lapsed`` reads) is assigned last.
        self._claim_sql = (
            f"INSERT INTO {t} (jti, scope_hash, name, state, response_hash, lease_id,"
            " lease_until_us, expires_at_us, created_at_us, updated_at_us)"
            " VALUES (%s, %s, %s, 'claimed', %s, %s, %s, %s, %s, %s)"
            " ON DUPLICATE KEY UPDATE"
            " updated_at_us = IF(LAST_INSERT_ID(CASE"
            f" WHEN {lapsed} THEN {_MY_TAKEN_OVER}"
            f" WHEN state = 'claimed' THEN {_MY_IN_PROGRESS}"
            f" WHEN state = 'redeemed' AND response_hash = %s THEN {_MY_SAME}"
            f" WHEN state = 'redeemed' THEN {_MY_OTHER}"
            f" WHEN state = 'revoked' THEN {_MY_REVOKED}"
            f" ELSE {_MY_IN_PROGRESS} END) = {_MY_TAKEN_OVER}, %s, updated_at_us),"
            f" scope_hash = IF({lapsed}, %s, scope_hash),"
            f" name = IF({lapsed}, %s, name),"
            f" response_hash = IF({lapsed}, %s, response_hash),"
            f" lease_id = IF({lapsed}, %s, lease_id),"
            f" expires_at_us = IF({lapsed}, %s, expires_at_us),"
            f" lease_until_us = IF({lapsed}, %s, lease_until_us)"
        )
        self._claim_state_sql = (
            f"SELECT state, response_hash, lease_until_us FROM {t} WHERE jti = %s"
        )
        self._commit_sql = (
            f"UPDATE {t} SET state = 'redeemed', updated_at_us = %s"
            " WHERE jti = %s AND state = 'claimed' AND lease_id = %s"
        )
        self._release_sql = (
            f"DELETE FROM {t} WHERE jti = %s AND state = 'claimed' AND lease_id = %s"
        )
        self._revoke_sql = (
            f"INSERT INTO {t} (jti, scope_hash, name, state, expires_at_us, created_at_us,"
            " updated_at_us) VALUES (%s, %s, %s, 'revoked', %s, %s, %s)"
            " ON DUPLICATE KEY UPDATE"
            " updated_at_us = IF(state = 'claimed', %s, updated_at_us),"
            " state = IF(state = 'claimed', 'revoked', state)"
        )
        self._status_sql = f"SELECT {_RECORD_COLUMNS} FROM {t} WHERE jti = %s"
        self._purge_sql = f"DELETE FROM {t} WHERE expires_at_us < %s LIMIT {PURGE_BATCH}"

    async def _try_claim(self, conn: Any, args: ClaimArgs) -> ClaimResult | None:
        now = args.now_us
        params = (
            args.jti,
            args.scope_hash,
            args.name,
            args.response_hash,
            args.lease_id,
            args.lease_until_us,
            args.expires_at_us,
            now,
            now,
            now,
            args.response_hash,
            now,
            now,
            args.scope_hash,
            now,
            args.name,
            now,
            args.response_hash,
            now,
            args.lease_id,
            now,
            args.expires_at_us,
            now,
            args.lease_until_us,
        )
        async with conn.cursor() as cursor:
            await cursor.execute(self._claim_sql, params)
            code = int(cursor.lastrowid or 0)
        if code == _MY_IN_PROGRESS:
            return None
        try:
            return _MY_OUTCOMES[code]
        except KeyError as exc:
            raise _unexpected_state(code) from exc

    async def _rows(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        async with conn.cursor() as cursor:
            await cursor.execute(sql, args)
            rows: Sequence[Any] = await cursor.fetchall()
        return rows

    async def _count(self, conn: Any, sql: str, args: Sequence[Any]) -> int:
        # Safe with CLIENT_FOUND_ROWS: every WHERE below only matches rows it then changes.
        async with conn.cursor() as cursor:
            await cursor.execute(sql, args)
            return int(cursor.rowcount)

    async def _claim_state(self, conn: Any, jti: bytes) -> Sequence[Any] | None:
        rows = await self._rows(conn, self._claim_state_sql, (jti,))
        return rows[0] if rows else None

    async def commit(self, conn: Any, jti: bytes, lease_id: str) -> bool:
        return await self._count(conn, self._commit_sql, (_wall_clock_us(), jti, lease_id)) > 0

    async def release(self, conn: Any, jti: bytes, lease_id: str) -> bool:
        return await self._count(conn, self._release_sql, (jti, lease_id)) > 0

    async def revoke(
        self, conn: Any, jti: bytes, scope_hash: str, name: str, expires_at_us: int
    ) -> TokenRecord:
        now = _wall_clock_us()
        for _ in range(_CLAIM_ATTEMPTS):
            await self._count(
                conn, self._revoke_sql, (jti, scope_hash, name, expires_at_us, now, now, now)
            )
            record = await self.status(conn, jti)
            if record is not None:
                return record
        msg = "the token's row kept changing while it was being revoked; try again"
        raise StoreUnavailable(msg)

    async def status(self, conn: Any, jti: bytes) -> TokenRecord | None:
        rows = await self._rows(conn, self._status_sql, (jti,))
        return _record(rows[0]) if rows else None

    async def purge_batch(self, conn: Any, before_us: int) -> int:
        return await self._count(conn, self._purge_sql, (before_us,))
