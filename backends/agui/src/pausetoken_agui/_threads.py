"""Where an AG-UI agent keeps what each thread waits on: a protocol and two stores.

AG-UI carries interrupts and resume entries but keeps no state of its own: the agent server
decides what a thread waits on. A `ThreadState` records it (the thread's current checkpoint,
the interrupts pending there with the payloads shown, and the outcomes of the last answers),
and a `ThreadStates` store replaces it only by compare and set on the checkpoint id, so two
workers can never both move a thread on from the same checkpoint.
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import attrs

from pausetoken.exceptions import ConfigurationError, StoreUnavailable

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "KEPT_OUTCOMES",
    "Answered",
    "MemoryThreadStates",
    "SQLThreadStates",
    "ThreadState",
    "ThreadStates",
    "Waiting",
    "new_checkpoint_id",
]

#: The table `SQLThreadStates` keeps thread states in.
TABLE: Final = "pausetoken_agui_threads"
#: How many answered pauses a thread keeps the outcome of, for idempotent retries.
KEPT_OUTCOMES: Final = 16
# Thread ids are token claims, at most 512 characters long.
_MAX_THREAD_ID: Final = 512


def new_checkpoint_id() -> str:
    """A fresh checkpoint id: 128 random bits, so a thread never returns to an old one."""
    return secrets.token_urlsafe(16)


@attrs.frozen
class Waiting:
    """One interrupt a thread waits on, as the agent raised it.

    Attributes:
        interrupt_id: The interrupt's id (AG-UI's ``Interrupt.id``, the token's interrupt id).
        name: The name of the `Resumable` kind it was raised with.
        value: The payload shown, as JSON data (the token binds its hash).
        reason: AG-UI's ``Interrupt.reason``.
        message: AG-UI's ``Interrupt.message``, if any.
        tool_call_id: The tool call it concerns, if any.
        principal: The only principal allowed to answer, if any.
    """

    interrupt_id: str
    name: str
    value: Any = attrs.field(repr=False)
    reason: str
    message: str | None = attrs.field(default=None, repr=False)
    tool_call_id: str | None = None
    principal: str | None = attrs.field(default=None, repr=False)


@attrs.frozen
class Answered:
    """The stored outcome of one answered pause, returned to an idempotent retry.

    Attributes:
        checkpoint_id: The checkpoint whose interrupts were answered.
        next_checkpoint_id: The checkpoint the resumed run left the thread at.
        run_id: The run that answered them.
        result: The resumed run's result (AG-UI's ``RunFinishedEvent.result``).
        interrupts: What the resumed run waited on when it finished (empty: it completed).
    """

    checkpoint_id: str
    next_checkpoint_id: str
    run_id: str
    result: Any = attrs.field(repr=False)
    interrupts: tuple[Waiting, ...] = ()


@attrs.frozen
class ThreadState:
    """What a thread waits on now, and the outcomes of its last answered pauses.

    Attributes:
        checkpoint_id: The thread's current checkpoint (a token's checkpoint id); a new one
            every time the thread moves on.
        run_id: The run that left the thread here.
        waiting: The interrupts pending at this checkpoint.
        answered: The outcomes of the last `KEPT_OUTCOMES` answered pauses, oldest first.
        resuming: While a resumed run runs, the checkpoint it answers (its state is kept
            until the run returns, to restore it if the run fails); ``None`` otherwise.
    """

    checkpoint_id: str
    run_id: str
    waiting: tuple[Waiting, ...] = ()
    answered: tuple[Answered, ...] = ()
    resuming: ThreadState | None = attrs.field(default=None, repr=False)

    def find(self, interrupt_id: str) -> Waiting | None:
        """The pending interrupt with this id, if there is one."""
        return next((w for w in self.waiting if w.interrupt_id == interrupt_id), None)

    def outcome(self, checkpoint_id: str) -> Answered | None:
        """The stored outcome of the pause at ``checkpoint_id``, if it is still kept."""
        return next((a for a in self.answered if a.checkpoint_id == checkpoint_id), None)

    def to_text(self) -> str:
        """The state as JSON text (what a store keeps)."""
        return json.dumps(attrs.asdict(self, recurse=True), sort_keys=True, allow_nan=False)

    @classmethod
    def from_text(cls, text: str) -> ThreadState:
        """Read a state written by `to_text()`.

        Raises:
            StoreUnavailable: the text is not a thread state (named by type only).
        """
        try:
            return _state(json.loads(text))
        except (ValueError, TypeError, KeyError) as exc:
            msg = f"a stored thread state does not read back ({type(exc).__name__})"
            raise StoreUnavailable(msg) from exc


def _waiting(data: dict[str, Any]) -> Waiting:
    return Waiting(**data)


def _state(data: dict[str, Any]) -> ThreadState:
    resuming = data.get("resuming")
    return ThreadState(
        checkpoint_id=data["checkpoint_id"],
        run_id=data["run_id"],
        waiting=tuple(_waiting(w) for w in data["waiting"]),
        answered=tuple(
            Answered(
                checkpoint_id=a["checkpoint_id"],
                next_checkpoint_id=a["next_checkpoint_id"],
                run_id=a["run_id"],
                result=a["result"],
                interrupts=tuple(_waiting(w) for w in a["interrupts"]),
            )
            for a in data["answered"]
        ),
        resuming=None if resuming is None else _state(resuming),
    )


@runtime_checkable
class ThreadStates(Protocol):
    """The application's store of thread states, one per thread id.

    The adapter writes a state when a run pauses, when a resumed run starts (a fence that
    moves the thread off the answered checkpoint) and when it returns; the checkpoint
    reader only reads.
    """

    async def load(self, thread_id: str) -> ThreadState | None:
        """The thread's state, or ``None`` for a thread that never paused."""
        ...

    async def save(self, thread_id: str, state: ThreadState, *, replaces: str | None) -> bool:
        """Store ``state`` if the stored one is at the checkpoint expected.

        Args:
            thread_id: The thread.
            state: The new state.
            replaces: The checkpoint id of the state it replaces, or ``None`` when the
                thread must have no state yet.

        Returns:
            Whether it was stored (``False``: the thread is at another checkpoint).
        """
        ...


