"""MySQL and MariaDB through asyncmy: outcomes reported through ``LAST_INSERT_ID``.

``INSERT ... ON DUPLICATE KEY UPDATE`` and ``UPDATE`` with conditional assignments. The
statement reports what it found through ``LAST_INSERT_ID(expr)``, which the server returns
in the OK packet (``0`` when no row matched), so the outcome comes from data the server
sent rather than from the affected-row count (which ``CLIENT_FOUND_ROWS`` makes
ambiguous). The assignments are written so that they mean the same whether the server
assigns left to right (MySQL's default) or simultaneously (MariaDB's
``SIMULTANEOUS_ASSIGNMENT`` mode). Only ``DELETE`` (release, purge) reads the affected-row
count, which counts deleted rows on every setting. ``revoke`` writes in one statement and
then reads the record it reports. No statement produces a warning, so asyncmy never sends
``SHOW WARNINGS``. On MariaDB 10.5 and newer, consumes sent together are one
``INSERT ... SELECT ... ON DUPLICATE KEY UPDATE ... RETURNING``, which reports every row.
"""

# Table names are quoted by the dialect's identifier preparer; every value is a bound
# parameter, so building these statements from f-strings injects nothing.
# ruff: noqa: S608

from __future__ import annotations

import importlib
import inspect
import math
from typing import TYPE_CHECKING, Any, ClassVar, Final

from sqlalchemy import text
from sqlalchemy.dialects import mysql

