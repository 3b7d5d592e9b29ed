"""SQLAlchemy token store for pausetoken: SQLite, PostgreSQL, MySQL and MariaDB.

Choose it by URL (``sqlite+aiosqlite:///pausetoken.db``, ``postgresql+asyncpg://...``,
``mysql+asyncmy://...``) through [`pausetoken.open_store()`][pausetoken.open_store], or build it
directly:

    >>> from pausetoken_sqlalchemy import SQLAlchemyStore
    >>> store = SQLAlchemyStore.from_url("sqlite+aiosqlite:///pausetoken.db")
"""

from __future__ import annotations

from pausetoken_sqlalchemy._schema import (
    DEFAULT_TABLE_NAME,
    SCHEMA_TABLE_NAME,
    SCHEMA_VERSION,
    make_schema_table,
    make_table,
    metadata,
    schema_table,
    table,
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
    "schema_table",
    "table",
]
