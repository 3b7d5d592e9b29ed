"""Where a server keeps its tool calls awaiting approval: a protocol and two stores."""

from __future__ import annotations

import enum
import json
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import attrs

from pausetoken.exceptions import ConfigurationError, StoreUnavailable

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["CallRecord", "CallState", "MemoryToolCalls", "SQLToolCalls", "ToolCalls"]

#: The table `SQLToolCalls` keeps tool calls in.
TABLE: Final = "pausetoken_mcp_calls"
# Call ids are token claims (thread ids), at most 512 characters long.
_MAX_CALL_ID: Final = 512


class CallState(enum.Enum):
    """Where a tool call stands. It only ever moves forward: waiting, decided, ran."""

    #: Minted; the approver has not answered.
    WAITING = "waiting"
    #: The approver approved; the tool has not started.
    APPROVED = "approved"
    #: The approver rejected, or the user declined to open the approval link.
    REJECTED = "rejected"
    #: The tool started under a claim: no other round or worker runs it again.
    STARTED = "started"


@attrs.frozen
class CallRecord:
    """A tool call as the server recorded it.

    Attributes:
        call_id: The call's id (the tokens' thread id).
        state: Where it stands.
        payload: The payload both tokens bind (`approval_payload()`), as JSON data.
        decision: The approver's decision (LangChain's shape), once recorded.
    """

    call_id: str
    state: CallState
    payload: dict[str, Any] = attrs.field(repr=False)
    decision: dict[str, Any] | None = attrs.field(default=None, repr=False)


@runtime_checkable
class ToolCalls(Protocol):
    """The server's record of its tool calls awaiting approval, shared by its workers.

    Each method is atomic per call: ``advance`` is a compare and set on the state, so of
    two workers moving a call on from one state, one wins.
    """

    async def open(self, call_id: str, payload: dict[str, Any]) -> None:
        """Record a new call, ``WAITING``, with the payload its tokens bind."""
        ...

    async def load(self, call_id: str) -> CallRecord | None:
        """The call's record, or ``None``."""
        ...

    async def advance(
        self,
        call_id: str,
        *,
        expected: CallState,
        state: CallState,
        decision: dict[str, Any] | None = None,
    ) -> bool:
        """Move the call from ``expected`` to ``state`` (recording ``decision`` if given).

        Returns:
            Whether it moved (``False``: the call was not in ``expected``).
        """
        ...


class MemoryToolCalls:
    """Tool calls in this process's memory (tests, a single worker).

    Examples:
        >>> import asyncio
        >>> calls = MemoryToolCalls()
        >>> asyncio.run(calls.open("c-1", {"action": {"name": "refund", "args": {}}}))
        >>> start = calls.advance("c-1", expected=CallState.WAITING, state=CallState.APPROVED)
        >>> asyncio.run(start), asyncio.run(calls.load("c-1")).state
        (True, <CallState.APPROVED: 'approved'>)
    """

    def __init__(self) -> None:
        """Create an empty record."""
        self._calls: dict[str, CallRecord] = {}

    async def open(self, call_id: str, payload: dict[str, Any]) -> None:
        """Record a new call (a second call with the same id is refused)."""
        if call_id in self._calls:
            msg = "a tool call with this id is already recorded"
            raise ConfigurationError(msg)
        self._calls[call_id] = CallRecord(
            call_id, CallState.WAITING, json.loads(json.dumps(payload))
        )

    async def load(self, call_id: str) -> CallRecord | None:
        """The call's record, or ``None``."""
        return self._calls.get(call_id)

    async def advance(
        self,
        call_id: str,
        *,
        expected: CallState,
        state: CallState,
        decision: dict[str, Any] | None = None,
    ) -> bool:
        """Move the call on if it is in ``expected``."""
        record = self._calls.get(call_id)
        if record is None or record.state is not expected:
            return False
        self._calls[call_id] = attrs.evolve(
            record, state=state, decision=record.decision if decision is None else decision
        )
        return True


