"""The driver connections a store holds, checked out of the engine's pool.

Checking a connection in and out of SQLAlchemy's pool for every operation costs as much
Python as a whole statement on a fast server (``benchmarks/stores.py`` compares the store
with the raw driver and with SQLAlchemy Core doing just that). The store therefore checks
connections out once, switches them to autocommit, and reuses them. Two ways, chosen by
the engine family (`EngineFamily.hold_connections()`):

* `PooledConnections` (PostgreSQL, MySQL, MariaDB): up to ``max_connections``, each used
  by one operation at a time; a connection idle for longer than ``ping_after`` seconds is
  pinged before use, so one dropped by the server while idle is replaced without an error;
* `SharedConnection` (SQLite): one connection shared by every operation (aiosqlite runs
  them one by one on its thread, and more connections to one file only wait on each
  other's locks).

A connection that fails is invalidated (never reused), and every other idle one is pinged
before its next use, so a server restart costs at most the operations that were in flight.
A connection the store gave up waiting on (its deadline passed, or it was cancelled) is closed
at once when it is invalidated (`EngineFamily.abort()`), whether the store invalidates it or
SQLAlchemy's pool does (a ``pool_pre_ping`` cut short): SQLAlchemy would otherwise first try a
graceful close, which on a server that does not answer (a network partition) waits 2 s more,
beyond the operation's deadline. `watch_invalidations()` and `store_work()` arrange it.
Connections held for longer than ``recycle_after`` go back to the pool (which applies its own
``pool_recycle`` and ``pool_pre_ping``), and `ConnectionSet.close()` gives back the
rest, restoring the isolation level they had.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

import attrs
from sqlalchemy import event
from sqlalchemy.util import greenlet_spawn

from pausetoken.exceptions import StoreUnavailable

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sqlalchemy.engine.interfaces import PoolProxiedConnection
    from sqlalchemy.ext.asyncio import AsyncEngine
    from sqlalchemy.pool import ConnectionPoolEntry

    from pausetoken_sqlalchemy._family import EngineFamily

__all__ = [
    "ConnectionSet",
    "Held",
    "PooledConnections",
    "SharedConnection",
    "store_work",
    "watch_invalidations",
]

logger = logging.getLogger("pausetoken.sqlalchemy")

_AUTOCOMMIT: Final = "AUTOCOMMIT"

# The engine family and label of the store whose work runs in this context. The pool
# announces every invalidation to `_abort_given_up()`; only those the store's own work
# causes are its business, not those of an application sharing the engine.
_WORK_OF: ContextVar[tuple[EngineFamily, str] | None] = ContextVar(
    "pausetoken_store_work", default=None
)


def watch_invalidations(engine: AsyncEngine) -> None:
    """Have the store's connections that it gave up waiting on closed at once.

    Listens to the pool's ``invalidate`` event (once per engine, however many stores share
    it); the listener acts only within `store_work()`.
    """
    target = engine.sync_engine
    if not event.contains(target, "invalidate", _abort_given_up):
        event.listen(target, "invalidate", _abort_given_up)


@contextlib.contextmanager
def store_work(family: EngineFamily, label: str) -> Iterator[None]:
    """Mark what runs inside as the store's own work, for `watch_invalidations()`.

    A connection the work invalidates after giving up waiting on it (a timeout, a
    cancellation) is then closed at once, without a graceful close. Wraps what may
    invalidate a connection (checking one out of the pool, which pings it first; the schema
    step; an invalidation), not the statements themselves.
    """
    token = _WORK_OF.set((family, label))
    try:
        yield
    finally:
        _WORK_OF.reset(token)


def _gave_up_waiting(exc: BaseException | None) -> bool:
    """Whether ``exc`` says the caller stopped waiting on the server (timeout, cancellation).

    The connection may then be in the middle of a statement on a server that does not
    answer, and a graceful close would wait on it as long again.
    """
    return exc is not None and (isinstance(exc, TimeoutError) or not isinstance(exc, Exception))


def _abort_given_up(
    dbapi_connection: Any, record: ConnectionPoolEntry, exception: BaseException | None
) -> None:
    """The pool's ``invalidate`` listener: runs before SQLAlchemy closes the connection."""
    del dbapi_connection
    work = _WORK_OF.get()
    if work is None or not _gave_up_waiting(exception):
        return
    family, label = work
    try:
        driver = record.driver_connection
        if driver is not None:
            family.abort(driver)
    except Exception as exc:  # noqa: BLE001 - the invalidation closes it anyway, just slower
        logger.debug("invalidating a connection to %s raised %s", label, type(exc).__name__)


