"""PostgreSQL through asyncpg: numbered placeholders, an advisory lock, SQLSTATE codes."""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import TYPE_CHECKING, Any, ClassVar, Final

from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from pausetoken_sqlalchemy._failures import (
    AUTHENTICATION,
    MISSING_DATABASE,
    PERMISSION,
    READ_ONLY,
    TABLE_MISSING,
    Problem,
)
from pausetoken_sqlalchemy._family import EngineFamily
from pausetoken_sqlalchemy._returning import ReturningStatements

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sqlalchemy import Connection, Executable, Table

    from pausetoken_sqlalchemy._statements import ClaimArgs

__all__ = ["PostgresFamily", "PostgresStatements"]

# pg_advisory_lock key serialising schema creation ("paus" in ASCII).
_SCHEMA_LOCK: Final = 0x70617573
# SQLAlchemy's asyncpg adapter takes these off before calling asyncpg.connect.
_ADAPTER_PARAMETERS: Final = frozenset(
    {"prepared_statement_cache_size", "prepared_statement_name_func"}
)
_SQLSTATES: Final[Mapping[str, Problem]] = {
    "28P01": AUTHENTICATION,  # invalid_password
    "28000": AUTHENTICATION,  # invalid_authorization_specification
    "3D000": MISSING_DATABASE,  # invalid_catalog_name
    "42501": PERMISSION,  # insufficient_privilege
    "25006": READ_ONLY,  # read_only_sql_transaction (a standby, or read-only default)
    "42P01": TABLE_MISSING,  # undefined_table
}


class PostgresStatements(ReturningStatements):
    """PostgreSQL through asyncpg (prepared statements cached per connection)."""

    _GREATEST = "GREATEST"

    @staticmethod
    def _param(index: int) -> str:
        return f"${index}"

    def _bind(self, args: Sequence[Any]) -> Any:
        return args

    async def _fetch(self, conn: Any, sql: str, args: Sequence[Any]) -> Sequence[Any]:
        rows: Sequence[Any] = await conn.fetch(sql, *args)
        return rows

    @functools.cached_property
    def _consume_many_sql(self) -> str:
        # One prepared statement for every batch size: the columns come as arrays.
        return self._consume_many(
            "SELECT * FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[],"
            " $5::text[], $6::int8[], $7::int8[], $8::int8[], $9::int8[])"
        )

    async def _consume_rows(self, conn: Any, batch: Sequence[ClaimArgs]) -> Sequence[Any]:
        stamps = self._stamps
        columns = zip(
            *(
                (
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
                for a in batch
            ),
            strict=True,
        )
        rows: Sequence[Any] = await conn.fetch(self._consume_many_sql, *map(list, columns))
        return rows


class PostgresFamily(EngineFamily):
    """PostgreSQL, through asyncpg."""

    name = "postgresql"
    backends: ClassVar[Mapping[str, str]] = {"postgresql": "postgresql", "postgres": "postgresql"}
    driver = "asyncpg"
    engine_defaults: ClassVar[Mapping[str, Any]] = {"pool_pre_ping": True}
    statements = PostgresStatements
    # asyncpg connections never open implicit transactions.
    driver_autocommits = True

    def connect_parameters(self) -> frozenset[str]:
        """What ``asyncpg.connect`` takes, and what SQLAlchemy's adapter takes off first."""
        # The driver was checked to be installed before the engine was made.
        connect = importlib.import_module("asyncpg").connect
        return frozenset(inspect.signature(connect).parameters) | _ADAPTER_PARAMETERS

    async def ping(self, driver_connection: Any) -> None:
        """``SELECT 1``."""
        await driver_connection.execute("SELECT 1")

    def abort(self, driver_connection: Any) -> None:
        """Close the socket at once (asyncpg's ``terminate()``), waiting on no reply.

        SQLAlchemy's invalidation calls ``close(timeout=2)`` first, which on a server that
        does not answer waits those 2 s after the operation's timeout.
        """
        driver_connection.terminate()

    def lock_schema(self, conn: Connection, *, wait: float, label: str) -> None:
        """``pg_advisory_lock``: waits as long as the operation's timeout lets it."""
        del wait, label
        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _SCHEMA_LOCK})

    def unlock_schema(self, conn: Connection) -> None:
        """``pg_advisory_unlock``."""
        conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _SCHEMA_LOCK})

    def insert_if_absent(self, table: Table, values: Mapping[str, Any]) -> Executable:
        """``INSERT ... ON CONFLICT DO NOTHING``."""
        return postgresql.insert(table).values(values).on_conflict_do_nothing()

    def problem(self, exc: BaseException) -> Problem | None:
        """The SQLSTATE that asyncpg's errors (and SQLAlchemy's adapter) carry."""
        state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
        return _SQLSTATES.get(state) if isinstance(state, str) else None
