"""``SQLAlchemyStore``: the token store on SQLite, PostgreSQL, MySQL and MariaDB."""

from __future__ import annotations

import asyncio
import importlib
import inspect as inspect_module
import logging
import math
import sqlite3
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self, TypeVar

from sqlalchemy import MetaData, event, inspect, select, text
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SAWarning
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import QueuePool
from sqlalchemy.schema import CreateIndex, CreateTable

from pausetoken.exceptions import (
    BackendNotInstalled,
    ConfigurationError,
    PauseTokenError,
    StoreUnavailable,
)
from pausetoken.plugins import STORE_API_VERSION, install_hint, redact_url
from pausetoken_sqlalchemy._connections import ConnectionSet
from pausetoken_sqlalchemy._failures import TABLE_MISSING, diagnose
from pausetoken_sqlalchemy._schema import (
    DEFAULT_TABLE_NAME,
    SCHEMA_TABLE_NAME,
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
    encode_key,
    to_us,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from datetime import datetime

    from sqlalchemy import Connection, Table
    from sqlalchemy.engine import URL

    from pausetoken.plugins import ClaimRequest, ClaimResult, PauseRecord
    from pausetoken_sqlalchemy._connections import Held
    from pausetoken_sqlalchemy._failures import Problem

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


def _redacted(url: URL) -> str:
    """The URL for messages and logs: password and secret-looking query values hidden."""
    return redact_url(url.render_as_string(hide_password=True))


def _driver_installed(family: str) -> None:
    driver = _DRIVERS[family]
    try:
        importlib.import_module(driver)
    except ImportError as exc:
        msg = (
            f"the {family} store needs the {driver} driver: "
            f"{install_hint(f'pausetoken-sqlalchemy[{family}]')}"
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
    label = _redacted(parsed)
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
    label = _redacted(engine.url)
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
    label = _redacted(parsed)
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


def _connect_parameters(family: str) -> frozenset[str] | None:
    """What the driver's ``connect`` accepts (``None``: SQLAlchemy itself refuses the rest)."""
    # The driver was checked to be installed before the engine was made.
    if family == "postgresql":
        connect = importlib.import_module("asyncpg").connect
        # SQLAlchemy's asyncpg adapter takes these off before calling asyncpg.connect.
        extra = {"prepared_statement_cache_size", "prepared_statement_name_func"}
        return frozenset(inspect_module.signature(connect).parameters) | extra
    if family == "mysql":
        connection = importlib.import_module("asyncmy.connection").Connection
        return frozenset(inspect_module.signature(connection.__init__).parameters) - {"self"}
    return None


def _refuse_unknown_connect_args(engine: AsyncEngine, family: str, label: str) -> None:
    """Refuse, when the store is opened, URL options the driver would choke on later."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SAWarning)
            _args, kwargs = engine.dialect.create_connect_args(engine.url)
    except SAWarning as exc:
        msg = f"{label}: the URL has options the {family} driver does not take"
        raise ConfigurationError(msg, code="store_misconfigured") from exc
    accepted = _connect_parameters(family)
    unknown = sorted(set(kwargs) - accepted) if accepted is not None else []
    if unknown:
        names = ", ".join(repr(name[:40]) for name in unknown[:5])
        msg = f"{label}: unknown option(s) in the store URL: {names}"
        raise ConfigurationError(msg, code="store_misconfigured")


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
    """A [`TokenStore`][pausetoken.TokenStore] in one SQL table, on SQLAlchemy 2 asyncio.

    Each operation is one atomic statement on a connection held in autocommit mode:
    ``INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING`` on PostgreSQL and SQLite,
    ``INSERT ... ON DUPLICATE KEY UPDATE`` on MySQL and MariaDB (see
    ``pausetoken_sqlalchemy._statements``). The table (and a schema-version marker) is
    created on first use, by `ensure_schema()` or by `check()`; a table the marker
    says was created is never created again.

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

    #: The store protocol version this class implements (``pausetoken.plugins``'
    #: ``STORE_API_VERSION``).
    api_version: ClassVar[int] = STORE_API_VERSION

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
        self._label = _redacted(engine.url)
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
        parsed, family = _parse_url(url)
        _driver_installed(family)
        cleaned, store_options, engine_options = _split_options(parsed, options)
        label = _redacted(cleaned)
        if family != "sqlite":
            engine_options.setdefault("pool_pre_ping", True)
        try:
            with warnings.catch_warnings():
                # pysqlite warns about (and ignores) URL options it does not take.
                warnings.simplefilter("error", SAWarning)
                engine = create_async_engine(cleaned, **engine_options)
        except SAWarning as exc:
            msg = f"{label}: the URL has options the {family} driver does not take"
            raise ConfigurationError(msg, code="store_misconfigured") from exc
        except (ArgumentError, TypeError, ValueError) as exc:
            msg = f"{label}: invalid engine options ({type(exc).__name__})"
            raise ConfigurationError(msg) from exc
        _refuse_unknown_connect_args(engine, family, label)
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
            ConfigurationError: A permanent problem (``code="store_misconfigured"``), a
                dropped table (``code="store_table_missing"``), or a table created by a
                newer release.
        """
        try:
            async with asyncio.timeout(self._timeout):
                return await self._ensure_schema(force=False)
        except TimeoutError as exc:
            raise self._failure("schema", exc, startup=True) from exc

    def _refuse_a_missing_directory(self) -> None:
        # SQLite cannot create a file in a directory that does not exist. Saying so before
        # connecting also spares aiosqlite's failed connection, whose thread would report
        # the failure again after the caller's event loop is gone.
        url = self._engine.url
        if self._family != "sqlite" or not _is_file_database(url) or url.database is None:
            return
        if url.database.startswith("file:"):
            return  # a URI filename: SQLite parses it
        directory = Path(url.database).expanduser().absolute().parent
        if not directory.is_dir():
            msg = (
                f"{self._label}: unable to open database file: the directory "
                f"{directory} does not exist"
            )
            raise ConfigurationError(msg, code="store_misconfigured")

    async def _ensure_schema(self, *, force: bool) -> bool:
        async with self._schema_lock:
            if self._schema_ready and not force:
                return False
            if self._closed:
                msg = "the token store is closed"
                raise StoreUnavailable(msg)
            self._refuse_a_missing_directory()
            try:
                async with self._engine.connect() as conn:
                    try:
                        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                        version, created = await auto.run_sync(self._prepare_schema)
                    except PauseTokenError:
                        raise  # decided by this code; the connection is healthy and unlocked
                    except BaseException:
                        # Closing the session releases the schema lock; asking the server
                        # to release it could wait forever on a connection that hangs.
                        # (SQLite takes no lock, and a terminated aiosqlite connection
                        # finishes on its thread after the caller's event loop may be gone.)
                        if self._family != "sqlite":
                            await conn.invalidate()
                        raise
            except PauseTokenError:
                raise
            except Exception as exc:
                raise self._failure("schema", exc, startup=True) from exc
            if version > SCHEMA_VERSION:
                msg = (
                    f"table {self._table.name} has schema version {version}; this release of "
                    f"pausetoken-sqlalchemy knows up to {SCHEMA_VERSION}: upgrade it"
                )
                raise ConfigurationError(msg, code="store_schema_too_new")
            self._schema_ready = True
            logger.debug("schema ready: %s table %s", self._label, self._table.name)
            return created

    def _prepare_schema(self, conn: Connection) -> tuple[int, bool]:
        self._lock_schema(conn)
        try:
            prepared = self._prepare_tables(conn)
        except PauseTokenError:
            self._unlock_schema(conn)
            raise
        self._unlock_schema(conn)
        return prepared

    def _prepare_tables(self, conn: Connection) -> tuple[int, bool]:
        marker = self._schema_table
        self._create_table(conn, marker)
        # The marker is read before the table is looked for: a worker that creates both
        # creates the table first, so a marker seen here means the table was created.
        version = conn.execute(
            select(marker.c.version).where(marker.c.table_name == self._table.name)
        ).scalar_one_or_none()
        exists = inspect(conn).has_table(self._table.name)
        if version is not None and not exists:
            raise ConfigurationError(self._table_missing_message(), code="store_table_missing")
        if exists:
            self._refuse_another_layout(conn)
        else:
            self._create_table(conn, self._table)
        if version is None:
            version = self._mark_version(conn)
        return int(version), not exists

    def _refuse_another_layout(self, conn: Connection) -> None:
        # The version marker cannot tell: tables made before the key column was renamed
        # (never released) carry version 1 too, and a migration may have written the marker.
        found = {column["name"] for column in inspect(conn).get_columns(self._table.name)}
        missing = [column.name for column in self._table.columns if column.name not in found]
        if not missing:
            return
        name = self._table.name
        if missing == ["pause_key"] and "jti" in found:
            msg = (
                f"table {name} at {self._label} keeps the pause key in a column named jti, "
                "as pre-release builds of pausetoken-sqlalchemy made it; this release names "
                f"it pause_key: rename the column (ALTER TABLE {name} RENAME COLUMN jti TO "
                "pause_key), which keeps its rows"
            )
        else:
            msg = (
                f"table {name} at {self._label} lacks the column(s) {', '.join(missing)} that "
                "this release of pausetoken-sqlalchemy uses: create it with make_table()"
            )
        raise ConfigurationError(msg, code="store_misconfigured")

    def _lock_schema(self, conn: Connection) -> None:
        if self._family == "postgresql":
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
        elif self._family == "mysql":
            wait = max(1, math.ceil(self._timeout))  # the operation's timeout bounds it anyway
            got = conn.execute(
                text("SELECT GET_LOCK(:name, :wait)"), {"name": _MYSQL_SCHEMA_LOCK, "wait": wait}
            ).scalar()
            if got != 1:
                msg = f"timed out waiting for the schema lock at {self._label}"
                raise StoreUnavailable(msg)

    def _unlock_schema(self, conn: Connection) -> None:
        if self._family == "postgresql":
            conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_SCHEMA_LOCK})
        elif self._family == "mysql":
            conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": _MYSQL_SCHEMA_LOCK})

    def _create_table(self, conn: Connection, table: Table) -> None:
        # Nothing is written when the table exists, so a user who may only read and write
        # rows passes this step (and check() then says whether it may write).
        if inspect(conn).has_table(table.name):
            return
        if self._family == "sqlite":  # no lock: IF NOT EXISTS makes racing workers safe
            conn.execute(CreateTable(table, if_not_exists=True))
            for index in table.indexes:
                conn.execute(CreateIndex(index, if_not_exists=True))
        else:  # under the schema lock (MySQL has no CREATE INDEX IF NOT EXISTS)
            table.create(conn, checkfirst=True)

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

    def _table_missing_message(self) -> str:
        name = self._table.name
        return (
            f"table {name} at {self._label} was dropped after it was created (its row in "
            f"{SCHEMA_TABLE_NAME} says so): the store will not create an empty one, because "
            "pauses redeemed earlier would then be accepted again; restore the table, or "
            f"delete its row from {SCHEMA_TABLE_NAME} to start afresh on purpose"
        )

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
        try:
            async with asyncio.timeout(self._timeout):
                if startup or not self._schema_ready:
                    await self._ensure_schema(force=startup)
                held = await self._connections.acquire()
                result = await call(held.driver)
        except PauseTokenError:
            if held is not None:
                await self._connections.release(held)
            raise
        except BaseException as exc:
            if held is not None:
                await self._connections.discard(held, exc)
            if not isinstance(exc, Exception):
                raise  # cancellation and exits pass through untouched
            raise self._failure(op, exc, startup=startup) from exc
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
        problem = diagnose(exc)
        if problem is TABLE_MISSING:
            msg = self._table_missing_message()
            if startup:
                return ConfigurationError(msg, code="store_table_missing")
            return StoreUnavailable(msg, code="store_table_missing")
        if problem is not None and startup:
            msg = f"cannot use the token store at {self._label}: {self._explain(problem)}"
            return ConfigurationError(msg, code="store_misconfigured")
        return StoreUnavailable(f"token store {op} failed at {self._label} ({type(exc).__name__})")

    def _explain(self, problem: Problem) -> str:
        url = self._engine.url
        where = {
            "authentication": f" for user {url.username!r}",
            "missing_database": f" (database {url.database!r})",
            "permission": f" (user {url.username!r}, table {self._table.name})",
            "cannot_open": f" ({url.database!r})",
            "read_only": f" (table {self._table.name})",
        }
        return problem.cause + where.get(problem.kind, "")