@attrs.define(eq=False)
class Held:
    """One connection the store holds.

    Attributes:
        raw: SQLAlchemy's pool-proxied connection (returned or invalidated through it).
        driver: The driver's own connection the statements run on.
        restore_isolation: Whether its isolation level must be reset on return.
        checked_out: ``time.monotonic()`` when it left the pool.
        last_used: ``time.monotonic()`` when an operation last finished on it.
        suspect: Ping before the next use (another connection failed meanwhile).
    """

    raw: PoolProxiedConnection
    driver: Any
    restore_isolation: bool
    checked_out: float
    last_used: float
    suspect: bool = False


class ConnectionSet(ABC):
    """The connections one store holds (see the module docstring)."""

    def __init__(self, engine: AsyncEngine, *, family: EngineFamily, label: str) -> None:
        """Hold connections of ``engine``.

        Args:
            engine: The engine whose pool connections come from.
            family: The engine family (how to ping, whether the driver autocommits).
            label: The engine URL with its password hidden, for messages.
        """
        self._engine = engine
        self._family = family
        self._label = label
        self._closed = False
        watch_invalidations(engine)

    @abstractmethod
    async def acquire(self) -> Held:
        """A connection ready for one statement.

        Raises:
            StoreUnavailable: The store is closed, or no connection could be opened.
        """

    @abstractmethod
    async def release(self, held: Held) -> None:
        """Give back a connection after a successful operation."""

    @abstractmethod
    async def discard(self, held: Held, exc: BaseException) -> None:
        """Invalidate a connection an operation failed on (unless it survives ``exc``)."""

    @abstractmethod
    async def close(self) -> None:
        """Give every idle connection back to the pool; refuse new operations."""

    # -- what both ways share -----------------------------------------------------------

    def _refuse_when_closed(self) -> None:
        if self._closed:
            msg = "the token store is closed"
            raise StoreUnavailable(msg)

    def _log_failure(self, exc: BaseException) -> None:
        logger.warning(
            "connection to %s failed (%s); invalidating it", self._label, type(exc).__name__
        )

    async def _checkout(self) -> Held:
        try:
            with store_work(self._family, self._label):  # the pool's pre-ping may invalidate one
                raw = await self._engine.raw_connection()
        except Exception as exc:
            msg = f"cannot connect to the token store at {self._label} ({type(exc).__name__})"
            raise StoreUnavailable(msg) from exc
        try:
            restore = await greenlet_spawn(self._to_autocommit, raw)
        except BaseException as exc:
            # Cancelled (the operation's timeout) or failed: never leak it from the pool.
            await self._invalidate(raw, exc)
            if not isinstance(exc, Exception):
                raise
            msg = f"cannot prepare a connection to {self._label} ({type(exc).__name__})"
            raise StoreUnavailable(msg) from exc
        now = time.monotonic()
        return Held(
            raw=raw,
            driver=raw.driver_connection,
            restore_isolation=restore,
            checked_out=now,
            last_used=now,
        )

    def _to_autocommit(self, raw: PoolProxiedConnection) -> bool:
        if self._family.driver_autocommits:
            return False
        dialect = self._engine.dialect
        dbapi_conn = raw.dbapi_connection
        if dialect.get_isolation_level(dbapi_conn) == _AUTOCOMMIT:  # type: ignore[arg-type]
            return False
        dialect.set_isolation_level(dbapi_conn, _AUTOCOMMIT)  # type: ignore[arg-type]
        return True

    def _close_raw(self, held: Held) -> None:
        if held.restore_isolation and held.raw.dbapi_connection is not None:
            self._engine.dialect.reset_isolation_level(held.raw.dbapi_connection)
        held.raw.close()

    async def _return_to_pool(self, held: Held) -> None:
        try:
            await greenlet_spawn(self._close_raw, held)
        except Exception as exc:  # noqa: BLE001 - logged; the connection is dropped instead
            logger.info(
                "could not return a connection to %s cleanly (%s); invalidating it",
                self._label,
                type(exc).__name__,
            )
            await self._invalidate(held.raw, exc)

    async def _invalidate(self, raw: PoolProxiedConnection, exc: BaseException) -> None:
        try:
            with store_work(self._family, self._label):
                await greenlet_spawn(raw.invalidate, exc)
        except Exception as close_exc:  # noqa: BLE001 - the connection is gone either way
            logger.debug(
                "invalidating a connection to %s raised %s",
                self._label,
                type(close_exc).__name__,
            )


