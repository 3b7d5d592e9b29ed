"""``SQLAlchemyStore``: the token store on SQLite, PostgreSQL, MySQL and MariaDB."""

from __future__ import annotations

import asyncio
import importlib
import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self, TypeVar

from sqlalchemy import MetaData, event, select, text
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import QueuePool
from sqlalchemy.schema import CreateIndex, CreateTable

from pausetoken.exceptions import BackendNotInstalled, ConfigurationError, StoreUnavailable
from pausetoken_sqlalchemy._connections import ConnectionSet
from pausetoken_sqlalchemy._schema import (
    DEFAULT_TABLE_NAME,
    SCHEMA_VERSION,
    make_schema_table,
    make_table,
)
from pausetoken_sqlalchemy._statements import (
    PURGE_BATCH,
    ClaimArgs,
    MySQLStatements,
    PostgresStatements,
    SqliteStatements,
    Statements,
    encode_jti,
    to_us,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from datetime import datetime

    from sqlalchemy import Connection, Table
    from sqlalchemy.engine import URL

    from pausetoken import ClaimRequest, ClaimResult, TokenRecord

__all__ = ["DEFAULT_URL", "SQLAlchemyStore"]

logger = logging.getLogger("pausetoken.sqlalchemy")

T = TypeVar("T")

#: The embedded default: a SQLite file in the working directory.
DEFAULT_URL: Final = "sqlite+aiosqlite:///pausetoken.db"

# family -> (driver module, pip extra); the scheme before "+" names the family.
_FAMILIES: Final = {
    "sqlite": "sqlite",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
}
_DRIVERS: Final = {"sqlite": "aiosqlite", "postgresql": "asyncpg", "mysql": "asyncmy"}
_STATEMENTS: Final[dict[str, type[Statements]]] = {
    "sqlite": SqliteStatements,
    "postgresql": PostgresStatements,
    "mysql": MySQLStatements,
}
# Options read from the URL query (and accepted as keyword arguments), with their types.
_STORE_OPTIONS: Final[dict[str, Callable[[str], Any]]] = {
    "table_name": str,
    "max_connections": int,
    "timeout": float,
    "ping_after": float,
    "recycle_after": float,
}
_POOL_OPTIONS: Final[dict[str, Callable[[str], Any]]] = {
    "pool_size": int,
    "max_overflow": int,
    "pool_timeout": float,
    "pool_recycle": int,
    "pool_pre_ping": lambda value: value.lower() in {"1", "true", "yes", "on"},
}
_SQLITE_BUSY_TIMEOUT_MS: Final = 30_000
_SQLITE_MIN_VERSION: Final = (3, 35, 0)
# pg_advisory_lock key serialising schema creation ("paus" in ASCII).
_PG_SCHEMA_LOCK: Final = 0x70617573
_MYSQL_SCHEMA_LOCK: Final = "pausetoken_schema"
_SCHEMA_LOCK_WAIT_S: Final = 60


def _driver_installed(family: str) -> None:
    driver = _DRIVERS[family]
    try:
        importlib.import_module(driver)
    except ImportError as exc:
        msg = (
            f"the {family} store needs the {driver} driver: "
            f'pip install "pausetoken-sqlalchemy[{family}]"'
        )
        raise BackendNotInstalled(msg) from exc


def _parse_url(url: str | URL) -> tuple[URL, str]:
    """The URL with our driver filled in, and its family."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        msg = "the token store URL is not a valid SQLAlchemy URL"
        raise ConfigurationError(msg) from exc
    backend, _, driver = parsed.drivername.partition("+")
    family = _FAMILIES.get(backend)
    label = parsed.render_as_string(hide_password=True)
    if family is None:
        msg = f"{label}: pausetoken-sqlalchemy supports sqlite, postgresql, mysql and mariadb"
        raise ConfigurationError(msg)
    wanted = _DRIVERS[family]
    if driver and driver != wanted:
        msg = f"{label}: the {family} store runs on the {wanted} driver, not {driver}"
        raise ConfigurationError(msg)
    if backend == "postgres":
        backend = "postgresql"
    return parsed.set(drivername=f"{backend}+{wanted}"), family


def _family_of(engine: AsyncEngine) -> str:
    family = _FAMILIES.get(engine.dialect.name)
    label = engine.url.render_as_string(hide_password=True)
    if family is None or engine.dialect.driver != _DRIVERS[family]:
        msg = (
            f"{label}: the engine must use sqlite+aiosqlite, postgresql+asyncpg or "
            "mysql+asyncmy / mariadb+asyncmy"
        )
        raise ConfigurationError(msg)
    return family


def _split_options(
    parsed: URL, options: Mapping[str, Any]
) -> tuple[URL, dict[str, Any], dict[str, Any]]:
    """Store options, engine options and the URL without the query keys pausetoken reads."""
    store: dict[str, Any] = {}
    engine: dict[str, Any] = {}
    label = parsed.render_as_string(hide_password=True)
    from_query = {k: v if isinstance(v, str) else v[-1] for k, v in parsed.query.items()}
    # Keywords win over the query; strings (from either, or from settings) are converted.
    for key, value in [*from_query.items(), *options.items()]:
        convert = _STORE_OPTIONS.get(key) or _POOL_OPTIONS.get(key)
        if convert is None:
            if key in options:
                engine[key] = value
            continue
        try:
            converted = convert(value) if isinstance(value, str) else value
        except ValueError as exc:
            msg = f"{label}: the option {key} has an invalid value"
            raise ConfigurationError(msg) from exc
        (store if key in _STORE_OPTIONS else engine)[key] = converted
    cleaned = parsed.difference_update_query([*_STORE_OPTIONS, *_POOL_OPTIONS])
    return cleaned, store, engine


def _default_max_connections(engine: AsyncEngine, *, owned: bool) -> int:
    """The whole pool of an engine the store created; half of an application's pool."""
    pool = engine.pool
    if not isinstance(pool, QueuePool):
        return 1
    return pool.size() if owned else max(1, pool.size() // 2)


def _is_file_database(parsed: URL) -> bool:
    database = parsed.database or ""
    return database not in {"", ":memory:"} and "mode=memory" not in str(parsed.query)


def _sqlite_pragmas(*, wal: bool) -> Callable[[Any, Any], None]:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}")
            if wal:
                _switch_to_wal(cursor)
        finally:
            cursor.close()

    return on_connect


def _switch_to_wal(cursor: Any) -> None:
    # Switching a new file to WAL needs an exclusive lock and SQLite's busy handler does not
    # wait for it: workers opening one new database at once get "database is locked".
    deadline = time.monotonic() + _SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
        except Exception as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
        else:
            return


class SQLAlchemyStore:
    """A :class:`~pausetoken.TokenStore` in one SQL table, on SQLAlchemy 2 asyncio.

    Each operation is one atomic statement on a connection held in autocommit mode:
    ``INSERT ... ON CONFLICT ... DO UPDATE ... WHERE ... RETURNING`` on PostgreSQL and
    SQLite, ``INSERT ... ON DUPLICATE KEY UPDATE`` on MySQL and MariaDB. The table (and a
    schema-version marker) is created on first use or by :meth:`ensure_schema`.

    Example:
        >>> store = SQLAlchemyStore.from_url("sqlite+aiosqlite:///pausetoken.db")
        >>> # or share the application's engine (the store never disposes it):
        >>> # store = SQLAlchemyStore(engine)

    Args:
        engine: An :class:`~sqlalchemy.ext.asyncio.AsyncEngine` on ``sqlite+aiosqlite``,
            ``postgresql+asyncpg`` or ``mysql+asyncmy`` / ``mariadb+asyncmy``. The store
            never disposes an engine it was handed.
        table_name: The redemptions table (default ``pausetoken_redemptions``).
        max_connections: Connections the store holds at most (default: the pool size of an
            engine it created, half the pool size of an engine it was handed; always 1 for
            SQLite, which shares one connection). Its other work (schema creation) checks a
            connection out for a moment, so leave some ``max_overflow`` when they are equal.
        timeout: Seconds one operation may take before it fails with ``StoreUnavailable``.
        ping_after: Ping a held connection idle for longer than this before reusing it.
        recycle_after: Give a held connection back to the pool after this many seconds.

    Raises:
        ConfigurationError: The engine uses another driver, or an option is invalid.
    """

    #: The store protocol version this class implements (``pausetoken.TokenStore`` 1).
    api_version: ClassVar[int] = 1

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
        family = _family_of(engine)
        if family == "sqlite" and sqlite3.sqlite_version_info < _SQLITE_MIN_VERSION:
            msg = (
                f"the SQLite store needs SQLite 3.35 or newer (RETURNING); this Python has "
                f"{sqlite3.sqlite_version}"
            )
            raise ConfigurationError(msg)
        if timeout <= 0 or ping_after < 0 or recycle_after <= 0:
            msg = "timeout and recycle_after must be positive, ping_after not negative"
            raise ConfigurationError(msg)
        if max_connections is None:
            max_connections = _default_max_connections(engine, owned=False)
        if max_connections < 1:
            msg = "max_connections must be at least 1"
            raise ConfigurationError(msg)
        self._engine = engine
        self._family = family
        self._label = engine.url.render_as_string(hide_password=True)
        self._timeout = timeout
        self._owns_engine = False
        self._metadata = MetaData()
        self._table: Table = make_table(table_name, self._metadata)
        self._schema_table: Table = make_schema_table(self._metadata)
        quoted = engine.dialect.identifier_preparer.format_table(self._table)
        self._statements = _STATEMENTS[family](quoted)
        self._connections = ConnectionSet(
            engine,
            family=family,
            max_connections=max_connections,
            ping_after=ping_after,
            recycle_after=recycle_after,
            label=self._label,
        )
        self._schema_ready = False
        self._schema_lock = asyncio.Lock()
        self._closed = False

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_url(cls, url: str | URL = DEFAULT_URL, **options: Any) -> SQLAlchemyStore:
        """Open a store (and its own engine) from a URL.

        Pool options come from the URL query or keyword arguments (``pool_size``,
        ``max_overflow``, ``pool_timeout``, ``pool_recycle``, ``pool_pre_ping``), and so do
        the store's own (``table_name``, ``max_connections``, ``timeout``, ``ping_after``,
        ``recycle_after``); other keyword arguments go to
        :func:`~sqlalchemy.ext.asyncio.create_async_engine`. A URL without a driver gets
        the supported one (``postgresql://`` means ``postgresql+asyncpg://``).

        Args:
            url: For example ``sqlite+aiosqlite:///pausetoken.db``,
                ``postgresql+asyncpg://user@host/db`` or ``mysql+asyncmy://user@host/db``.
            **options: Store, pool and engine options.

        Returns:
            The store; :meth:`aclose` disposes the engine it created.

        Raises:
            BackendNotInstalled: The driver for the URL is not installed.
            ConfigurationError: The URL or an option is invalid.
        """
        parsed, family = _parse_url(url)
        _driver_installed(family)
        cleaned, store_options, engine_options = _split_options(parsed, options)
        label = cleaned.render_as_string(hide_password=True)
        if family != "sqlite":
            engine_options.setdefault("pool_pre_ping", True)
        try:
            engine = create_async_engine(cleaned, **engine_options)
        except (ArgumentError, TypeError, ValueError) as exc:
            msg = f"{label}: invalid engine options ({type(exc).__name__})"
            raise ConfigurationError(msg) from exc
        if family == "sqlite":
            event.listen(
                engine.sync_engine, "connect", _sqlite_pragmas(wal=_is_file_database(cleaned))
            )
        store_options.setdefault("max_connections", _default_max_connections(engine, owned=True))
        store = cls(engine, **store_options)
        store._owns_engine = True  # the factory hands its engine over
        return store

    @classmethod
    def from_engine(cls, engine: AsyncEngine, **options: Any) -> SQLAlchemyStore:
        """Share the application's engine and pool; the store never disposes it.

        Args:
            engine: The application's :class:`~sqlalchemy.ext.asyncio.AsyncEngine`.
            **options: The store options of :class:`SQLAlchemyStore`.

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

    async def ensure_schema(self) -> None:
        """Create the table, its index and the schema marker unless they exist.

        Safe when many workers start at once: PostgreSQL and MySQL take a lock first,
        SQLite relies on ``CREATE ... IF NOT EXISTS``. Runs by itself before the first
        operation.

        Raises:
            StoreUnavailable: The database cannot be reached.
            ConfigurationError: The table was created by a newer release.
        """
        async with self._schema_lock:
            if self._schema_ready:
                return
            if self._closed:
                msg = "the token store is closed"
                raise StoreUnavailable(msg)
            try:
                async with asyncio.timeout(max(self._timeout, _SCHEMA_LOCK_WAIT_S)):
                    async with self._engine.connect() as conn:
                        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                        version = await auto.run_sync(self._create_schema)
            except (SQLAlchemyError, OSError, TimeoutError) as exc:
                kind = type(exc).__name__
                msg = f"cannot create the token store schema at {self._label} ({kind})"
                raise StoreUnavailable(msg) from exc
            if version > SCHEMA_VERSION:
                msg = (
                    f"table {self._table.name} has schema version {version}; this release of "
                    f"pausetoken-sqlalchemy knows up to {SCHEMA_VERSION}: upgrade it"
                )
                raise ConfigurationError(msg)
            self._schema_ready = True
            logger.debug("schema ready: %s table %s", self._label, self._table.name)

    def _create_schema(self, conn: Connection) -> int:
        if self._family == "postgresql":
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
        elif self._family == "mysql":
            got = conn.execute(
                text("SELECT GET_LOCK(:name, :wait)"),
                {"name": _MYSQL_SCHEMA_LOCK, "wait": _SCHEMA_LOCK_WAIT_S},
            ).scalar()
            if got != 1:
                msg = f"timed out waiting for the schema lock at {self._label}"
                raise StoreUnavailable(msg)
        try:
            if self._family == "sqlite":
                for table in (self._schema_table, self._table):
                    conn.execute(CreateTable(table, if_not_exists=True))
                    for index in table.indexes:
                        conn.execute(CreateIndex(index, if_not_exists=True))
            else:
                self._metadata.create_all(conn, checkfirst=True)
            return self._mark_version(conn)
        finally:
            if self._family == "postgresql":
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_SCHEMA_LOCK})
            elif self._family == "mysql":
                conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": _MYSQL_SCHEMA_LOCK})

    def _mark_version(self, conn: Connection) -> int:
        marker = self._schema_table
        values = {"table_name": self._table.name, "version": SCHEMA_VERSION}
        if self._family == "postgresql":
            conn.execute(postgresql.insert(marker).values(values).on_conflict_do_nothing())
        elif self._family == "sqlite":
            conn.execute(sqlite.insert(marker).values(values).on_conflict_do_nothing())
        else:
            stmt = mysql.insert(marker).values(values)
            conn.execute(stmt.on_duplicate_key_update(version=marker.c.version))
        version = conn.execute(
            select(marker.c.version).where(marker.c.table_name == self._table.name)
        ).scalar_one()
        return int(version)

    # -- the TokenStore protocol --------------------------------------------------------------

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Try to take the lease on ``request.jti`` (see :class:`~pausetoken.TokenStore`).

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        args = ClaimArgs.from_request(request)
        return await self._run("claim", lambda conn: self._statements.claim(conn, args))

    async def commit(self, jti: str, lease_id: str) -> bool:
        """Mark the token redeemed if ``lease_id`` holds it.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key = encode_jti(jti)
        return await self._run("commit", lambda conn: self._statements.commit(conn, key, lease_id))

    async def release(self, jti: str, lease_id: str) -> bool:
        """Drop the claim if ``lease_id`` holds it, making the token redeemable again.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key = encode_jti(jti)
        return await self._run(
            "release", lambda conn: self._statements.release(conn, key, lease_id)
        )

    async def revoke(
        self, jti: str, scope_hash: str, name: str, expires_at: datetime
    ) -> TokenRecord:
        """Revoke the token unless it was already redeemed; return the resulting record.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key = encode_jti(jti)
        expires_at_us = to_us(expires_at)
        return await self._run(
            "revoke",
            lambda conn: self._statements.revoke(conn, key, scope_hash, name, expires_at_us),
        )

    async def status(self, jti: str) -> TokenRecord | None:
        """What the store knows of ``jti``, or ``None``.

        Raises:
            StoreUnavailable: The database cannot be reached or timed out.
        """
        key = encode_jti(jti)
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

    async def _run(self, op: str, call: Callable[[Any], Awaitable[T]]) -> T:
        if not self._schema_ready:
            await self.ensure_schema()
        held = await self._connections.acquire()
        try:
            async with asyncio.timeout(self._timeout):
                result = await call(held.driver)
        except StoreUnavailable:
            await self._connections.release(held)
            raise
        except BaseException as exc:
            await self._connections.discard(held, exc)
            if not isinstance(exc, Exception):
                raise  # cancellation and exits pass through untouched
            msg = f"token store {op} failed at {self._label} ({type(exc).__name__})"
            raise StoreUnavailable(msg) from exc
        await self._connections.release(held)
        return result