class MemoryThreadStates:
    """Thread states in this process's memory (tests, a single worker).

    Examples:
        >>> import asyncio
        >>> states = MemoryThreadStates()
        >>> asyncio.run(states.save("t-1", ThreadState("c-1", "r-1"), replaces=None))
        True
        >>> asyncio.run(states.save("t-1", ThreadState("c-2", "r-2"), replaces="c-0"))
        False
    """

    def __init__(self) -> None:
        """Create an empty store."""
        self._states: dict[str, str] = {}

    async def load(self, thread_id: str) -> ThreadState | None:
        """The thread's state, or ``None``."""
        text = self._states.get(thread_id)
        return None if text is None else ThreadState.from_text(text)

    async def save(self, thread_id: str, state: ThreadState, *, replaces: str | None) -> bool:
        """Store ``state`` if the stored one is at ``replaces`` (or none is stored)."""
        current = await self.load(thread_id)
        if (current is None) != (replaces is None):
            return False
        if current is not None and current.checkpoint_id != replaces:
            return False
        self._states[thread_id] = state.to_text()
        return True


class SQLThreadStates:
    """Thread states in one SQL table (SQLAlchemy asyncio: SQLite, PostgreSQL, ...).

    The table (``pausetoken_agui_threads``: thread id, checkpoint id, state) is created on
    first use. Replacing a state is one ``UPDATE ... WHERE checkpoint_id = :replaces``, so
    two workers can never both move a thread on from the same checkpoint.

    Args:
        engine: An ``AsyncEngine`` the application owns (never disposed here), or a URL
            such as ``sqlite+aiosqlite:///threads.db`` (the engine is disposed by `aclose()`).

    Raises:
        ConfigurationError: SQLAlchemy is not installed (the ``sqlite`` or ``postgresql``
            extra).
    """

    def __init__(self, engine: AsyncEngine | str) -> None:
        """Create the store; see the class docstring."""
        try:
            import sqlalchemy as sa  # noqa: PLC0415
            from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415
        except ImportError as exc:  # pragma: no cover - the test environment has it
            msg = (
                "SQLThreadStates needs SQLAlchemy: pip install "
                "'pausetoken-agui[sqlite]' (or [postgresql])"
            )
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
            sa.Column("thread_id", sa.String(_MAX_THREAD_ID), primary_key=True),
            sa.Column("checkpoint_id", sa.String(64), nullable=False),
            sa.Column("state", sa.Text(), nullable=False),
        )
        self._metadata = metadata
        self._created = False

    async def _ensure_table(self) -> None:
        if self._created:
            return
        async with self.engine.begin() as conn:
            await conn.run_sync(self._metadata.create_all)
        self._created = True

    async def load(self, thread_id: str) -> ThreadState | None:
        """The thread's state, or ``None``.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        try:
            await self._ensure_table()
            async with self.engine.connect() as conn:
                found = await conn.scalar(
                    self._sa.select(self.table.c.state).where(self.table.c.thread_id == thread_id)
                )
        except (self._sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(exc) from exc
        return None if found is None else ThreadState.from_text(str(found))

    async def save(self, thread_id: str, state: ThreadState, *, replaces: str | None) -> bool:
        """Insert (``replaces=None``) or replace the state at checkpoint ``replaces``.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        sa, table = self._sa, self.table
        values = {"checkpoint_id": state.checkpoint_id, "state": state.to_text()}
        try:
            await self._ensure_table()
            async with self.engine.begin() as conn:
                if replaces is None:
                    try:
                        async with conn.begin_nested():
                            await conn.execute(table.insert().values(thread_id=thread_id, **values))
                    except sa.exc.IntegrityError:
                        return False
                    return True
                result = await conn.execute(
                    table.update()
                    .where(table.c.thread_id == thread_id, table.c.checkpoint_id == replaces)
                    .values(**values)
                )
                return _rowcount(result) == 1
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(exc) from exc

    async def aclose(self) -> None:
        """Dispose of the engine if it was built here from a URL."""
        if self._owned:
            await self.engine.dispose()


def _rowcount(result: Any) -> int:
    return int(result.rowcount)


def _unavailable(exc: Exception) -> StoreUnavailable:
    # A driver that cannot connect raises OSError past SQLAlchemy. Its message, and that of
    # a failed statement, may quote the statement's parameters (payloads): type only.
    msg = f"the thread state store failed: {type(exc).__name__}"
    return StoreUnavailable(msg)