class SharedConnection(ConnectionSet):
    """One connection every operation shares (SQLite)."""

    def __init__(self, engine: AsyncEngine, *, family: EngineFamily, label: str) -> None:
        """Hold one connection of ``engine`` (see `ConnectionSet`)."""
        super().__init__(engine, family=family, label=label)
        self._held: Held | None = None
        self._opening = asyncio.Lock()

    async def acquire(self) -> Held:
        """The shared connection, opened by the first operation that needs it."""
        self._refuse_when_closed()
        held = self._held
        if held is not None:
            return held
        async with self._opening:
            if self._held is None:
                self._held = await self._checkout()
            return self._held

    async def release(self, held: Held) -> None:
        """Note the connection's last use; it stays shared."""
        held.last_used = time.monotonic()

    async def discard(self, held: Held, exc: BaseException) -> None:
        """Invalidate the connection, unless the family says it survives ``exc``.

        SQLite's connection survives errors that leave it usable (a lock wait that ran out,
        a cancelled wait: aiosqlite finishes the statement on its thread anyway).
        """
        if self._family.connection_survives(exc):
            logger.info("operation on %s failed (%s)", self._label, type(exc).__name__)
            return
        self._log_failure(exc)
        if self._held is held:
            self._held = None
        await self._invalidate(held.raw, exc)

    async def close(self) -> None:
        """Give the connection back to the pool; refuse new operations."""
        self._closed = True
        held, self._held = self._held, None
        if held is not None:
            await self._return_to_pool(held)


class PooledConnections(ConnectionSet):
    """Up to ``max_connections`` connections, one operation on each at a time (servers)."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        family: EngineFamily,
        label: str,
        max_connections: int,
        ping_after: float,
        recycle_after: float,
    ) -> None:
        """Hold up to ``max_connections`` connections of ``engine``.

        Args:
            engine: The engine whose pool connections come from.
            family: The engine family (how to ping, whether the driver autocommits).
            label: The engine URL with its password hidden, for messages.
            max_connections: How many connections to hold at most.
            ping_after: Ping a connection idle for longer than this many seconds.
            recycle_after: Return a connection held for longer than this to the pool.
        """
        super().__init__(engine, family=family, label=label)
        self._ping_after = ping_after
        self._recycle_after = recycle_after
        self._idle: list[Held] = []
        self._busy: set[Held] = set()
        self._slots = asyncio.Semaphore(max_connections)

    async def acquire(self) -> Held:
        """An idle connection (pinged if it idled too long or another one failed), or a new one."""
        self._refuse_when_closed()
        await self._slots.acquire()
        try:
            held = await self._take_idle() or await self._checkout()
        except BaseException:
            self._slots.release()
            raise
        self._busy.add(held)
        return held

    async def release(self, held: Held) -> None:
        """Keep the connection for the next operation, or return it once held too long."""
        held.last_used = time.monotonic()
        self._busy.discard(held)
        try:
            if self._closed or held.last_used - held.checked_out > self._recycle_after:
                await self._return_to_pool(held)
            else:
                self._idle.append(held)
        finally:
            self._slots.release()

    async def discard(self, held: Held, exc: BaseException) -> None:
        """Invalidate the connection; ping every idle one before its next use."""
        self._log_failure(exc)
        for other in self._idle:
            other.suspect = True
        self._busy.discard(held)
        try:
            await self._invalidate(held.raw, exc)
        finally:
            self._slots.release()

    async def close(self) -> None:
        """Give every idle connection back to the pool; refuse new operations."""
        self._closed = True
        idle, self._idle = self._idle, []
        for held in idle:
            await self._return_to_pool(held)

    async def _take_idle(self) -> Held | None:
        now = time.monotonic()
        while self._idle:
            held = self._idle.pop()
            if not held.suspect and now - held.last_used <= self._ping_after:
                return held
            if await self._ping(held):
                held.suspect = False
                return held
        return None

    async def _ping(self, held: Held) -> bool:
        try:
            await self._family.ping(held.driver)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # cancelled mid-ping: drop it, pass it on
                await self._invalidate(held.raw, exc)
                raise
            logger.info(
                "idle connection to %s did not answer a ping (%s); replacing it",
                self._label,
                type(exc).__name__,
            )
            await self._invalidate(held.raw, exc)
            return False
        return True
