"""Engines for the SQLAlchemy store tests: a SQLite file always, servers when configured.

PostgreSQL and MySQL/MariaDB tests read ``PAUSETOKEN_TEST_POSTGRESQL_URL`` and
``PAUSETOKEN_TEST_MYSQL_URL`` and skip with the reason when a variable is unset (CI sets
both and starts the servers, so there a missing server fails instead). Every test gets
its own table name, dropped afterwards, so parallel runs never collide.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import MetaData, delete, inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

import servers
from pausetoken_sqlalchemy import SCHEMA_TABLE_NAME, SQLAlchemyStore, make_schema_table

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from pathlib import Path

ENGINES = ("sqlite", "postgresql", "mysql")
SERVER_ENV = {"postgresql": "POSTGRESQL_URL", "mysql": "MYSQL_URL"}


def server_url(engine: str) -> str:
    """The configured URL of a server engine, or skip the test saying which variable."""
    name = SERVER_ENV[engine]
    url = servers.variable(name)
    if not url:
        pytest.skip(f"{servers.PREFIX}{name} is not set: no {engine} server to test against")
    return url


def engine_url(engine: str, tmp_path: Path) -> str:
    """A URL for ``engine``: a fresh SQLite file, or the configured server."""
    if engine == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}"
    return server_url(engine)


def new_table_name() -> str:
    return f"pt_test_{secrets.token_hex(6)}"


async def drop_tables(url: str, *names: str) -> None:
    """Drop test tables and their schema-marker rows (servers keep them otherwise)."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            preparer = engine.dialect.identifier_preparer
            existing = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
            for name in names:
                if name in existing:
                    await conn.execute(text(f"DROP TABLE {preparer.quote(name)}"))
            if SCHEMA_TABLE_NAME in existing:
                marker = make_schema_table(MetaData())
                await conn.execute(delete(marker).where(marker.c.table_name.in_(names)))
    finally:
        await engine.dispose()


@pytest.fixture(params=ENGINES)
def engine_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(engine_name: str, tmp_path: Path) -> str:
    return engine_url(engine_name, tmp_path)


@pytest.fixture
async def table_name(url: str) -> AsyncIterator[str]:
    name = new_table_name()
    yield name
    await drop_tables(url, name)


@pytest.fixture
async def store(url: str, table_name: str) -> AsyncIterator[SQLAlchemyStore]:
    store = SQLAlchemyStore.from_url(url, table_name=table_name)
    yield store
    await store.aclose()


@pytest.fixture
def url_for(tmp_path: Path) -> Callable[[str], str]:
    """``url_for(engine)``: a URL for one engine (skips when its server is not configured)."""
    return lambda engine: engine_url(engine, tmp_path)


@pytest.fixture(scope="session")
def session_tables() -> Iterator[dict[str, list[str]]]:
    """Tables created by class-wide fixtures, dropped once at the end of the session."""
    created: dict[str, list[str]] = {}
    yield created
    for url, names in created.items():
        asyncio.run(drop_tables(url, *names))


_ENGINE_WORDS = {"sqlite": ("sqlite",), "postgresql": ("postgres",), "mysql": ("mysql", "mariadb")}


def _engine_of(item: pytest.Item) -> str | None:
    """The engine a test runs on: its engine parameter, else the one its name mentions."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        for value in callspec.params.values():
            if value in ENGINES:
                return str(value)
    text = item.nodeid.lower()
    hits = [engine for engine, words in _ENGINE_WORDS.items() if any(w in text for w in words)]
    return hits[0] if len(hits) == 1 else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a nox database session, run that engine's tests only (engine-free ones with SQLite).

    nox sets ``PAUSETOKEN_TEST_BACKEND``; the other engines' tests are deselected rather than
    skipped, so a skip in a database session always means something is missing.
    """
    chosen = servers.variable("BACKEND")
    if chosen not in ENGINES:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        engine = _engine_of(item) or "sqlite"
        (keep if engine == chosen else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
