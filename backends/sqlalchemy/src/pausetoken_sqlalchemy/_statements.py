"""The statements behind each store operation, one family of engines per class.

The hot path talks to the driver connection SQLAlchemy checked out for the store, so each
operation costs one prepared statement and no transaction wrapper (every connection the
store holds is in autocommit mode). Every operation that decides something decides it in
one atomic statement, and its outcome comes from data that statement sent back:

* PostgreSQL and SQLite (>= 3.35): ``INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING``
  whose assignments are conditional (``CASE WHEN <lease ended> ...``), so the statement
  always returns the row as it left it: a claim that lost learns why from the same
  statement. Both engines evaluate every assignment on the old row.
* MySQL and MariaDB: ``INSERT ... ON DUPLICATE KEY UPDATE`` and ``UPDATE`` with
  conditional assignments. The statement reports what it found through
  ``LAST_INSERT_ID(expr)``, which the server returns in the OK packet (``0`` when no row
  matched), so the outcome comes from data the server sent rather than from the
  affected-row count (which ``CLIENT_FOUND_ROWS`` makes ambiguous). The assignments are
  written so that they mean the same whether the server assigns left to right (MySQL's
  default) or simultaneously (MariaDB's ``SIMULTANEOUS_ASSIGNMENT`` mode). Only ``DELETE``
  (release, purge) reads the affected-row count, which counts deleted rows on every
  setting. ``revoke`` writes in one statement and then reads the record it reports.

Expiry is only ever raised: claim, commit and revoke keep the later of the row's
``expires_at_us`` and the one given (``GREATEST`` / SQLite's two-argument ``MAX``).
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

from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimResult, PauseRecord, PauseState
from pausetoken_sqlalchemy._schema import MAX_PAUSE_KEY_BYTES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pausetoken.plugins import ClaimRequest

__all__ = [
    "ClaimArgs",
    "MySQLStatements",
    "PostgresStatements",
    "SqliteStatements",
    "Statements",
    "encode_key",
    "from_us",
    "to_us",
]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: How often a revoke whose row vanished before it could be read back is retried (MySQL).
_REVOKE_ATTEMPTS: Final = 4
#: Rows one purge statement deletes at most, so no statement holds locks for long.
PURGE_BATCH: Final = 1000

_RECORD_COLUMNS: Final = (
    "pause_key, state, scope_hash, name, expires_at_us, response_hash, lease_id, lease_until_us"
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


def encode_key(pause_key: str) -> bytes:
    """The bytes stored in the binary key column (``pause_key``).

    Raises:
        ValueError: The pause key is empty or longer than the column holds.
    """
    raw = pause_key.encode("utf-8", "surrogatepass")
    if not raw or len(raw) > MAX_PAUSE_KEY_BYTES:
        msg = f"a pause key must be 1 to {MAX_PAUSE_KEY_BYTES} bytes of UTF-8"
        raise ValueError(msg)
    return raw


class _Stamps:
    """Wall-clock microseconds for ``created_at_us`` / ``updated_at_us``, never repeated.

    Decisions always use the caller's ``now``; these are audit times. They are strictly
    increasing per store, so a claim statement can tell the row it wrote (its stamp came
    back) from a row it left alone, even when a caller reuses a lease id.
    """

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> int:
        stamp = max(time.time_ns() // 1000, self._last + 1)
        self._last = stamp
        return stamp


# Not frozen: a frozen attrs class costs about 2 µs more to build, once per claim.
@attrs.define
class ClaimArgs:
    """A [`ClaimRequest`][pausetoken.plugins.ClaimRequest] as column values (never mutated)."""

    key: bytes
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
            key=encode_key(request.pause_key),
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


def _record(row: Sequence[Any]) -> PauseRecord:
    key, state, scope_hash, name, expires_at_us, response_hash, lease_id, lease_until_us = row
    try:
        token_state = PauseState(state)
    except ValueError as exc:
        raise _unexpected_state(state) from exc
    return PauseRecord(
        pause_key=bytes(key).decode("utf-8", "surrogatepass"),
        state=token_state,
        scope_hash=scope_hash,
        name=name,
        expires_at=from_us(expires_at_us),
        response_hash=response_hash,
        lease_id=lease_id,
        lease_until=None if lease_until_us is None else from_us(lease_until_us),
    )


def _redeemed(stored_hash: str | None, args: ClaimArgs) -> ClaimResult:
    same = stored_hash is not None and hmac.compare_digest(
        stored_hash.encode(), args.response_hash.encode()
    )
    return ClaimResult(ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER)


class Statements(ABC):
    """The store operations for one family of engines, run on a driver connection."""

    def __init__(self, quoted_table: str) -> None:
        """Prepare the statements for the (already quoted) table name."""
        self.table = quoted_table
        self._stamps = _Stamps()
        t = quoted_table
        # Each needs the privilege its operation needs and changes nothing: check() runs
        # them once so that a read-only user fails at start-up, not at the first answer.
        self._writable_sql = (
            f"INSERT INTO {t} SELECT * FROM {t} WHERE 1 = 0",
            f"UPDATE {t} SET state = state WHERE 1 = 0",
            f"DELETE FROM {t} WHERE 1 = 0",
        )

    @abstractmethod
    def claim_params(self, args: ClaimArgs, stamp: int) -> Any:
        """The driver parameters of the claim statement (for benchmarks as well)."""

    @abstractmethod
    async def claim(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        """Claim ``args.key``: exactly one concurrent caller gets ``CLAIMED``."""

    @abstractmethod
    async def renew(self, conn: Any, key: bytes, lease_id: str, lease_until_us: int) -> bool:
        """Raise the holder's ``lease_until``; whether ``lease_id`` holds the claim."""

    @abstractmethod
    async def commit(self, conn: Any, key: bytes, lease_id: str, expires_at_us: int) -> bool:
        """Turn the holder's claim into a redemption; confirm one it already made."""

    @abstractmethod
    async def release(self, conn: Any, key: bytes, lease_id: str) -> bool:
        """Delete the lease holder's claim."""

    @abstractmethod
    async def revoke(
        self,
        conn: Any,
        key: bytes,
        *,
        scope_hash: str,
        name: str,
        expires_at_us: int,
        now_us: int,
    ) -> PauseRecord:
        """Revoke an absent or lapsed pause; return the resulting record."""

    @abstractmethod
    async def status(self, conn: Any, key: bytes) -> PauseRecord | None:
        """The stored record of ``key``."""

    @abstractmethod
    async def purge_batch(self, conn: Any, before_us: int) -> int:
        """Delete at most `PURGE_BATCH` expired rows; return how many."""

    @abstractmethod
    async def check_writable(self, conn: Any) -> None:
        """Run statements that need write privileges on the table and change nothing."""