from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimResult, PauseState
from pausetoken_sqlalchemy._failures import (
    AUTHENTICATION,
    MISSING_DATABASE,
    PERMISSION,
    READ_ONLY,
    TABLE_MISSING,
    Problem,
)
from pausetoken_sqlalchemy._family import EngineFamily
from pausetoken_sqlalchemy._statements import (
    PURGE_BATCH,
    RECORD_COLUMNS,
    Statements,
    from_us,
    record_from_row,
    unexpected_state,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sqlalchemy import Connection, Executable, Table
    from sqlalchemy.engine import Dialect

    from pausetoken.plugins import PauseRecord
    from pausetoken_sqlalchemy._statements import ClaimArgs

__all__ = ["MySQLFamily", "MySQLStatements"]

_SCHEMA_LOCK: Final = "pausetoken_schema"
_ERROR_NUMBERS: Final[Mapping[int, Problem]] = {
    1044: PERMISSION,  # ER_DBACCESS_DENIED_ERROR
    1045: AUTHENTICATION,  # ER_ACCESS_DENIED_ERROR
    1049: MISSING_DATABASE,  # ER_BAD_DB_ERROR
    1142: PERMISSION,  # ER_TABLEACCESS_DENIED_ERROR
    1143: PERMISSION,  # ER_COLUMNACCESS_DENIED_ERROR
    1146: TABLE_MISSING,  # ER_NO_SUCH_TABLE
    1227: PERMISSION,  # ER_SPECIFIC_ACCESS_DENIED_ERROR
    1290: READ_ONLY,  # ER_OPTION_PREVENTS_STATEMENT (--read-only)
    1698: AUTHENTICATION,  # ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    1836: READ_ONLY,  # ER_READ_ONLY_MODE
}

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
_MY_CONFIRMED: Final = 7  # consume only: a redemption by its own lease (a retry)
_MY_LEASE_OFFSET: Final = 1 << 57
_MY_OUTCOMES: Final = {
    _MY_INSERTED: ClaimResult(ClaimOutcome.CLAIMED),
    _MY_TAKEN_OVER: ClaimResult(ClaimOutcome.CLAIMED),
    _MY_SAME: ClaimResult(ClaimOutcome.REDEEMED_SAME),
    _MY_OTHER: ClaimResult(ClaimOutcome.REDEEMED_OTHER),
    _MY_REVOKED: ClaimResult(ClaimOutcome.REVOKED),
}
_MY_CONSUMED: Final = {**_MY_OUTCOMES, _MY_CONFIRMED: ClaimResult(ClaimOutcome.CLAIMED)}
_CLAIMED_STATE: Final = PauseState.CLAIMED.value
_REDEEMED_STATE: Final = PauseState.REDEEMED.value
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
#: ``INSERT ... RETURNING`` (which batches of consumes need) arrived in MariaDB 10.5.
_MARIADB_RETURNING: Final = (10, 5)
#: The columns of a batch's rows, in `_consume_rows()`'s order.
_BATCH_COLUMNS: Final = (
    "b_key",
    "b_scope",
    "b_name",
    "b_answer",
    "b_lease",
    "b_until",
    "b_expires",
    "b_now",
    "b_stamp",
)


def _outcome(code: int, outcomes: Mapping[int, ClaimResult]) -> ClaimResult:
    """The answer a claim or consume statement reported (see the encoding above)."""
    if code >= 8 and code % 8 == _MY_IN_PROGRESS:  # noqa: PLR2004 - see the encoding above
        return ClaimResult(
            ClaimOutcome.IN_PROGRESS, lease_until=from_us(code // 8 - _MY_LEASE_OFFSET)
        )
    try:
        return outcomes[code]
    except KeyError as exc:
        raise unexpected_state(code) from exc


class MySQLStatements(Statements):
    """MySQL and MariaDB through asyncmy."""

    def __init__(self, quoted_table: str) -> None:
        super().__init__(quoted_table)
        t = quoted_table
        ended = "(state = 'claimed' AND lease_until_us <= %s)"
        # What a takeover by this statement has written by the time the last assignments
        # run under left-to-right assignment: this statement's lease and stamp.
        written = f"({_MY_LEASE_IS} AND updated_at_us = %s)"

        def upsert(state: str) -> str:
            # Under left-to-right assignment later expressions see earlier assignments, so
            # the report comes first and the columns ``ended`` reads (state, lease_until_us)
            # are assigned last; under simultaneous assignment the order does not matter. A
            # claim assigns only lease_until_us of the two. A consume assigns both, so
            # whichever comes second would no longer see a lapsed claim (left to right):
            # their condition also accepts the row this statement took over (``written``:
            # its stamp never repeats within a store, and no other row carries it with this
            # lease id). Parameters: `claim_params()` and `consume_params()`.
            consume = state != _CLAIMED_STATE
            taken = f"({ended} OR {written})" if consume else ended
            return (
                f"INSERT INTO {t} (pause_key, scope_hash, name, state, response_hash, lease_id,"
                " lease_until_us, expires_at_us, created_at_us, updated_at_us)"
                f" VALUES (%s, %s, %s, '{state}', %s, %s, %s, %s, %s, %s)"
                " ON DUPLICATE KEY UPDATE"
                " updated_at_us = IF(LAST_INSERT_ID(CASE"
                f" WHEN {ended} THEN {_MY_TAKEN_OVER}"
                " WHEN state = 'claimed' THEN"
                f" (lease_until_us + {_MY_LEASE_OFFSET}) * 8 + {_MY_IN_PROGRESS}"
                + (
                    f" WHEN state = 'redeemed' AND {_MY_LEASE_IS} THEN {_MY_CONFIRMED}"
                    if consume
                    else ""
                )
                + " WHEN state = 'redeemed'"
                f" AND CAST(response_hash AS BINARY) = CAST(%s AS BINARY) THEN {_MY_SAME}"
                f" WHEN state = 'redeemed' THEN {_MY_OTHER}"
                f" WHEN state = 'revoked' THEN {_MY_REVOKED}"
                f" ELSE {_MY_UNKNOWN} END) = {_MY_TAKEN_OVER}, %s, updated_at_us),"
                f" scope_hash = IF({ended}, %s, scope_hash),"
                f" name = IF({ended}, %s, name),"
                f" response_hash = IF({ended}, %s, response_hash),"
                f" lease_id = IF({ended}, %s, lease_id),"
                " expires_at_us = GREATEST(expires_at_us, %s),"
                + (f" state = IF({taken}, '{state}', state)," if consume else "")
                + f" lease_until_us = IF({taken}, %s, lease_until_us)"
            )

        self._claim_sql = upsert(_CLAIMED_STATE)
        self._consume_sql = upsert(_REDEEMED_STATE)

        def consume_many(size: int) -> str:
            # MariaDB only: the consume upsert over the rows of a batch (a derived table,
            # ``s``), each decided against its own ``b_now``; RETURNING reports every row
            # as the statement left it, so no LAST_INSERT_ID report is needed. Assignments
            # as in `upsert()`: the columns ``lapsed`` reads are assigned last, and the
            # second of them also accepts the row this statement took over (``ours``).
            lapsed = "(state = 'claimed' AND lease_until_us <= s.b_now)"
            ours = (
                "(CAST(lease_id AS BINARY) = CAST(s.b_lease AS BINARY)"
                " AND updated_at_us = s.b_stamp)"
            )
            taken = f"({lapsed} OR {ours})"
            first = ", ".join(f"%s AS {column}" for column in _BATCH_COLUMNS)
            rows = " UNION ALL ".join(
                [f"SELECT {first}", *[f"SELECT {', '.join(['%s'] * 9)}"] * (size - 1)]
            )
            return (
                f"INSERT INTO {t} (pause_key, scope_hash, name, state, response_hash, lease_id,"
                " lease_until_us, expires_at_us, created_at_us, updated_at_us)"
                f" SELECT b_key, b_scope, b_name, '{_REDEEMED_STATE}', b_answer, b_lease,"
                f" b_until, b_expires, b_stamp, b_stamp FROM ({rows}) AS s"
                # In key order, so that concurrent statements lock rows in one order.
                " WHERE 1 = 1 ORDER BY b_key"
                " ON DUPLICATE KEY UPDATE"
                f" updated_at_us = IF({lapsed}, s.b_stamp, updated_at_us),"
                f" scope_hash = IF({lapsed}, s.b_scope, scope_hash),"
                f" name = IF({lapsed}, s.b_name, name),"
                f" response_hash = IF({lapsed}, s.b_answer, response_hash),"
                f" lease_id = IF({lapsed}, s.b_lease, lease_id),"
                " expires_at_us = GREATEST(expires_at_us, s.b_expires),"
                f" state = IF({taken}, '{_REDEEMED_STATE}', state),"
                f" lease_until_us = IF({taken}, s.b_until, lease_until_us)"
                " RETURNING pause_key, state, response_hash, lease_id, lease_until_us"
            )

        self._consume_many = consume_many
        self._consume_many_sql: dict[int, str] = {}
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
        self._status_sql = f"SELECT {RECORD_COLUMNS} FROM {t} WHERE pause_key = %s"
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

    def consume_params(self, args: ClaimArgs, stamp: int) -> Any:
        now, lease_id = args.now_us, args.lease_id
        return (
            *(args.key, args.scope_hash, args.name, args.response_hash, lease_id),
            *(args.lease_until_us, args.expires_at_us, stamp, stamp),
            *(now, lease_id, args.response_hash, stamp),
            *(now, args.scope_hash, now, args.name, now, args.response_hash),
            *(now, lease_id, args.expires_at_us, now, lease_id, stamp),
            *(now, lease_id, stamp, args.lease_until_us),
        )

    async def _report(self, conn: Any, sql: str, args: Sequence[Any]) -> int:
        """Run one statement; the value it passed to ``LAST_INSERT_ID`` (0 if none)."""
        async with conn.cursor() as cursor:
            await cursor.execute(sql, args)
            return int(cursor.lastrowid or 0)

    async def claim(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        params = self.claim_params(args, self._stamps.next())
        return _outcome(await self._report(conn, self._claim_sql, params), _MY_OUTCOMES)

    async def consume(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        params = self.consume_params(args, self._stamps.next())
        return _outcome(await self._report(conn, self._consume_sql, params), _MY_CONSUMED)

    def connected(self, dialect: Dialect) -> None:
        """Send consumes together on MariaDB 10.5 and newer (``INSERT ... RETURNING``)."""
        version = dialect.server_version_info or ()
        self.consumes_many = bool(getattr(dialect, "is_mariadb", False)) and (
            tuple(version[:2]) >= _MARIADB_RETURNING
        )

    async def _consume_rows(self, conn: Any, batch: Sequence[ClaimArgs]) -> Sequence[Any]:
        size = len(batch)
        sql = self._consume_many_sql.get(size)
        if sql is None:  # one statement per batch size, kept (a batch holds a few at most)
            sql = self._consume_many_sql[size] = self._consume_many(size)
        stamps = self._stamps
        params = [
            value
            for a in batch
            for value in (
                a.key,
                a.scope_hash,
                a.name,
                a.response_hash,
                a.lease_id,
                a.lease_until_us,
                a.expires_at_us,
                a.now_us,
                stamps.next(),
            )
        ]
        return await self._rows(conn, sql, params)

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

    async def _revoke_once(
        self,
        conn: Any,
        key: bytes,
        *,
        scope_hash: str,
        name: str,
        expires_at_us: int,
        now_us: int,
        stamp: int,
    ) -> PauseRecord | None:
        n = now_us
        params = (
            *(key, scope_hash, name, expires_at_us, stamp, stamp),
            *(n, n, n, stamp, expires_at_us, n, n),
        )
        async with conn.cursor() as cursor:
            await cursor.execute(self._revoke_sql, params)
        # The statement decided; this read reports the row (None: a holder's release
        # deleted it in between).
        return await self.status(conn, key)

    async def status(self, conn: Any, key: bytes) -> PauseRecord | None:
        rows = await self._rows(conn, self._status_sql, (key,))
        return record_from_row(rows[0]) if rows else None

    async def purge_batch(self, conn: Any, before_us: int) -> int:
        return await self._deleted(conn, self._purge_sql, (before_us,))

    async def check_writable(self, conn: Any) -> None:
        for sql in self._writable_sql:
            async with conn.cursor() as cursor:
                await cursor.execute(sql)


class MySQLFamily(EngineFamily):
    """MySQL and MariaDB, through asyncmy."""

    name = "mysql"
    backends: ClassVar[Mapping[str, str]] = {"mysql": "mysql", "mariadb": "mariadb"}
    driver = "asyncmy"
    engine_defaults: ClassVar[Mapping[str, Any]] = {"pool_pre_ping": True}
    statements = MySQLStatements

    def connect_parameters(self) -> frozenset[str]:
        """What asyncmy's ``Connection`` takes."""
        # The driver was checked to be installed before the engine was made.
        connection = importlib.import_module("asyncmy.connection").Connection
        return frozenset(inspect.signature(connection.__init__).parameters) - {"self"}

    async def ping(self, driver_connection: Any) -> None:
        """The protocol's ping; never reconnects (the pool replaces a broken connection)."""
        await driver_connection.ping(reconnect=False)

    def abort(self, driver_connection: Any) -> None:
        """Close the socket at once (asyncmy's ``close()``), without sending ``COM_QUIT``."""
        driver_connection.close()

    def lock_schema(self, conn: Connection, *, wait: float, label: str) -> None:
        """``GET_LOCK``, waiting whole seconds (the operation's timeout bounds it anyway)."""
        got = conn.execute(
            text("SELECT GET_LOCK(:name, :wait)"),
            {"name": _SCHEMA_LOCK, "wait": max(1, math.ceil(wait))},
        ).scalar()
        if got != 1:
            msg = f"timed out waiting for the schema lock at {label}"
            raise StoreUnavailable(msg)

    def unlock_schema(self, conn: Connection) -> None:
        """``RELEASE_LOCK``."""
        conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": _SCHEMA_LOCK})

    def insert_if_absent(self, table: Table, values: Mapping[str, Any]) -> Executable:
        """``INSERT ... ON DUPLICATE KEY UPDATE`` setting a column to itself.

        Unlike ``INSERT IGNORE``, it raises no warning (which asyncmy would fetch).
        """
        first = next(iter(values))
        return mysql.insert(table).values(values).on_duplicate_key_update({first: table.c[first]})

    def problem(self, exc: BaseException) -> Problem | None:
        """The MySQL error number that asyncmy's errors carry first."""
        if type(exc).__module__.startswith("asyncmy") and exc.args and isinstance(exc.args[0], int):
            return _ERROR_NUMBERS.get(exc.args[0])
        return None
