"""``SQLAlchemyStore``: the token store on SQLite, PostgreSQL, MySQL and MariaDB.

The store itself is the same on every engine; what differs is asked of its engine family
(``_family.py``: ``_sqlite.py``, ``_postgresql.py``, ``_mysql.py``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self, TypeVar

from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import AsyncEngine

from pausetoken.exceptions import (
    ConfigurationError,
    PauseTokenError,
    StoreMisconfigured,
    StoreUnavailable,
)
from pausetoken.plugins import Deadlines, GroupCommit
from pausetoken_sqlalchemy._engines import (
    default_max_connections,
    family_for_url,
    family_of,
    redacted,
    split_options,
)
from pausetoken_sqlalchemy._failures import TABLE_MISSING
from pausetoken_sqlalchemy._schema import (
    DEFAULT_TABLE_NAME,
    Schema,
    make_schema_table,
    make_table,
)
from pausetoken_sqlalchemy._statements import PURGE_BATCH, ClaimArgs, encode_key, to_us

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from datetime import datetime

    from sqlalchemy import Table
    from sqlalchemy.engine import URL

    from pausetoken.plugins import ClaimRequest, ClaimResult, PauseRecord
    from pausetoken_sqlalchemy._connections import Held

__all__ = ["DEFAULT_URL", "SQLAlchemyStore"]

logger = logging.getLogger("pausetoken.sqlalchemy")

T = TypeVar("T")

#: The embedded default: a SQLite file in the working directory.
DEFAULT_URL: Final = "sqlite+aiosqlite:///pausetoken.db"
#: Consumes one statement sends at most. Small enough that under load batches alternate:
#: one runs on the server while the callers of the one before check their next tokens
#: (benchmarks/consume.py: 8 beat 4, 6 and 16 at concurrency 16 on PostgreSQL).
_BATCH: Final = 8


class SQLAlchemyStore:
    """A [`TokenStore`][pausetoken.TokenStore] in one SQL table, on SQLAlchemy 2 asyncio.

    Each operation is one atomic statement on a connection held in autocommit mode:
    ``INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING`` on PostgreSQL and SQLite,
    ``INSERT ... ON DUPLICATE KEY UPDATE`` on MySQL and MariaDB (the "SQLAlchemy store" page of
    the documentation shows them). The table (and a schema-version marker) is created on
    first use, by `ensure_schema()` or by `check()`; a table the marker says was created is
    never created again.

    Examples:
        >>> store = SQLAlchemyStore.from_url("sqlite+aiosqlite:///pausetoken.db")
        >>> # or share the application's engine (the store never disposes it):
        >>> # store = SQLAlchemyStore(engine)

    Args:
        engine: An `AsyncEngine` on ``sqlite+aiosqlite``,
            ``postgresql+asyncpg`` or ``mysql+asyncmy`` / ``mariadb+asyncmy``. The store
            never disposes an engine it was handed.
        table_name: The redemptions table (default ``pausetoken_redemptions``).
        max_connections: Connections the store holds at most (default: the pool size of an
            engine it created, half the pool size of an engine it was handed; always 1 for
            SQLite, which shares one connection). Its other work (schema creation) checks a
            connection out for a moment, so leave some ``max_overflow`` when they are equal.
        timeout: Seconds one operation may take before it fails with ``StoreUnavailable``,
            everything included: waiting for a connection or opening one, the schema step
            before the first operation, and the statement.
        ping_after: Ping a held connection idle for longer than this before reusing it.
        recycle_after: Give a held connection back to the pool after this many seconds.

    Raises:
        ConfigurationError: The engine uses another driver, or an option is invalid.
    """

    #: The store API this class implements, as a literal: the registry refuses it under a
    #: pausetoken that does not drive store API 2 (a constant imported from the installed
    #: core would always match it).
    api_version: ClassVar[int] = 2

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        table_name: str = DEFAULT_TABLE_NAME,
        max_connections: int | None = None,
        timeout: float = 10.0,
        ping_after: float = 30.0,
        recycle_after: float = 1800.0,
    ) -> None:
        """Create a store on ``engine`` (see the class docstring for the arguments)."""
        handed: object = engine
        if not isinstance(handed, AsyncEngine):
            msg = "SQLAlchemyStore needs an AsyncEngine (sqlalchemy.ext.asyncio)"
            raise ConfigurationError(msg)
        family = family_of(engine)
        family.require_support()
        if timeout <= 0 or ping_after < 0 or recycle_after <= 0:
            msg = "timeout and recycle_after must be positive, ping_after not negative"
            raise ConfigurationError(msg)
        if max_connections is None:
            max_connections = default_max_connections(engine, owned=False)
        if max_connections < 1:
            msg = "max_connections must be at least 1"
            raise ConfigurationError(msg)
        self._engine = engine
        self._family = family
        self._label = redacted(engine.url)
        self._timeout = timeout
        self._deadlines = Deadlines(timeout)
        self._owns_engine = False
        self._metadata = MetaData()
        self._table: Table = make_table(table_name, self._metadata)
        self._schema = Schema(
            family,
            self._table,
            make_schema_table(self._metadata),
            label=self._label,
            lock_wait=timeout,  # the operation's timeout bounds it anyway
        )
        quoted = engine.dialect.identifier_preparer.format_table(self._table)
        self._statements = family.statements(quoted)
        self._connections = family.hold_connections(
            engine,
            label=self._label,
            max_connections=max_connections,
            ping_after=ping_after,
            recycle_after=recycle_after,
        )
        self._schema_ready = False
        self._schema_lock = asyncio.Lock()
        self._closed = False
        # Consumes waiting at one moment go out as one statement where the server can
        # (`Statements.consumes_many`), at most `_BATCH` in one and on at most a quarter of
        # the connections.
        self._consumes: GroupCommit[ClaimArgs, ClaimResult] = GroupCommit(
            self._consume_many,
            key=_key_of,
            max_batch=_BATCH,
            max_in_flight=max(1, max_connections // 4),
        )

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_url(cls, url: str | URL = DEFAULT_URL, **options: Any) -> SQLAlchemyStore:
        """Open a store (and its own engine) from a URL.

        Pool options come from the URL query or keyword arguments (``pool_size``,
        ``max_overflow``, ``pool_timeout``, ``pool_recycle``, ``pool_pre_ping``), and so do
        the store's own (``table_name``, ``max_connections``, ``timeout``, ``ping_after``,
        ``recycle_after``); other keyword arguments go to
        `create_async_engine()`. A URL without a driver gets
        the supported one (``postgresql://`` means ``postgresql+asyncpg://``).

        Args:
            url: For example ``sqlite+aiosqlite:///pausetoken.db``,
                ``postgresql+asyncpg://user@host/db`` or ``mysql+asyncmy://user@host/db``.
            **options: Store, pool and engine options.

        Returns:
            The store; `aclose()` disposes the engine it created.

        Raises:
            BackendNotInstalled: The driver for the URL is not installed.
            ConfigurationError: The URL or an option is invalid.
        """
        parsed, family = family_for_url(url)
        family.require_driver()
        cleaned, store_options, engine_options = split_options(parsed, options)
        engine = family.create_engine(cleaned, engine_options, label=redacted(cleaned))
        store_options.setdefault("max_connections", default_max_connections(engine, owned=True))
        store = cls(engine, **store_options)
        store._owns_engine = True  # the factory hands its engine over
        return store

    @classmethod
    def from_engine(cls, engine: AsyncEngine, **options: Any) -> SQLAlchemyStore:
        """Share the application's engine and pool; the store never disposes it.

        Args:
            engine: The application's `AsyncEngine`.
            **options: The store options of `SQLAlchemyStore`.

        Returns:
            The store.
        """
        return cls(engine, **options)

    @property
    def engine(self) -> AsyncEngine:
        """The engine the store runs on."""
        return self._engine

    @property
    def table(self) -> Table:
        """The redemptions table."""
        return self._table

    def __repr__(self) -> str:
        return f"SQLAlchemyStore(url={self._label!r}, table={self._table.name!r})"

    # -- schema -------------------------------------------------------------------------------

    async def ensure_schema(self) -> bool:
        """Create the table, its index and the schema marker unless they exist.

        Safe when many workers start at once: PostgreSQL and MySQL take a lock first,
        SQLite relies on ``CREATE ... IF NOT EXISTS``. Runs by itself before the first
        operation, within the same ``timeout``. A table whose schema marker says it was
        created but which is gone is never created again (see `check()`).

        Returns:
            Whether this call created the table (``False`` when it was already present).

        Raises:
            StoreUnavailable: The database cannot be reached or did not answer in time.
            ConfigurationError: A permanent problem, or a table lacking a column this
                release uses (``code="store_schema_mismatch"``), a dropped table
                (``code="store_table_missing"``), or a table created by a newer release
                (``code="store_schema_too_new"``).
        """
        try:
            async with asyncio.timeout(self._timeout):
                return await self._ensure_schema(force=False)
        except TimeoutError as exc:
            raise self._failure("schema", exc, startup=True) from exc

    async def _ensure_schema(self, *, force: bool) -> bool:
        async with self._schema_lock:
            if self._schema_ready and not force:
                return False
            if self._closed:
                msg = "the token store is closed"
                raise StoreUnavailable(msg)
            try:
                created = await self._schema.run(self._engine)
            except PauseTokenError:
                raise
            except Exception as exc:
                raise self._failure("schema", exc, startup=True) from exc
            self._statements.connected(self._engine.dialect)
            self._schema_ready = True
            logger.debug("schema ready: %s table %s", self._label, self._table.name)
            return created

    # -- the TokenStore protocol --------------------------------------------------------------

    async def check(self) -> None:
        """Confirm, once at start-up, that the store can serve.

        Opens a connection, prepares the schema (see `ensure_schema()`), and runs
        statements that need the privileges the store needs on its table (``INSERT``,
        ``UPDATE``, ``DELETE``) but change nothing. All of it within ``timeout``.

        Raises:
            ConfigurationError: A permanent problem, named in the message (wrong
                credentials, a missing database, a user who may not write, a SQLite file
                that cannot be opened): ``code="store_misconfigured"``; a table that was
                dropped after it was created: ``code="store_table_missing"``.
            StoreUnavailable: The database cannot be reached now (refused, timed out).
        """
        await self._run("check", self._statements.check_writable, startup=True)

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Try to take the lease on ``request.pause_key``.

        See [`TokenStore`][pausetoken.TokenStore] for the outcomes.
        The row's expiry becomes the later of its own and the request's, whatever the
        outcome.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        args = ClaimArgs.from_request(request)
        return await self._run("claim", lambda conn: self._statements.claim(conn, args))

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        """Claim and commit ``request.pause_key`` in one statement.

        Does what `claim()` followed at once by `commit()` with the request's lease and
        expiry would do (see [`SupportsConsume`][pausetoken.plugins.SupportsConsume]): an
        absent pause, or a claimed one whose lease ended, becomes ``REDEEMED`` by this
        lease (``CLAIMED``), and a retry whose first attempt landed is confirmed
        (``CLAIMED`` again); any other row answers as a claim would and keeps every field
        but the expiry, which becomes the later of its own and the request's.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        args = ClaimArgs.from_request(request)
        if not self._statements.consumes_many:
            return await self._run("consume", lambda conn: self._statements.consume(conn, args))
        try:
            return await self._deadlines.run(self._consumes(args))
        except TimeoutError as exc:
            raise self._failure("consume", exc, startup=False) from exc

    async def _consume_many(self, batch: Sequence[ClaimArgs]) -> Sequence[ClaimResult]:
        return await self._run("consume", lambda conn: self._statements.consume_many(conn, batch))

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        """Move the lease's end to ``lease_until`` (never earlier) if ``lease_id`` holds it.

        Returns:
            Whether ``lease_id`` holds the claim on the pause.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key, until_us = encode_key(pause_key), to_us(lease_until)
        return await self._run(
            "renew", lambda conn: self._statements.renew(conn, key, lease_id, until_us)
        )

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        """Mark the pause redeemed if ``lease_id`` holds the claim (or already committed it).

        The holder may commit after its lease ran out as long as nobody took over; a second
        commit by the same lease returns ``True`` again. The expiry is raised.

        Returns:
            Whether the pause is redeemed by ``lease_id``.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key, expires_at_us = encode_key(pause_key), to_us(expires_at)
        return await self._run(
            "commit", lambda conn: self._statements.commit(conn, key, lease_id, expires_at_us)
        )

    async def release(self, pause_key: str, lease_id: str) -> bool:
        """Drop the claim if ``lease_id`` holds it, making the pause redeemable again.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key = encode_key(pause_key)
        return await self._run(
            "release", lambda conn: self._statements.release(conn, key, lease_id)
        )

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        """Revoke the pause unless it was redeemed or a live lease holds it.

        An absent pause, or a claimed one whose lease ended (``lease_until <= now``),
        becomes ``REVOKED``. A live claim, a redeemed and a revoked pause stay as they are.
        The expiry is raised in every case.

        Returns:
            The record after the call.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key, expires_at_us, now_us = encode_key(pause_key), to_us(expires_at), to_us(now)
        return await self._run(
            "revoke",
            lambda conn: self._statements.revoke(
                conn,
                key,
                scope_hash=scope_hash,
                name=name,
                expires_at_us=expires_at_us,
                now_us=now_us,
            ),
        )

    async def status(self, pause_key: str) -> PauseRecord | None:
        """What the store knows of ``pause_key``, or ``None``.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key = encode_key(pause_key)
        return await self._run("status", lambda conn: self._statements.status(conn, key))

    async def purge(self, before: datetime) -> int:
        """Delete rows whose ``expires_at`` is before ``before``, 1,000 per statement.

        Returns:
            How many rows were deleted.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        before_us = to_us(before)
        total = 0
        while True:
            deleted = await self._run(
                "purge", lambda conn: self._statements.purge_batch(conn, before_us)
            )
            total += deleted
            if deleted < PURGE_BATCH:
                break
        if total:
            logger.info("purged %d expired rows from %s", total, self._table.name)
        return total

    async def aclose(self) -> None:
        """Give the held connections back; dispose the engine if the store created it."""
        if self._closed:
            return
        self._closed = True
        await self._consumes.drain()
        await self._connections.close()
        if self._owns_engine:
            await self._engine.dispose()

    async def __aenter__(self) -> Self:
        """Use the store as an async context manager that closes it on exit."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the store."""
        await self.aclose()

    # -- running one operation ----------------------------------------------------------------

    async def _run(
        self, op: str, call: Callable[[Any], Awaitable[T]], *, startup: bool = False
    ) -> T:
        # One deadline for everything the operation waits on: the schema step, a free
        # connection or a new one (connecting included), and the statement.
        held: Held | None = None
        deadline = self._deadlines.start()
        try:
            if startup or not self._schema_ready:
                await self._ensure_schema(force=startup)
            held = await self._connections.acquire()
            result = await call(held.driver)
        except PauseTokenError:
            self._deadlines.finish(deadline, cancelled=False)
            if held is not None:
                await self._connections.release(held)
            raise
        except BaseException as caught:
            exc = caught
            if self._deadlines.finish(
                deadline, cancelled=isinstance(caught, asyncio.CancelledError)
            ):
                exc = TimeoutError()  # what asyncio.timeout() raises, chained the same way
                exc.__cause__ = caught
            if held is not None:
                await self._connections.discard(held, exc)
            if not isinstance(exc, Exception):
                raise  # cancellation and exits pass through untouched
            raise self._failure(op, exc, startup=startup) from exc
        self._deadlines.finish(deadline, cancelled=False)
        await self._connections.release(held)
        return result

    def _failure(self, op: str, exc: Exception, *, startup: bool) -> PauseTokenError:
        """The typed error for a failed ``op``.

        Permanent causes found at start-up are configuration errors; everything else fails
        closed with ``StoreUnavailable``.
        """
        if isinstance(exc, TimeoutError):
            msg = f"token store {op} at {self._label} timed out after {self._timeout:g} s"
            return StoreUnavailable(msg)
        problem = self._family.diagnose(exc)
        if problem is TABLE_MISSING:
            msg = self._schema.table_missing_message()
            if startup:
                return StoreMisconfigured(msg, code=StoreMisconfigured.STORE_TABLE_MISSING)
            return StoreUnavailable(msg, code=StoreUnavailable.STORE_TABLE_MISSING)
        if problem is not None and startup:
            explained = problem.explain(self._engine.url, self._table.name)
            msg = f"cannot use the token store at {self._label}: {explained}"
            return StoreMisconfigured(msg, code=StoreMisconfigured.STORE_MISCONFIGURED)
        return StoreUnavailable(f"token store {op} failed at {self._label} ({type(exc).__name__})")


def _key_of(args: ClaimArgs) -> bytes:
    return args.key
