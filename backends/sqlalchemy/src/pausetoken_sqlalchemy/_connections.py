"""The driver connections a store holds, checked out of the engine's pool.

Checking a connection in and out of SQLAlchemy's pool costs about 50 µs of Python per
operation, as much as a whole statement on a fast server. The store therefore checks a few
connections out once, switches them to autocommit, and reuses them:

* servers (PostgreSQL, MySQL, MariaDB): up to ``max_connections``, each used by one
  operation at a time; a connection idle for longer than ``ping_after`` seconds is pinged
  before use, so one dropped by the server while idle is replaced without an error;
* SQLite: one connection shared by every operation (aiosqlite runs them one by one on its
  thread, and more connections to one file only wait on each other's locks).

A connection that fails is invalidated (never reused), and every other idle one is pinged
before its next use, so a server restart costs at most the operations that were in flight.
Connections held for longer than ``recycle_after`` go back to the pool (which applies its own
``pool_recycle`` and ``pool_pre_ping``), and `ConnectionSet.close()` gives back the
rest, restoring the isolation level they had.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Final

import attrs
from sqlalchemy.util import greenlet_spawn

from pausetoken.exceptions import StoreUnavailable

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import PoolProxiedConnection
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["ConnectionSet", "Held"]

logger = logging.getLogger("pausetoken.sqlalchemy")

_AUTOCOMMIT: Final = "AUTOCOMMIT"
_SQLITE_SURVIVABLE: Final = (asyncio.CancelledError, TimeoutError, sqlite3.OperationalError)


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


class ConnectionSet:
    """The connections one store holds (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        family: str,
        max_connections: int,
        ping_after: float,
        recycle_after: float,
        label: str,
    ) -> None:
        """Hold up to ``max_connections`` connections of ``engine``.

        Args:
            engine: The engine whose pool connections come from.
            family: ``"postgresql"``, ``"mysql"`` or ``"sqlite"``.
            max_connections: How many connections to hold at most (1 for SQLite).
            ping_after: Ping a connection idle for longer than this many seconds.
            recycle_after: Return a connection held for longer than this to the pool.
            label: The engine URL with its password hidden, for messages.
        """
        self._engine = engine
        self._family = family
        self._shared = family == "sqlite"
        self._max = 1 if self._shared else max_connections
        self._ping_after = ping_after
        self._recycle_after = recycle_after
        self._label = label
        self._idle: list[Held] = []
        self._busy: set[Held] = set()
        self._slots = asyncio.Semaphore(self._max)
        self._shared_conn: Held | None = None
        self._shared_lock = asyncio.Lock()
        self._closed = False

    # -- checking out and in ------------------------------------------------------------

    async def acquire(self) -> Held:
        """A connection ready for one statement.

        Raises:
            StoreUnavailable: The store is closed, or no connection could be opened.
        """
        if self._closed:
            msg = "the token store is closed"
            raise StoreUnavailable(msg)
        if self._shared:
            return await self._acquire_shared()
        await self._slots.acquire()
        try:
            held = await self._take_idle() or await self._checkout()
        except BaseException:
            self._slots.release()
            raise
        self._busy.add(held)
        return held

    async def release(self, held: Held) -> None:
        """Give back a connection after a successful operation."""
        held.last_used = time.monotonic()
        if self._shared:
            return
        self._busy.discard(held)
        try:
            if self._closed or held.last_used - held.checked_out > self._recycle_after:
                await self._return_to_pool(held)
            else:
                self._idle.append(held)
        finally:
            self._slots.release()

    async def discard(self, held: Held, exc: BaseException) -> None:
        """Invalidate a connection an operation failed on; ping the others before reuse.

        The shared SQLite connection survives errors that leave it usable (a lock wait that
        ran out, a cancelled wait: aiosqlite finishes the statement on its thread anyway).
        """
        if self._shared and isinstance(exc, _SQLITE_SURVIVABLE):
            logger.info("operation on %s failed (%s)", self._label, type(exc).__name__)
            return
        logger.warning(
            "connection to %s failed (%s); invalidating it", self._label, type(exc).__name__
        )
        for other in self._idle:
            other.suspect = True
        if self._shared:
            if self._shared_conn is held:
                self._shared_conn = None
        else:
            self._busy.discard(held)
        try:
            await self._invalidate(held, exc)
        finally:
            if not self._shared:
                self._slots.release()

    async def close(self) -> None:
        """Give every idle connection back to the pool; refuse new operations."""
        self._closed = True
        held = [*self._idle, *([self._shared_conn] if self._shared_conn else [])]
        self._idle.clear()
        self._shared_conn = None
        for item in held:
            await self._return_to_pool(item)

    # -- internals ------------------------------------------------------------------------

    async def _acquire_shared(self) -> Held:
        held = self._shared_conn
        if held is not None:
            return held
        async with self._shared_lock:
            if self._shared_conn is None:
                self._shared_conn = await self._checkout()
            return self._shared_conn

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
            if self._family == "postgresql":
                await held.driver.execute("SELECT 1")
            elif self._family == "mysql":
                await held.driver.ping(reconnect=False)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # cancelled mid-ping: drop it, pass it on
                await self._invalidate(held, exc)
                raise
            logger.info(
                "idle connection to %s did not answer a ping (%s); replacing it",
                self._label,
                type(exc).__name__,
            )
            await self._invalidate(held, exc)
            return False
        return True

    async def _checkout(self) -> Held:
        try:
            raw = await self._engine.raw_connection()
        except Exception as exc:
            msg = f"cannot connect to the token store at {self._label} ({type(exc).__name__})"
            raise StoreUnavailable(msg) from exc
        try:
            restore = await greenlet_spawn(self._to_autocommit, raw)
        except BaseException as exc:
            # Cancelled (the operation's timeout) or failed: never leak it from the pool.
            await self._invalidate_raw(raw, exc)
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
        # asyncpg connections never open implicit transactions; the others must be told.
        if self._family == "postgresql":
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
            await self._invalidate_raw(held.raw, exc)

    async def _invalidate(self, held: Held, exc: BaseException) -> None:
        await self._invalidate_raw(held.raw, exc)

    async def _invalidate_raw(self, raw: PoolProxiedConnection, exc: BaseException) -> None:
        cause = exc if isinstance(exc, Exception) else None
        try:
            await greenlet_spawn(raw.invalidate, cause)
        except Exception as close_exc:  # noqa: BLE001 - the connection is gone either way
            logger.debug(
                "invalidating a connection to %s raised %s",
                self._label,
                type(close_exc).__name__,
            )
