"""The statements behind each store operation: what every engine family shares.

The hot path talks to the driver connection SQLAlchemy checked out for the store, so each
operation costs one prepared statement and no transaction wrapper (every connection the
store holds is in autocommit mode). Every operation that decides something decides it in
one atomic statement, and its outcome comes from data that statement sent back. How each
engine does that is in its family's subclass of `Statements`:
``INSERT ... ON CONFLICT ... RETURNING`` on PostgreSQL and SQLite (`ReturningStatements`),
``INSERT ... ON DUPLICATE KEY UPDATE`` reporting through ``LAST_INSERT_ID`` on MySQL and
MariaDB (`MySQLStatements`).

Expiry is only ever raised: claim, consume, commit and revoke keep the later of the row's
``expires_at_us`` and the one given (``GREATEST`` / SQLite's two-argument ``MAX``).
"""

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

    from sqlalchemy.engine import Dialect

    from pausetoken.plugins import ClaimRequest

__all__ = [
    "PURGE_BATCH",
    "RECORD_COLUMNS",
    "ClaimArgs",
    "Statements",
    "encode_key",
    "found",
    "from_us",
    "record_from_row",
    "redeemed",
    "to_us",
    "unexpected_state",
]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US: Final = timedelta(microseconds=1)
#: How often a revoke whose row vanished before it could be read back is made again.
_REVOKE_ATTEMPTS: Final = 4
#: Rows one purge statement deletes at most, so no statement holds locks for long.
PURGE_BATCH: Final = 1000
#: The columns of a `PauseRecord`, in the order `record_from_row()` reads them.
RECORD_COLUMNS: Final = (
    "pause_key, state, scope_hash, name, expires_at_us, response_hash, lease_id, lease_until_us"
)


def to_us(moment: datetime) -> int:
    """Microseconds since the Unix epoch for an aware datetime (exact, no float).

    Raises:
        ValueError: ``moment`` is naive.
    """
    # One subtraction and one floor division of timedeltas, both exact integer arithmetic
    # in C: this runs three times per claim, the path benchmarks/stores.py holds against
    # the raw driver. A naive datetime cannot be subtracted from the aware epoch.
    try:
        return (moment - _EPOCH) // _ONE_US
    except TypeError as exc:
        msg = "store times must be timezone-aware (UTC)"
        raise ValueError(msg) from exc


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


# Not frozen: a frozen attrs class is slower to build, and one is built per claim (the path
# benchmarks/stores.py measures).
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
            encode_key(request.pause_key),
            request.scope_hash,
            request.name,
            request.response_hash,
            request.lease_id,
            to_us(request.lease_until),
            to_us(request.expires_at),
            to_us(request.now),
        )


def unexpected_state(state: object) -> StoreUnavailable:
    """The error for a row (or a statement's report) no release writes: fail closed."""
    return StoreUnavailable(
        f"the token store holds a row in an unknown state ({state!r:.20}); failing closed"
    )


def record_from_row(row: Sequence[Any]) -> PauseRecord:
    """The record for a row of `RECORD_COLUMNS`."""
    key, state, scope_hash, name, expires_at_us, response_hash, lease_id, lease_until_us = row
    try:
        pause_state = PauseState(state)
    except ValueError as exc:
        raise unexpected_state(state) from exc
    return PauseRecord(
        pause_key=bytes(key).decode("utf-8", "surrogatepass"),
        state=pause_state,
        scope_hash=scope_hash,
        name=name,
        expires_at=from_us(expires_at_us),
        response_hash=response_hash,
        lease_id=lease_id,
        lease_until=None if lease_until_us is None else from_us(lease_until_us),
    )


def redeemed(stored_hash: str | None, args: ClaimArgs) -> ClaimResult:
    """The outcome of a claim that met a redeemed row: the same answer or another."""
    same = stored_hash is not None and hmac.compare_digest(
        stored_hash.encode(), args.response_hash.encode()
    )
    return ClaimResult(ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER)


_CLAIMED: Final = ClaimResult(ClaimOutcome.CLAIMED)
_REVOKED: Final = ClaimResult(ClaimOutcome.REVOKED)
_CLAIMED_STATE: Final = PauseState.CLAIMED.value
_REDEEMED_STATE: Final = PauseState.REDEEMED.value
_REVOKED_STATE: Final = PauseState.REVOKED.value


def found(
    state: object, response_hash: str | None, lease_until_us: int | None, args: ClaimArgs
) -> ClaimResult:
    """The answer of a claim or consume whose statement met a row it left as it was."""
    if state == _CLAIMED_STATE:
        until = None if lease_until_us is None else from_us(lease_until_us)
        return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=until)
    if state == _REDEEMED_STATE:
        return redeemed(response_hash, args)
    if state == _REVOKED_STATE:
        return _REVOKED
    raise unexpected_state(state)


