"""The store's table, the schema-version marker next to it, and the step creating them.

Times are stored as ``BIGINT`` microseconds since the Unix epoch (UTC): every engine
compares them the same way, they bind without driver-specific conversions on the hot path,
and they round-trip a `datetime` exactly.

Alembic users list `metadata` (which holds `redemptions_table` and `schema_table` under
their default names) in ``target_metadata``, or add the tables to their own metadata::

    from sqlalchemy import MetaData
    from pausetoken_sqlalchemy import make_table

    metadata = MetaData()
    redemptions = make_table("pausetoken_redemptions", metadata)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    inspect,
    select,
)
from sqlalchemy.dialects import mysql

from pausetoken.exceptions import PauseTokenError, StoreMisconfigured
from pausetoken_sqlalchemy._connections import store_work

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.ext.asyncio import AsyncEngine

    from pausetoken_sqlalchemy._family import EngineFamily

__all__ = [
    "DEFAULT_TABLE_NAME",
    "MAX_PAUSE_KEY_BYTES",
    "SCHEMA_TABLE_NAME",
    "SCHEMA_VERSION",
    "Schema",
    "make_schema_table",
    "make_table",
    "metadata",
    "redemptions_table",
    "schema_table",
]

#: The default name of the redemptions table.
DEFAULT_TABLE_NAME: Final = "pausetoken_redemptions"
#: The table holding one ``(table_name, version)`` row per redemptions table.
SCHEMA_TABLE_NAME: Final = "pausetoken_schema"
#: The layout version this release creates and understands.
SCHEMA_VERSION: Final = 1
#: Longest pause key (UTF-8 bytes) the ``pause_key`` column holds on every engine.
MAX_PAUSE_KEY_BYTES: Final = 255

# A binary key compares byte by byte on every engine: ``aB`` and ``Ab`` are two tokens.
# MySQL cannot index an unbounded BLOB, so it gets VARBINARY; the others get BYTEA / BLOB.
_PAUSE_KEY_TYPE = LargeBinary(MAX_PAUSE_KEY_BYTES).with_variant(
    mysql.VARBINARY(MAX_PAUSE_KEY_BYTES), "mysql", "mariadb"
)


def make_table(name: str, metadata: MetaData) -> Table:
    """Define the redemptions table ``name`` (and the schema marker table) in ``metadata``.

    Args:
        name: The table name, for example ``"pausetoken_redemptions"``.
        metadata: The metadata to add the tables to.

    Returns:
        The redemptions table. The schema marker table (``pausetoken_schema``) is added to
        ``metadata`` too unless it is there already.
    """
    make_schema_table(metadata)
    return Table(
        name,
        metadata,
        Column(
            "pause_key", _PAUSE_KEY_TYPE, primary_key=True, comment="UTF-8 bytes, case-sensitive"
        ),
        Column("scope_hash", String(64), nullable=False),
        Column("name", String(255), nullable=False),
        Column("state", String(16), nullable=False, comment="claimed, redeemed or revoked"),
        Column("response_hash", String(64), nullable=True),
        Column("lease_id", String(128), nullable=True),
        Column("lease_until_us", BigInteger, nullable=True, comment="µs since the epoch"),
        Column("expires_at_us", BigInteger, nullable=False, comment="µs since the epoch"),
        Column("created_at_us", BigInteger, nullable=False, comment="µs since the epoch"),
        Column("updated_at_us", BigInteger, nullable=False, comment="µs since the epoch"),
        Index(f"ix_{name}_expires_at_us", "expires_at_us"),
        comment="pausetoken single-use redemptions",
        mysql_engine="InnoDB",
        mysql_charset="utf8mb4",
    )


def make_schema_table(metadata: MetaData) -> Table:
    """Define (or return) the schema marker table in ``metadata``.

    Args:
        metadata: The metadata to add the table to.

    Returns:
        The ``pausetoken_schema`` table: one row per redemptions table with its version.
    """
    existing = metadata.tables.get(SCHEMA_TABLE_NAME)
    if existing is not None:
        return existing
    return Table(
        SCHEMA_TABLE_NAME,
        metadata,
        Column("table_name", String(128), primary_key=True),
        Column("version", Integer, nullable=False),
        comment="pausetoken schema versions",
        mysql_engine="InnoDB",
        mysql_charset="utf8mb4",
    )


metadata = MetaData()
"""Metadata holding `redemptions_table` and `schema_table`, for Alembic's ``target_metadata``."""

redemptions_table = make_table(DEFAULT_TABLE_NAME, metadata)
"""The redemptions table under its default name, ``pausetoken_redemptions``.

One row per pause that was claimed or revoked, keyed by ``pause_key``; the table a store
opened without ``table_name`` uses.
"""

schema_table = make_schema_table(metadata)
"""The schema marker table, ``pausetoken_schema``: one version row per redemptions table."""


