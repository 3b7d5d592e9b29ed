"""The table the store keeps its rows in, and the schema-version marker next to it.

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

from typing import Final

from sqlalchemy import BigInteger, Column, Index, Integer, LargeBinary, MetaData, String, Table
from sqlalchemy.dialects import mysql

__all__ = [
    "DEFAULT_TABLE_NAME",
    "MAX_PAUSE_KEY_BYTES",
    "SCHEMA_TABLE_NAME",
    "SCHEMA_VERSION",
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