def _key_of(args: ClaimArgs) -> bytes:
    return args.key


class Statements(ABC):
    """The store operations for one family of engines, run on a driver connection."""

    def __init__(self, quoted_table: str) -> None:
        """Prepare the statements for the (already quoted) table name."""
        self.table = quoted_table
        self._stamps = _Stamps()
        t = quoted_table
        # Table names are quoted by the dialect's identifier preparer and every value is a
        # bound parameter, so building statements from f-strings injects nothing.
        # Each needs the privilege its operation needs and changes nothing: check() runs
        # them once so that a read-only user fails at start-up, not at the first answer.
        self._writable_sql = (
            f"INSERT INTO {t} SELECT * FROM {t} WHERE 1 = 0",  # noqa: S608
            f"UPDATE {t} SET state = state WHERE 1 = 0",  # noqa: S608
            f"DELETE FROM {t} WHERE 1 = 0",  # noqa: S608
        )

    @abstractmethod
    def claim_params(self, args: ClaimArgs, stamp: int) -> Any:
        """The driver parameters of the claim statement (for benchmarks as well)."""

    @abstractmethod
    async def claim(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        """Claim ``args.key``: exactly one concurrent caller gets ``CLAIMED``."""

    #: Whether `consume_many()` sends many consumes as one statement (see `connected()`).
    consumes_many: bool = False

    def connected(self, dialect: Dialect) -> None:  # noqa: B027 - most families learn nothing
        """Learn what the server can do, once the store has connected to it."""

    async def consume_many(self, conn: Any, batch: Sequence[ClaimArgs]) -> list[ClaimResult]:
        """`consume()` for each of ``batch`` (distinct keys), in one statement.

        Only where `consumes_many` says so; the results are in ``batch``'s order. Each
        pause is decided as a consume of it alone would be, against its own ``now``.
        """
        rows = await self._consume_rows(conn, sorted(batch, key=_key_of))
        returned = {bytes(row[0]): row for row in rows}
        results = []
        for args in batch:
            _, state, response_hash, lease_id, lease_until_us = returned[args.key]
            # Redeemed by this lease: by this statement (inserted or taken over), or by an
            # earlier attempt of the same consume (or a commit of the same lease), confirmed.
            if state == _REDEEMED_STATE and lease_id == args.lease_id:
                results.append(_CLAIMED)
            else:
                results.append(found(state, response_hash, lease_until_us, args))
        return results

    async def _consume_rows(self, conn: Any, batch: Sequence[ClaimArgs]) -> Sequence[Any]:
        """Consume every pause of ``batch`` (distinct keys, in key order) in one statement.

        Returns one row per pause, as the statement left it: its key, state, response hash,
        lease id and lease end. Only where `consumes_many` says so.
        """
        raise NotImplementedError

    @abstractmethod
    async def consume(self, conn: Any, args: ClaimArgs) -> ClaimResult:
        """Claim and commit ``args.key`` at once: ``CLAIMED`` for one concurrent caller.

        ``CLAIMED`` also confirms a redemption this lease already made.
        """

    @abstractmethod
    async def renew(self, conn: Any, key: bytes, lease_id: str, lease_until_us: int) -> bool:
        """Raise the holder's ``lease_until``; whether ``lease_id`` holds the claim."""

    @abstractmethod
    async def commit(self, conn: Any, key: bytes, lease_id: str, expires_at_us: int) -> bool:
        """Turn the holder's claim into a redemption; confirm one it already made."""

    @abstractmethod
    async def release(self, conn: Any, key: bytes, lease_id: str) -> bool:
        """Delete the lease holder's claim."""

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
        """Revoke an absent or lapsed pause; return the resulting record.

        Raises:
            StoreUnavailable: The row vanished every time before it could be read back.
        """
        for _ in range(_REVOKE_ATTEMPTS):
            record = await self._revoke_once(
                conn,
                key,
                scope_hash=scope_hash,
                name=name,
                expires_at_us=expires_at_us,
                now_us=now_us,
                stamp=self._stamps.next(),
            )
            if record is not None:
                return record
        msg = "the pause's row kept changing while it was being revoked; try again"
        raise StoreUnavailable(msg)

    @abstractmethod
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
        """One revoke: the record it left, or ``None`` if the row was gone when read back.

        Engines whose statement cannot return the row read it right after; a holder's
        release in between deletes it, and `revoke()` makes the revoke again.
        """

    @abstractmethod
    async def status(self, conn: Any, key: bytes) -> PauseRecord | None:
        """The stored record of ``key``."""

    @abstractmethod
    async def purge_batch(self, conn: Any, before_us: int) -> int:
        """Delete at most `PURGE_BATCH` expired rows; return how many."""

    @abstractmethod
    async def check_writable(self, conn: Any) -> None:
        """Run statements that need write privileges on the table and change nothing."""
