"""Where an application keeps its paused runs' ``RunState``: a protocol and two stores."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from pausetoken.exceptions import ConfigurationError, StoreUnavailable

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["MemoryRunStates", "RunStates", "SQLRunStates", "state_digest"]

#: The table `SQLRunStates` keeps run states in.
TABLE: Final = "pausetoken_openai_agents_runs"
# Run ids are token claims, at most 512 characters long.
_MAX_RUN_ID: Final = 512


def state_digest(state: str) -> str:
    """The digest a token binds for a stored run state: sha256 hex of its exact text.

    Examples:
        >>> state_digest("{}")
        '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'
    """
    return hashlib.sha256(state.encode("utf-8", "surrogatepass")).hexdigest()


@runtime_checkable
class RunStates(Protocol):
    """The application's store of serialized ``RunState`` text, one per run id.

    The adapter never hands a run state to a client: it is saved here when the run
    pauses, read here when a decision comes back, and replaced here (compare and set on
    its digest) when the resumed run returns.
    """

    async def load(self, run_id: str) -> str | None:
        """The stored state of ``run_id`` (``RunState.to_string()``), or ``None``."""
        ...

    async def save(self, run_id: str, state: str, *, replaces: str | None) -> bool:
        """Store ``state`` for ``run_id`` if the stored one is the one expected.

        Args:
            run_id: The run.
            state: The new state's text.
            replaces: The `state_digest()` of the state it replaces, or ``None`` when
                the run must not have a state yet.

        Returns:
            Whether it was stored (``False``: another state was there).
        """
        ...


class MemoryRunStates:
    """Run states in this process's memory (tests, a single worker).

    Examples:
        >>> import asyncio
        >>> states = MemoryRunStates()
        >>> asyncio.run(states.save("run-1", "{}", replaces=None))
        True
        >>> asyncio.run(states.save("run-1", "{}", replaces=None))
        False
    """

    def __init__(self) -> None:
        """Create an empty store."""
        self._states: dict[str, str] = {}

    async def load(self, run_id: str) -> str | None:
        """The stored state of ``run_id``, or ``None``."""
        return self._states.get(run_id)

    async def save(self, run_id: str, state: str, *, replaces: str | None) -> bool:
        """Store ``state`` if the stored one has the digest ``replaces`` (or none is stored)."""
        current = self._states.get(run_id)
        if (current is None) != (replaces is None):
            return False
        if current is not None and state_digest(current) != replaces:
            return False
        self._states[run_id] = state
        return True


class SQLRunStates:
    """Run states in one SQL table (SQLAlchemy asyncio: SQLite, PostgreSQL, ...).

    The table (``pausetoken_openai_agents_runs``: run id, digest, state) is created on
    first use. Replacing a state is one ``UPDATE ... WHERE digest = :replaces``, so two
    workers can never both move a run on from the same state.

    Args:
        engine: An ``AsyncEngine`` the application owns (never disposed here), or a URL
            such as ``sqlite+aiosqlite:///runs.db`` (the engine is disposed by `aclose()`).

    Raises:
        ConfigurationError: SQLAlchemy is not installed (the ``sqlite`` or ``postgresql``
            extra).
    """

    def __init__(self, engine: AsyncEngine | str) -> None:
        """Create the store; see the class docstring."""
        try:
            import sqlalchemy as sa  # noqa: PLC0415
            from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415
        except ImportError as exc:
            msg = (
                "SQLRunStates needs SQLAlchemy: pip install "
                "'pausetoken-openai-agents[sqlite]' (or [postgresql])"
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
            sa.Column("run_id", sa.String(_MAX_RUN_ID), primary_key=True),
            sa.Column("digest", sa.String(64), nullable=False),
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

    async def load(self, run_id: str) -> str | None:
        """The stored state of ``run_id``, or ``None``.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        try:
            await self._ensure_table()
            async with self.engine.connect() as conn:
                found = await conn.scalar(
                    self._sa.select(self.table.c.state).where(self.table.c.run_id == run_id)
                )
        except (self._sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(exc) from exc
        return None if found is None else str(found)

    async def save(self, run_id: str, state: str, *, replaces: str | None) -> bool:
        """Insert (``replaces=None``) or replace the state whose digest is ``replaces``.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        sa, table = self._sa, self.table
        digest = state_digest(state)
        try:
            await self._ensure_table()
            async with self.engine.begin() as conn:
                if replaces is None:
                    try:
                        async with conn.begin_nested():
                            await conn.execute(
                                table.insert().values(run_id=run_id, digest=digest, state=state)
                            )
                    except sa.exc.IntegrityError:
                        return False
                    return True
                result = await conn.execute(
                    table.update()
                    .where(table.c.run_id == run_id, table.c.digest == replaces)
                    .values(digest=digest, state=state)
                )
                return bool(_rowcount(result) == 1)
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(exc) from exc

    async def aclose(self) -> None:
        """Dispose of the engine if it was built here from a URL."""
        if self._owned:
            await self.engine.dispose()


def _rowcount(result: Any) -> int:
    return int(result.rowcount)


def _unavailable(exc: Exception) -> StoreUnavailable:
    # A driver that cannot connect (asyncpg) raises OSError past SQLAlchemy. Its message, and
    # that of a failed statement, may quote the statement's parameters (a run state): type only.
    msg = f"the run state store failed: {type(exc).__name__}"
    return StoreUnavailable(msg)