class SQLToolCalls:
    """Tool calls in one SQL table (SQLAlchemy asyncio: SQLite, PostgreSQL, ...).

    The table (``pausetoken_mcp_calls``: call id, state, payload, decision) is created on
    first use. Moving a call on is one ``UPDATE ... WHERE state = :expected``, so two
    workers can never both start the same call.

    Args:
        engine: An ``AsyncEngine`` the application owns (never disposed here), or a URL
            such as ``sqlite+aiosqlite:///calls.db`` (the engine is disposed by `aclose()`).

    Raises:
        ConfigurationError: SQLAlchemy is not installed (the ``sqlite`` or ``postgresql``
            extra).
    """

    def __init__(self, engine: AsyncEngine | str) -> None:
        """Create the store; see the class docstring."""
        try:
            import sqlalchemy as sa  # noqa: PLC0415
            from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415
        except ImportError as exc:  # pragma: no cover - the extras install it
            msg = "SQLToolCalls needs SQLAlchemy: pip install 'pausetoken-mcp[sqlite]'"
            raise ConfigurationError(msg) from exc
        self._sa = sa
        self._owned = isinstance(engine, str)
        self.engine: AsyncEngine = (
            create_async_engine(engine) if isinstance(engine, str) else engine
        )
        metadata = sa.MetaData()
        self.table = sa.Table(
            TABLE,
            metadata,
            sa.Column("call_id", sa.String(_MAX_CALL_ID), primary_key=True),
            sa.Column("state", sa.String(16), nullable=False),
            sa.Column("payload", sa.Text(), nullable=False),
            sa.Column("decision", sa.Text(), nullable=True),
        )
        self._metadata = metadata
        self._created = False

    async def _ensure_table(self) -> None:
        if self._created:
            return
        async with self.engine.begin() as conn:
            await conn.run_sync(self._metadata.create_all)
        self._created = True

    async def open(self, call_id: str, payload: dict[str, Any]) -> None:
        """Insert the call, ``WAITING``.

        Raises:
            ConfigurationError: a call with this id is already recorded.
            StoreUnavailable: the database cannot be reached.
        """
        sa = self._sa
        try:
            await self._ensure_table()
            async with self.engine.begin() as conn:
                await conn.execute(
                    self.table.insert().values(
                        call_id=call_id,
                        state=CallState.WAITING.value,
                        payload=json.dumps(payload, separators=(",", ":")),
                        decision=None,
                    )
                )
        except sa.exc.IntegrityError as exc:
            msg = "a tool call with this id is already recorded"
            raise ConfigurationError(msg) from exc
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(exc) from exc

    async def load(self, call_id: str) -> CallRecord | None:
        """The call's record, or ``None``.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        table = self.table
        try:
            await self._ensure_table()
            async with self.engine.connect() as conn:
                row = (
                    await conn.execute(
                        self._sa.select(table.c.state, table.c.payload, table.c.decision).where(
                            table.c.call_id == call_id
                        )
                    )
                ).first()
        except (self._sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(exc) from exc
        if row is None:
            return None
        state, payload, decision = row
        return CallRecord(
            call_id,
            CallState(state),
            json.loads(payload),
            None if decision is None else json.loads(decision),
        )

    async def advance(
        self,
        call_id: str,
        *,
        expected: CallState,
        state: CallState,
        decision: dict[str, Any] | None = None,
    ) -> bool:
        """One conditional ``UPDATE``: the call moves on only from ``expected``.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        table = self.table
        values: dict[str, Any] = {"state": state.value}
        if decision is not None:
            values["decision"] = json.dumps(decision, separators=(",", ":"))
        try:
            await self._ensure_table()
            async with self.engine.begin() as conn:
                result = await conn.execute(
                    table.update()
                    .where(table.c.call_id == call_id, table.c.state == expected.value)
                    .values(**values)
                )
        except (self._sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(exc) from exc
        return _rowcount(result) == 1

    async def aclose(self) -> None:
        """Dispose of the engine if it was built here from a URL."""
        if self._owned:
            await self.engine.dispose()


def _rowcount(result: Any) -> int:
    return int(result.rowcount)


def _unavailable(exc: Exception) -> StoreUnavailable:
    # A driver that cannot connect (asyncpg) raises OSError past SQLAlchemy. Its message, and
    # that of a failed statement, may quote the statement's parameters (a payload): type only.
    msg = f"the tool call store failed: {type(exc).__name__}"
    return StoreUnavailable(msg)