class Schema:
    """The schema step of one store: create what is missing, refuse what it cannot use.

    Runs on a connection in autocommit mode, under the engine family's schema lock, so
    that workers starting at once create each table once. Nothing is written when both
    tables exist, so a user who may only read and write rows passes this step.
    """

    def __init__(
        self, family: EngineFamily, table: Table, marker: Table, *, label: str, lock_wait: float
    ) -> None:
        """Prepare the step for ``table`` and its ``marker`` table.

        Args:
            family: The engine family (lock, DDL, insert-if-absent).
            table: The redemptions table.
            marker: The schema marker table.
            label: The engine URL with its password hidden, for messages.
            lock_wait: Seconds to wait for the schema lock where the lock takes a limit.
        """
        self._family = family
        self._table = table
        self._marker = marker
        self._label = label
        self._lock_wait = lock_wait

    def prepare(self, conn: Connection) -> bool:
        """Create the tables unless they exist, and check the ones that do.

        Returns:
            Whether the redemptions table was created.

        Raises:
            ConfigurationError: The table was dropped after it was created
                (``code="store_table_missing"``), lacks a column this release uses
                (``code="store_schema_mismatch"``), or was created by a newer release
                (``code="store_schema_too_new"``).
        """
        self._family.lock_schema(conn, wait=self._lock_wait, label=self._label)
        try:
            version, created = self._prepare_tables(conn)
        except PauseTokenError:
            self._family.unlock_schema(conn)
            raise
        # Another failure leaves the lock to the store, which drops the connection: asking
        # the server to release it could wait forever on a connection that hangs.
        self._family.unlock_schema(conn)
        if version > SCHEMA_VERSION:
            msg = (
                f"table {self._table.name} has schema version {version}; this release of "
                f"pausetoken-sqlalchemy knows up to {SCHEMA_VERSION}: upgrade it"
            )
            raise StoreMisconfigured(msg, code=StoreMisconfigured.STORE_SCHEMA_TOO_NEW)
        return created

    async def run(self, engine: AsyncEngine) -> bool:
        """Run `prepare()` on a connection of its own, in autocommit mode.

        Raises:
            PauseTokenError: What `prepare()` or the family refused.
            Exception: The driver's error (the caller classifies it).
        """
        self._family.refuse_before_connecting(engine.url, label=self._label)
        # The pool's pre-ping, or the invalidation below, may give up on a connection.
        with store_work(self._family, self._label):
            async with engine.connect() as conn:
                try:
                    auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                    return await auto.run_sync(self.prepare)
                except PauseTokenError:
                    raise  # decided by this step; the connection is healthy and unlocked
                except BaseException as exc:
                    # Closing the session releases the schema lock; asking the server to
                    # release it could wait forever on a connection that hangs. (A
                    # terminated aiosqlite connection, which holds no lock, would finish on
                    # its thread after the caller's event loop may be gone.)
                    if self._family.locks_schema:
                        await conn.invalidate(exc)
                    raise

    def table_missing_message(self) -> str:
        """Why the store refuses a table its marker says was created: it is gone."""
        return (
            f"table {self._table.name} at {self._label} was dropped after it was created (its "
            f"row in {SCHEMA_TABLE_NAME} says so): the store will not create an empty one, "
            "because pauses redeemed earlier would then be accepted again; restore the "
            f"table, or delete its row from {SCHEMA_TABLE_NAME} to start afresh on purpose"
        )

    def _prepare_tables(self, conn: Connection) -> tuple[int, bool]:
        self._create(conn, self._marker)
        # The marker is read before the table is looked for: a worker that creates both
        # creates the table first, so a marker seen here means the table was created.
        version = self._read_version(conn)
        exists = inspect(conn).has_table(self._table.name)
        if version is not None and not exists:
            msg = self.table_missing_message()
            raise StoreMisconfigured(msg, code=StoreMisconfigured.STORE_TABLE_MISSING)
        if exists:
            self._refuse_another_layout(conn)
        else:
            self._create(conn, self._table)
        if version is None:
            values = {"table_name": self._table.name, "version": SCHEMA_VERSION}
            conn.execute(self._family.insert_if_absent(self._marker, values))
            version = self._read_version(conn)
            if version is None:  # pragma: no cover - the row was just written
                msg = f"the schema marker of {self._table.name} vanished while it was written"
                raise StoreMisconfigured(msg, code=StoreMisconfigured.STORE_MISCONFIGURED)
        return version, not exists

    def _read_version(self, conn: Connection) -> int | None:
        marker = self._marker
        query = select(marker.c.version).where(marker.c.table_name == self._table.name)
        version = conn.execute(query).scalar_one_or_none()
        return None if version is None else int(version)

    def _create(self, conn: Connection, table: Table) -> None:
        # Nothing is written when the table exists, so a user who may only read and write
        # rows passes this step (and check() then says whether it may write).
        if not inspect(conn).has_table(table.name):
            self._family.create_table(conn, table)

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
        raise StoreMisconfigured(msg, code=StoreMisconfigured.STORE_SCHEMA_MISMATCH)
