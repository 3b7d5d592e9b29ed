"""The conformance kit against the SQLAlchemy store on every engine."""

from __future__ import annotations

import os
import secrets
from typing import TYPE_CHECKING, Any, ClassVar

import pytest
from sqlalchemy import delete

from pausetoken.testing import StoreConformance, StoreFactory
from pausetoken_sqlalchemy import SQLAlchemyStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from pausetoken.plugins import TokenStore


class _Conformance(StoreConformance):
    engine: ClassVar[str]
    table_name: ClassVar[str]
    # Every step is a database round trip: short runs locally, the kit's default in CI.
    stateful_step_count = 30 if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 12

    @pytest.fixture
    def store_url(self, url_for: Callable[[str], str], session_tables: dict[str, list[str]]) -> str:
        url = url_for(self.engine)
        if self.engine != "sqlite":
            tables = session_tables.setdefault(url, [])
            if self.table_name not in tables:
                tables.append(self.table_name)
        return url

    @pytest.fixture
    def store_url_options(self) -> Mapping[str, Any]:
        return {"table_name": self.table_name}

    @pytest.fixture
    def store_factory(self, store_url: str, store_url_options: Mapping[str, Any]) -> StoreFactory:
        async def open_one() -> SQLAlchemyStore:
            return SQLAlchemyStore.from_url(store_url, **store_url_options)

        return open_one

    @pytest.fixture
    async def store(self, store_factory: StoreFactory) -> AsyncIterator[TokenStore]:
        store = await store_factory()
        assert isinstance(store, SQLAlchemyStore)
        await store.ensure_schema()
        async with store.engine.begin() as conn:  # fresh and empty for every test
            await conn.execute(delete(store.table))
        yield store
        await store.aclose()


class TestSqliteConformance(_Conformance):
    engine = "sqlite"
    table_name = f"pt_test_{secrets.token_hex(6)}"


class TestPostgresqlConformance(_Conformance):
    engine = "postgresql"
    table_name = f"pt_test_{secrets.token_hex(6)}"


class TestMysqlConformance(_Conformance):
    engine = "mysql"
    table_name = f"pt_test_{secrets.token_hex(6)}"
