"""SQLite through aiosqlite: one shared connection, WAL, and no schema lock."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from sqlalchemy import event
from sqlalchemy.dialects import sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from pausetoken.exceptions import ConfigurationError, StoreMisconfigured
from pausetoken_sqlalchemy._connections import SharedConnection
from pausetoken_sqlalchemy._failures import (
    AUTHENTICATION,
    CANNOT_OPEN,
    NOT_A_DATABASE,
    PERMISSION,
    READ_ONLY,
    TABLE_MISSING,
    Problem,
)
from pausetoken_sqlalchemy._family import EngineFamily
from pausetoken_sqlalchemy._returning import ReturningStatements

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from sqlalchemy import Connection, Executable, Table
    from sqlalchemy.engine import URL
    from sqlalchemy.ext.asyncio import AsyncEngine

    from pausetoken_sqlalchemy._connections import ConnectionSet
    from pausetoken_sqlalchemy._statements import ClaimArgs

__all__ = ["SqliteFamily", "SqliteStatements"]

_BUSY_TIMEOUT_MS: Final = 30_000
#: ``RETURNING`` arrived in SQLite 3.35.
_MIN_VERSION: Final = (3, 35, 0)
# The names `SqliteStatements._param()` gives the parameters, made once rather than per
# statement (no statement has more than nine).
_NAMES: Final = tuple(f"p{index}" for index in range(1, 10))
# Errors after which the shared connection is still usable: a lock wait that ran out, a
# cancelled wait (aiosqlite finishes the statement on its thread anyway).
_SURVIVABLE: Final = (asyncio.CancelledError, TimeoutError, sqlite3.OperationalError)
# Primary result codes (the low byte of the extended code).
_CODES: Final[Mapping[int, Problem]] = {
    3: PERMISSION,  # SQLITE_PERM
    8: READ_ONLY,  # SQLITE_READONLY
    14: CANNOT_OPEN,  # SQLITE_CANTOPEN
    23: AUTHENTICATION,  # SQLITE_AUTH
    26: NOT_A_DATABASE,  # SQLITE_NOTADB
}


class SqliteStatements(ReturningStatements):
    """SQLite through aiosqlite: each statement and its rows in one trip to its thread."""

    _GREATEST = "MAX"  # with two arguments, SQLite's MAX is the scalar maximum

    def __init__(self, quoted_table: str) -> None:
        super().__init__(quoted_table)
        self._consume_many_sql: dict[int, str] = {}

    @staticmethod
    def _param(index: int) -> str:
        # Named, not numbered (``?1``): Python 3.12 deprecates numbered placeholders bound
        # from a sequence and 3.14 refuses them.
        return f":p{index}"

    def _bind(self, args: Sequence[Any]) -> Any:
        return dict(zip(_NAMES[: len(args)], args, strict=True))

    async def _fetch(self, conn: Any, sql: str, args: Any) -> Sequence[Any]:
        rows: Sequence[Any] = await conn.execute_fetchall(sql, args)
        return rows

    async def _consume_rows(self, conn: Any, batch: Sequence[ClaimArgs]) -> Sequence[Any]:
        size = len(batch)
        sql = self._consume_many_sql.get(size)
        if sql is None:  # one statement per batch size, kept (a batch holds a few at most)
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * size)
            sql = self._consume_many_sql[size] = self._consume_many(f"VALUES {values}")
        stamps = self._stamps
        params = [
            value
            for a in batch
            for value in (
                a.key,
                a.scope_hash,
                a.name,
                a.response_hash,
                a.lease_id,
                a.lease_until_us,
                a.expires_at_us,
                a.now_us,
                stamps.next(),
            )
        ]
        rows: Sequence[Any] = await conn.execute_fetchall(sql, params)
        return rows


class SqliteFamily(EngineFamily):
    """SQLite 3.35 or newer, through aiosqlite."""

    name = "sqlite"
    backends: ClassVar[Mapping[str, str]] = {"sqlite": "sqlite"}
    driver = "aiosqlite"
    statements = SqliteStatements
    # IF NOT EXISTS makes racing workers safe without a lock.
    locks_schema = False

    def require_support(self) -> None:
        """Refuse a SQLite library without ``RETURNING``.

        Raises:
            ConfigurationError: This Python's SQLite is older than 3.35.
        """
        if sqlite3.sqlite_version_info < _MIN_VERSION:
            msg = (
                f"the SQLite store needs SQLite 3.35 or newer (RETURNING); this Python has "
                f"{sqlite3.sqlite_version}"
            )
            raise ConfigurationError(msg)

    def prepare_engine(self, engine: AsyncEngine, url: URL) -> None:
        """Give every connection a busy timeout, and a file the WAL journal."""
        event.listen(engine.sync_engine, "connect", _pragmas(wal=_is_file_database(url)))

    def hold_connections(
        self,
        engine: AsyncEngine,
        *,
        label: str,
        max_connections: int,
        ping_after: float,
        recycle_after: float,
    ) -> ConnectionSet:
        """One connection every operation shares (more would only wait on the file's locks)."""
        del max_connections, ping_after, recycle_after
        return SharedConnection(engine, family=self, label=label)

    def connection_survives(self, exc: BaseException) -> bool:
        """A lock wait that ran out or was cancelled leaves the connection usable."""
        return isinstance(exc, _SURVIVABLE)

    def refuse_before_connecting(self, url: URL, *, label: str) -> None:
        """Refuse a file in a directory that does not exist, and a directory as the file.

        SQLite cannot open either. Saying so before connecting also spares aiosqlite's
        failed connection, whose thread would report the failure again after the caller's
        event loop is gone.
        """
        if not _is_file_database(url) or url.database is None:
            return
        if url.database.startswith("file:"):
            return  # a URI filename: SQLite parses it
        path = Path(url.database).expanduser().absolute()
        if path.is_dir():
            msg = f"{label}: unable to open database file: {path} is a directory"
            raise StoreMisconfigured(msg, code=StoreMisconfigured.STORE_MISCONFIGURED)
        directory = path.parent
        if not directory.is_dir():
            msg = f"{label}: unable to open database file: the directory {directory} does not exist"
            raise StoreMisconfigured(msg, code=StoreMisconfigured.STORE_MISCONFIGURED)

    def create_table(self, conn: Connection, table: Table) -> None:
        """``CREATE ... IF NOT EXISTS``: safe when workers race, with no lock."""
        conn.execute(CreateTable(table, if_not_exists=True))
        for index in table.indexes:
            conn.execute(CreateIndex(index, if_not_exists=True))

    def insert_if_absent(self, table: Table, values: Mapping[str, Any]) -> Executable:
        """``INSERT ... ON CONFLICT DO NOTHING``."""
        return sqlite.insert(table).values(values).on_conflict_do_nothing()

    def problem(self, exc: BaseException) -> Problem | None:
        """SQLite's result codes, and its "no such table" message."""
        if not isinstance(exc, sqlite3.Error):
            return None
        if "no such table" in str(exc):
            return TABLE_MISSING
        code = getattr(exc, "sqlite_errorcode", None)
        return _CODES.get(code & 0xFF) if isinstance(code, int) else None


def _is_file_database(url: URL) -> bool:
    database = url.database or ""
    return database not in {"", ":memory:"} and "mode=memory" not in str(url.query)


def _pragmas(*, wal: bool) -> Callable[[Any, Any], None]:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            if wal:
                _switch_to_wal(cursor)
        finally:
            cursor.close()

    return on_connect


def _switch_to_wal(cursor: Any) -> None:
    # Switching a new file to WAL needs an exclusive lock and SQLite's busy handler does not
    # wait for it: workers opening one new database at once get "database is locked".
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
        except Exception as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
        else:
            return