class _ReturningStatements(Statements):
    """PostgreSQL and SQLite: ``ON CONFLICT`` upserts with ``RETURNING``."""

    #: The two-argument maximum of the engine.
    _GREATEST: str

    def __init__(self, quoted_table: str) -> None:
        super().__init__(quoted_table)
        t, p, greatest = quoted_table, self._param, self._GREATEST

        def ended(now: str) -> str:
            # The lease ended: a claim takes the row over, a revoke revokes it.
            return f"t.state = 'claimed' AND t.lease_until_us <= {now}"

        def if_ended(now: str, column: str) -> str:
            return f"{column} = CASE WHEN {ended(now)} THEN excluded.{column} ELSE t.{column} END"

        def claimed(column: str) -> str:
            return if_ended(p(8), column)

        lapsed = ended(p(6))

        self._claim_sql = (
            f"INSERT INTO {t} AS t (pause_key, scope_hash, name, state, response_hash, lease_id,"
            " lease_until_us, expires_at_us, created_at_us, updated_at_us)"
            f" VALUES ({p(1)}, {p(2)}, {p(3)}, 'claimed', {p(4)}, {p(5)}, {p(6)}, {p(7)},"
            f" {p(9)}, {p(9)})"
            f" ON CONFLICT (pause_key) DO UPDATE SET {claimed('scope_hash')}, {claimed('name')},"
            f" {claimed('response_hash')}, {claimed('lease_id')}, {claimed('lease_until_us')},"
            f" {claimed('updated_at_us')},"
            f" expires_at_us = {greatest}(t.expires_at_us, excluded.expires_at_us)"
            " RETURNING state, response_hash, lease_id, lease_until_us, updated_at_us"
        )
        self._renew_sql = (
            f"UPDATE {t} SET lease_until_us = {greatest}(lease_until_us, {p(3)}),"
            f" updated_at_us = {p(4)}"
            f" WHERE pause_key = {p(1)} AND state = 'claimed' AND lease_id = {p(2)} RETURNING 1"
        )
        self._commit_sql = (
            f"UPDATE {t} SET state = 'redeemed',"
            f" expires_at_us = {greatest}(expires_at_us, {p(3)}),"
            f" updated_at_us = CASE WHEN state = 'claimed' THEN {p(4)} ELSE updated_at_us END"
            f" WHERE pause_key = {p(1)} AND lease_id = {p(2)} AND state IN ('claimed', 'redeemed')"
            " RETURNING 1"
        )
        self._release_sql = (
            f"DELETE FROM {t} WHERE pause_key = {p(1)} AND state = 'claimed' AND lease_id = {p(2)}"
            " RETURNING 1"
        )
        self._revoke_sql = (
            f"INSERT INTO {t} AS t (pause_key, scope_hash, name, state, expires_at_us,"
            " created_at_us, updated_at_us)"
            f" VALUES ({p(1)}, {p(2)}, {p(3)}, 'revoked', {p(4)}, {p(5)}, {p(5)})"
            f" ON CONFLICT (pause_key) DO UPDATE SET"
            f" state = CASE WHEN {lapsed} THEN 'revoked' ELSE t.state END,"
            f" response_hash = CASE WHEN {lapsed} THEN NULL ELSE t.response_hash END,"
            f" lease_id = CASE WHEN {lapsed} THEN NULL ELSE t.lease_id END,"
            f" lease_until_us = CASE WHEN {lapsed} THEN NULL ELSE t.lease_until_us END,"
            f" {if_ended(p(6), 'updated_at_us')},"
            f" expires_at_us = {greatest}(t.expires_at_us, excluded.expires_at_us)"
            f" RETURNING {_RECORD_COLUMNS}"
        )
        self._status_sql = f"SELECT {_RECORD_COLUMNS} FROM {t} WHERE pause_key = {p(1)}"
        self._purge_sql = (
            f"DELETE FROM {t} WHERE pause_key IN (SELECT pause_key FROM {t}"
            f" WHERE expires_at_us < {p(1)} LIMIT {PURGE_BATCH}) RETURNING 1"
        )

    @staticmethod
    @abstractmethod
    def _param(index: int) -> str:
        """The driver's placeholder for the ``index``-th (1-based) parameter."""

    @abstractmethod
    def _bind(self, args: Sequence[Any]) -> Any:
        """Parameters in the form the driver takes them."""

    @abstractmethod
    async def _fetch(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        """Run one statement and return all its rows."""

    def claim_params(self, args: ClaimArgs, stamp: int) -> Any:
        return self._bind(
            (
                args.key,
                args.scope_hash,
                args.name,
                args.response_hash,
                args.lease_id,
                args.lease_until_us,
                args.expires_at_us,
                args.now_us,
                stamp,
            )
        )

    async def claim(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        stamp = self._stamps.next()
        rows = await self._fetch(conn, self._claim_sql, self.claim_params(args, stamp))
        state, response_hash, lease_id, lease_until_us, updated_at_us = rows[0]
        if state == PauseState.CLAIMED.value:
            # Written by this statement (inserted or taken over) only if its stamp came back.
            if lease_id == args.lease_id and updated_at_us == stamp:
                return ClaimResult(ClaimOutcome.CLAIMED)
            until = None if lease_until_us is None else from_us(lease_until_us)
            return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=until)
        if state == PauseState.REDEEMED.value:
            return _redeemed(response_hash, args)
        if state == PauseState.REVOKED.value:
            return ClaimResult(ClaimOutcome.REVOKED)
        raise _unexpected_state(state)

    async def renew(self, conn: Any, key: bytes, lease_id: str, lease_until_us: int) -> bool:
        params = self._bind((key, lease_id, lease_until_us, self._stamps.next()))
        return bool(await self._fetch(conn, self._renew_sql, params))

    async def commit(self, conn: Any, key: bytes, lease_id: str, expires_at_us: int) -> bool:
        params = self._bind((key, lease_id, expires_at_us, self._stamps.next()))
        return bool(await self._fetch(conn, self._commit_sql, params))

    async def release(self, conn: Any, key: bytes, lease_id: str) -> bool:
        return bool(await self._fetch(conn, self._release_sql, self._bind((key, lease_id))))

    async def revoke(
        self,
        conn: Any,
        key: bytes,
        *,
        scope_hash: str,
        name: str,
        expires_at_us: int,
        now_us: int,
    ) -> PauseRecord:
        stamp = self._stamps.next()
        params = self._bind((key, scope_hash, name, expires_at_us, stamp, now_us))
        rows = await self._fetch(conn, self._revoke_sql, params)
        return _record(rows[0])

    async def status(self, conn: Any, key: bytes) -> PauseRecord | None:
        rows = await self._fetch(conn, self._status_sql, self._bind((key,)))
        return _record(rows[0]) if rows else None

    async def purge_batch(self, conn: Any, before_us: int) -> int:
        return len(await self._fetch(conn, self._purge_sql, self._bind((before_us,))))

    async def check_writable(self, conn: Any) -> None:
        for sql in self._writable_sql:
            await self._fetch(conn, sql, self._bind(()))


class PostgresStatements(_ReturningStatements):
    """PostgreSQL through asyncpg (prepared statements cached per connection)."""

    _GREATEST = "GREATEST"

    @staticmethod
    def _param(index: int) -> str:
        return f"${index}"

    def _bind(self, args: Sequence[Any]) -> Any:
        return args

    async def _fetch(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        rows: Sequence[Any] = await conn.fetch(sql, *args)
        return rows


class SqliteStatements(_ReturningStatements):
    """SQLite through aiosqlite: each statement and its rows in one trip to its thread."""

    _GREATEST = "MAX"  # with two arguments, SQLite's MAX is the scalar maximum

    @staticmethod
    def _param(index: int) -> str:
        # Named, not numbered (``?1``): Python 3.12 deprecates numbered placeholders bound
        # from a sequence and 3.14 refuses them.
        return f":p{index}"

    def _bind(self, args: Sequence[Any]) -> Any:
        return {f"p{index}": value for index, value in enumerate(args, start=1)}

    async def _fetch(self, conn: Any, sql: str, args: Any) -> Sequence[Any]:
        rows: Sequence[Any] = await conn.execute_fetchall(sql, args)
        return rows


# What the MySQL claim statement reports through LAST_INSERT_ID(expr). A fresh insert
# reports 0 (the table has no AUTO_INCREMENT column). A live lease reports its end too:
# ``(lease_until_us + _MY_LEASE_OFFSET) * 8 + _MY_IN_PROGRESS``, which fits a signed BIGINT
# for every datetime (years 1 to 9999), so an IN_PROGRESS answer needs no second read.
_MY_INSERTED: Final = 0
_MY_TAKEN_OVER: Final = 1
_MY_SAME: Final = 2
_MY_OTHER: Final = 3
_MY_REVOKED: Final = 4
_MY_IN_PROGRESS: Final = 5
_MY_UNKNOWN: Final = 6
_MY_LEASE_OFFSET: Final = 1 << 57
_MY_OUTCOMES: Final = {
    _MY_INSERTED: ClaimResult(ClaimOutcome.CLAIMED),
    _MY_TAKEN_OVER: ClaimResult(ClaimOutcome.CLAIMED),
    _MY_SAME: ClaimResult(ClaimOutcome.REDEEMED_SAME),
    _MY_OTHER: ClaimResult(ClaimOutcome.REDEEMED_OTHER),
    _MY_REVOKED: ClaimResult(ClaimOutcome.REVOKED),
}
# What renew and commit report when their WHERE matched (and 0, from the OK packet, when
# it did not). The argument of LAST_INSERT_ID must depend on the row: a constant one
# (``LAST_INSERT_ID(1) = 1 AND ...``) is folded while the statement is prepared and then
# reported even when no row matched.
_MY_RAISED: Final = 1  # renew moved lease_until; commit redeemed a claim
_MY_KEPT: Final = 2  # renew kept a later lease_until; commit confirmed its own redemption
_MY_MATCHED: Final = frozenset({_MY_RAISED, _MY_KEPT})
# Lease ids and response hashes compare byte by byte, as on the other engines (the
# table's default collation would ignore case and trailing spaces).
_MY_LEASE_IS: Final = "CAST(lease_id AS BINARY) = CAST(%s AS BINARY)"


class MySQLStatements(Statements):
    """MySQL and MariaDB through asyncmy."""

    def __init__(self, quoted_table: str) -> None:
        super().__init__(quoted_table)
        t = quoted_table
        ended = "(state = 'claimed' AND lease_until_us <= %s)"
        # Under left-to-right assignment later expressions see earlier assignments, so the
        # report comes first and the columns ``ended`` reads (state, lease_until_us) are
        # assigned last; under simultaneous assignment the order does not matter.
        self._claim_sql = (
            f"INSERT INTO {t} (pause_key, scope_hash, name, state, response_hash, lease_id,"
            " lease_until_us, expires_at_us, created_at_us, updated_at_us)"
            " VALUES (%s, %s, %s, 'claimed', %s, %s, %s, %s, %s, %s)"
            " ON DUPLICATE KEY UPDATE"
            " updated_at_us = IF(LAST_INSERT_ID(CASE"
            f" WHEN {ended} THEN {_MY_TAKEN_OVER}"
            " WHEN state = 'claimed' THEN"
            f" (lease_until_us + {_MY_LEASE_OFFSET}) * 8 + {_MY_IN_PROGRESS}"
            " WHEN state = 'redeemed'"
            f" AND CAST(response_hash AS BINARY) = CAST(%s AS BINARY) THEN {_MY_SAME}"
            f" WHEN state = 'redeemed' THEN {_MY_OTHER}"
            f" WHEN state = 'revoked' THEN {_MY_REVOKED}"
            f" ELSE {_MY_UNKNOWN} END) = {_MY_TAKEN_OVER}, %s, updated_at_us),"
            f" scope_hash = IF({ended}, %s, scope_hash),"
            f" name = IF({ended}, %s, name),"
            f" response_hash = IF({ended}, %s, response_hash),"
            f" lease_id = IF({ended}, %s, lease_id),"
            " expires_at_us = GREATEST(expires_at_us, %s),"
            f" lease_until_us = IF({ended}, %s, lease_until_us)"
        )
        self._renew_sql = (
            f"UPDATE {t} SET updated_at_us = IF(LAST_INSERT_ID(IF(lease_until_us < %s,"
            f" {_MY_RAISED}, {_MY_KEPT})) = {_MY_RAISED}, %s, updated_at_us),"
            " lease_until_us = GREATEST(lease_until_us, %s)"
            f" WHERE pause_key = %s AND state = 'claimed' AND {_MY_LEASE_IS}"
        )
        self._commit_sql = (
            f"UPDATE {t} SET updated_at_us = IF(LAST_INSERT_ID(IF(state = 'claimed',"
            f" {_MY_RAISED}, {_MY_KEPT})) = {_MY_RAISED}, %s, updated_at_us),"
            " expires_at_us = GREATEST(expires_at_us, %s), state = 'redeemed'"
            f" WHERE pause_key = %s AND state IN ('claimed', 'redeemed') AND {_MY_LEASE_IS}"
        )
        self._release_sql = (
            f"DELETE FROM {t} WHERE pause_key = %s AND state = 'claimed' AND {_MY_LEASE_IS}"
        )
        # ``lease_until_us`` comes last and reads as "NULL once revoked" whether it sees
        # the new state (left to right) or the old one (simultaneous assignment).
        self._revoke_sql = (
            f"INSERT INTO {t} (pause_key, scope_hash, name, state, expires_at_us, created_at_us,"
            " updated_at_us) VALUES (%s, %s, %s, 'revoked', %s, %s, %s)"
            " ON DUPLICATE KEY UPDATE"
            f" response_hash = IF({ended}, NULL, response_hash),"
            f" lease_id = IF({ended}, NULL, lease_id),"
            f" updated_at_us = IF({ended}, %s, updated_at_us),"
            " expires_at_us = GREATEST(expires_at_us, %s),"
            f" state = IF({ended}, 'revoked', state),"
            f" lease_until_us = IF(state = 'revoked' OR {ended}, NULL, lease_until_us)"
        )
        self._status_sql = f"SELECT {_RECORD_COLUMNS} FROM {t} WHERE pause_key = %s"
        self._purge_sql = f"DELETE FROM {t} WHERE expires_at_us < %s LIMIT {PURGE_BATCH}"

    def claim_params(self, args: ClaimArgs, stamp: int) -> Any:
        now = args.now_us
        return (
            *(args.key, args.scope_hash, args.name, args.response_hash, args.lease_id),
            *(args.lease_until_us, args.expires_at_us, stamp, stamp),
            *(now, args.response_hash, stamp),
            *(now, args.scope_hash, now, args.name, now, args.response_hash),
            *(now, args.lease_id, args.expires_at_us, now, args.lease_until_us),
        )

    async def _report(self, conn: Any, sql: str, args: Sequence[Any]) -> int:
        """Run one statement; the value it passed to ``LAST_INSERT_ID`` (0 if none)."""
        async with conn.cursor() as cursor:
            await cursor.execute(sql, args)
            return int(cursor.lastrowid or 0)

    async def claim(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        params = self.claim_params(args, self._stamps.next())
        code = await self._report(conn, self._claim_sql, params)
        if code >= 8 and code % 8 == _MY_IN_PROGRESS:  # noqa: PLR2004 - see the encoding above
            until = from_us(code // 8 - _MY_LEASE_OFFSET)
            return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=until)
        try:
            return _MY_OUTCOMES[code]
        except KeyError as exc:
            raise _unexpected_state(code) from exc

    async def _rows(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        async with conn.cursor() as cursor:
            await cursor.execute(sql, args)
            rows: Sequence[Any] = await cursor.fetchall()
        return rows

    async def _deleted(self, conn: Any, sql: str, args: Sequence[Any]) -> int:
        # DELETE counts the rows it deleted whatever CLIENT_FOUND_ROWS says.
        async with conn.cursor() as cursor:
            await cursor.execute(sql, args)
            return int(cursor.rowcount)

    async def renew(self, conn: Any, key: bytes, lease_id: str, lease_until_us: int) -> bool:
        params = (lease_until_us, self._stamps.next(), lease_until_us, key, lease_id)
        return await self._report(conn, self._renew_sql, params) in _MY_MATCHED

    async def commit(self, conn: Any, key: bytes, lease_id: str, expires_at_us: int) -> bool:
        params = (self._stamps.next(), expires_at_us, key, lease_id)
        return await self._report(conn, self._commit_sql, params) in _MY_MATCHED

    async def release(self, conn: Any, key: bytes, lease_id: str) -> bool:
        return await self._deleted(conn, self._release_sql, (key, lease_id)) > 0

    async def revoke(
        self,
        conn: Any,
        key: bytes,
        *,
        scope_hash: str,
        name: str,
        expires_at_us: int,
        now_us: int,
    ) -> PauseRecord:
        n = now_us
        for _ in range(_REVOKE_ATTEMPTS):
            stamp = self._stamps.next()
            params = (
                *(key, scope_hash, name, expires_at_us, stamp, stamp),
                *(n, n, n, stamp, expires_at_us, n, n),
            )
            async with conn.cursor() as cursor:
                await cursor.execute(self._revoke_sql, params)
            # The statement decided; this read reports the row (a holder's release between
            # the two deletes it, and the revoke is simply made again).
            record = await self.status(conn, key)
            if record is not None:
                return record
        msg = "the pause's row kept changing while it was being revoked; try again"
        raise StoreUnavailable(msg)

    async def status(self, conn: Any, key: bytes) -> PauseRecord | None:
        rows = await self._rows(conn, self._status_sql, (key,))
        return _record(rows[0]) if rows else None

    async def purge_batch(self, conn: Any, before_us: int) -> int:
        return await self._deleted(conn, self._purge_sql, (before_us,))

    async def check_writable(self, conn: Any) -> None:
        for sql in self._writable_sql:
            async with conn.cursor() as cursor:
                await cursor.execute(sql)
