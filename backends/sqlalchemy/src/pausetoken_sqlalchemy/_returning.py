"""The statements of PostgreSQL and SQLite (>= 3.35): upserts that return the row.

``INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING`` whose assignments are conditional
(``CASE WHEN <lease ended> ...``), so the statement always returns the row as it left it:
a claim that lost learns why from the same statement. Consumes are the same upsert writing
the state ``redeemed`` where a claim writes ``claimed``, over the rows of a batch (one or
more consumes sent together), each taken over or left against its own ``now``. Both engines
evaluate every assignment on the old row. The two differ only in placeholders, how
parameters are bound, how rows are fetched and the name of the two-argument maximum: their
subclasses live with their engine families.
"""

# Table names are quoted by the dialect's identifier preparer; every value is a bound
# parameter, so building these statements from f-strings injects nothing.
# ruff: noqa: S608

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Final

from pausetoken.plugins import ClaimOutcome, ClaimResult, PauseState
from pausetoken_sqlalchemy._statements import (
    PURGE_BATCH,
    RECORD_COLUMNS,
    Statements,
    found,
    record_from_row,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pausetoken.plugins import PauseRecord
    from pausetoken_sqlalchemy._statements import ClaimArgs

__all__ = ["ReturningStatements"]

# Results are frozen: the common ones are made once, not per claim.
_CLAIMED: Final = ClaimResult(ClaimOutcome.CLAIMED)
_CLAIMED_STATE: Final = PauseState.CLAIMED.value
_REDEEMED_STATE: Final = PauseState.REDEEMED.value
#: The columns of the rows a batch of consumes is made of (see `_consume_rows()`).
_BATCH_COLUMNS: Final = (
    "pause_key, scope_hash, name, response_hash, lease_id, lease_until_us, expires_at_us,"
    " now_us, stamp"
)


class ReturningStatements(Statements):
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

        # Insert a claimed row or take a lapsed claim over; any other row keeps all but the
        # later expiry. Parameters: `claim_params()`.
        taken = ["scope_hash", "name", "response_hash", "lease_id", "lease_until_us"]
        self._claim_sql = (
            f"INSERT INTO {t} AS t (pause_key, scope_hash, name, state, response_hash,"
            " lease_id, lease_until_us, expires_at_us, created_at_us, updated_at_us)"
            f" VALUES ({p(1)}, {p(2)}, {p(3)}, '{_CLAIMED_STATE}', {p(4)}, {p(5)}, {p(6)},"
            f" {p(7)}, {p(9)}, {p(9)})"
            " ON CONFLICT (pause_key) DO UPDATE SET"
            f" {', '.join(claimed(column) for column in [*taken, 'updated_at_us'])},"
            f" expires_at_us = {greatest}(t.expires_at_us, excluded.expires_at_us)"
            " RETURNING state, response_hash, lease_id, lease_until_us, updated_at_us"
        )

        def consume_many(source: str) -> str:
            # The claim's upsert writing the state 'redeemed' too, for the pauses of a
            # batch: its rows come from ``source`` (an engine's `_consume_rows()`), each
            # with its own ``now_us``, which the update looks up by key.
            now = "(SELECT v.now_us FROM v WHERE v.pause_key = excluded.pause_key)"
            sets = [if_ended(now, column) for column in [*taken, "updated_at_us", "state"]]
            return (
                f"WITH v ({_BATCH_COLUMNS}) AS ({source})"
                f" INSERT INTO {t} AS t (pause_key, scope_hash, name, state, response_hash,"
                " lease_id, lease_until_us, expires_at_us, created_at_us, updated_at_us)"
                f" SELECT pause_key, scope_hash, name, '{_REDEEMED_STATE}', response_hash,"
                " lease_id, lease_until_us, expires_at_us, stamp, stamp FROM v"
                # In key order, so that concurrent batches lock rows in one order. The
                # WHERE is for SQLite's parser (an INSERT ... SELECT ... ON CONFLICT).
                " WHERE 1 = 1 ORDER BY pause_key"
                f" ON CONFLICT (pause_key) DO UPDATE SET {', '.join(sets)},"
                f" expires_at_us = {greatest}(t.expires_at_us, excluded.expires_at_us)"
                " RETURNING pause_key, state, response_hash, lease_id, lease_until_us"
            )

        self._consume_many = consume_many
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
            f" RETURNING {RECORD_COLUMNS}"
        )
        self._status_sql = f"SELECT {RECORD_COLUMNS} FROM {t} WHERE pause_key = {p(1)}"
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
        # Written by this statement (inserted or taken over) only if its stamp came back.
        if state == _CLAIMED_STATE and lease_id == args.lease_id and updated_at_us == stamp:
            return _CLAIMED
        return found(state, response_hash, lease_until_us, args)

    async def consume(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        [result] = await self.consume_many(conn, [args])
        return result

    consumes_many = True

    async def renew(self, conn: Any, key: bytes, lease_id: str, lease_until_us: int) -> bool:
        params = self._bind((key, lease_id, lease_until_us, self._stamps.next()))
        return bool(await self._fetch(conn, self._renew_sql, params))

    async def commit(self, conn: Any, key: bytes, lease_id: str, expires_at_us: int) -> bool:
        params = self._bind((key, lease_id, expires_at_us, self._stamps.next()))
        return bool(await self._fetch(conn, self._commit_sql, params))

    async def release(self, conn: Any, key: bytes, lease_id: str) -> bool:
        return bool(await self._fetch(conn, self._release_sql, self._bind((key, lease_id))))

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
    ) -> PauseRecord:
        params = self._bind((key, scope_hash, name, expires_at_us, stamp, now_us))
        rows = await self._fetch(conn, self._revoke_sql, params)
        return record_from_row(rows[0])

    async def status(self, conn: Any, key: bytes) -> PauseRecord | None:
        rows = await self._fetch(conn, self._status_sql, self._bind((key,)))
        return record_from_row(rows[0]) if rows else None

    async def purge_batch(self, conn: Any, before_us: int) -> int:
        return len(await self._fetch(conn, self._purge_sql, self._bind((before_us,))))

    async def check_writable(self, conn: Any) -> None:
        for sql in self._writable_sql:
            await self._fetch(conn, sql, self._bind(()))
