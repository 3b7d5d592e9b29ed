"""SQLAlchemy token store for pausetoken: SQLite, PostgreSQL, MySQL and MariaDB.

Choose it by URL (``sqlite+aiosqlite:///pausetoken.db``, ``postgresql+asyncpg://...``,
``mysql+asyncmy://...``) through [`pausetoken.open_store()`][pausetoken.open_store], or build it
directly:

    >>> from pausetoken_sqlalchemy import SQLAlchemyStore
    >>> store = SQLAlchemyStore.from_url("sqlite+aiosqlite:///pausetoken.db")

The store keeps one row per pause in one table, keyed by the pause key (column
``pause_key``), next to a schema-version marker table. For migrations (Alembic's
``target_metadata``), `metadata` holds both under their default names: `redemptions_table`
(``pausetoken_redemptions``) and `schema_table` (``pausetoken_schema``);
`make_table()` defines the table under another name in your own metadata:

    >>> from pausetoken_sqlalchemy import metadata, redemptions_table
    >>> redemptions_table.name, [column.name for column in redemptions_table.primary_key]
    ('pausetoken_redemptions', ['pause_key'])
    >>> sorted(metadata.tables)
    ['pausetoken_redemptions', 'pausetoken_schema']

The "SQLAlchemy store" page of the documentation describes the table, the options and the
failures.
"""

from __future__ import annotations

from pausetoken_sqlalchemy._schema import (
    DEFAULT_TABLE_NAME,
    SCHEMA_TABLE_NAME,
    SCHEMA_VERSION,
    make_schema_table,
    make_table,
    metadata,
    redemptions_table,
    schema_table,
)
from pausetoken_sqlalchemy._statements import PURGE_BATCH
from pausetoken_sqlalchemy._store import DEFAULT_URL, SQLAlchemyStore

__all__ = [
    "DEFAULT_TABLE_NAME",
    "DEFAULT_URL",
    "PURGE_BATCH",
    "SCHEMA_TABLE_NAME",
    "SCHEMA_VERSION",
    "SQLAlchemyStore",
    "make_schema_table",
    "make_table",
    "metadata",
    "redemptions_table",
    "schema_table",
]
