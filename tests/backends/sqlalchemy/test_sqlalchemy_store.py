"""Behaviour of the SQLAlchemy store beyond the protocol: schema, engines, URLs, purging."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import MetaData, func, insert, select, text, update
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy_support import SCOPE, claim_request, new_pause_key

from pausetoken import open_store
from pausetoken.exceptions import BackendNotInstalled, ConfigurationError, StoreUnavailable
from pausetoken.plugins import ClaimOutcome, TokenStore, install_hint
from pausetoken_sqlalchemy import (
    DEFAULT_TABLE_NAME,
    PURGE_BATCH,
    SCHEMA_VERSION,
    SQLAlchemyStore,
    make_schema_table,
    metadata,
    redemptions_table,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

OTHER = hashlib.sha256(b"other").hexdigest()


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


# -- the table ----------------------------------------------------------------------------


async def test_pause_keys_differing_only_in_case_are_two_rows(store: SQLAlchemyStore) -> None:
    now, rest = _now(), new_pause_key()
    lower, upper = "aB" + rest, "Ab" + rest
    first = await store.claim(claim_request(lower, now=now))
    second = await store.claim(claim_request(upper, now=now, answer=OTHER))
    assert (first.outcome, second.outcome) == (ClaimOutcome.CLAIMED, ClaimOutcome.CLAIMED)
    async with store.engine.connect() as conn:
        keys = (await conn.execute(select(store.table.c.pause_key))).scalars().all()
    assert sorted(bytes(k) for k in keys) == sorted([lower.encode(), upper.encode()])


async def test_the_exported_tables_created_by_a_migration_serve_the_store(
    url_for: Callable[[str], str],
) -> None:
    assert redemptions_table.name == DEFAULT_TABLE_NAME
    assert [column.name for column in redemptions_table.primary_key] == ["pause_key"]
    engine = create_async_engine(url_for("sqlite"))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)  # what a migration of target_metadata does
        async with SQLAlchemyStore(engine) as store:
            assert await store.ensure_schema() is False  # found, not created
            result = await store.claim(claim_request(new_pause_key(), now=_now()))
            assert result.outcome is ClaimOutcome.CLAIMED
    finally:
        await engine.dispose()


async def test_the_schema_is_created_on_first_use_with_a_version_marker(
    store: SQLAlchemyStore,
) -> None:
    assert (await store.claim(claim_request(new_pause_key(), now=_now()))).outcome is (
        ClaimOutcome.CLAIMED
    )
    marker = make_schema_table(MetaData())
    async with store.engine.connect() as conn:
        version = (
            await conn.execute(
                select(marker.c.version).where(marker.c.table_name == store.table.name)
            )
        ).scalar_one()
    assert version == SCHEMA_VERSION


async def test_ensure_schema_twice_is_harmless(store: SQLAlchemyStore) -> None:
    await store.ensure_schema()
    await store.ensure_schema()
    assert await store.status(new_pause_key()) is None


async def test_many_stores_creating_the_schema_at_once_all_succeed(
    url: str, table_name: str
) -> None:
    stores = [SQLAlchemyStore.from_url(url, table_name=table_name) for _ in range(6)]
    try:
        await asyncio.gather(*(s.ensure_schema() for s in stores))
        now = _now()
        results = await asyncio.gather(
            *(s.claim(claim_request(new_pause_key(), now=now)) for s in stores)
        )
        assert {r.outcome for r in results} == {ClaimOutcome.CLAIMED}
    finally:
        for s in stores:
            await s.aclose()


async def test_a_table_from_a_newer_release_is_refused(url: str, table_name: str) -> None:
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as first:
        await first.ensure_schema()
        marker = make_schema_table(MetaData())
        async with first.engine.begin() as conn:
            await conn.execute(
                update(marker)
                .where(marker.c.table_name == table_name)
                .values(version=SCHEMA_VERSION + 1)
            )
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as second:
        with pytest.raises(ConfigurationError, match="schema version"):
            await second.ensure_schema()


async def test_purge_deletes_in_batches_and_returns_the_total(
    store: SQLAlchemyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.ensure_schema()
    expired, live = PURGE_BATCH * 2 + 500, 10
    cutoff_us = 2_000_000_000_000_000
    rows = [
        {
            "pause_key": f"purge-{i:06d}".encode(),
            "scope_hash": SCOPE,
            "name": "approval",
            "state": "redeemed",
            "expires_at_us": cutoff_us - 1 if i < expired else cutoff_us,
            "created_at_us": 0,
            "updated_at_us": 0,
        }
        for i in range(expired + live)
    ]
    async with store.engine.begin() as conn:
        await conn.execute(insert(store.table), rows)

    batches: list[int] = []
    real_batch = store._statements.purge_batch

    async def counting_batch(conn: object, before_us: int) -> int:
        deleted = await real_batch(conn, before_us)
        batches.append(deleted)
        return deleted

    monkeypatch.setattr(store._statements, "purge_batch", counting_batch)
    cutoff = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=cutoff_us)
    assert await store.purge(cutoff) == expired
    assert batches == [PURGE_BATCH, PURGE_BATCH, 500]
    async with store.engine.connect() as conn:
        left = (await conn.execute(select(func.count()).select_from(store.table))).scalar_one()
    assert left == live


# -- engines and URLs -----------------------------------------------------------------------


async def test_a_shared_engine_is_not_disposed_when_the_store_closes(
    url: str, table_name: str
) -> None:
    engine = create_async_engine(url)
    try:
        store = SQLAlchemyStore.from_engine(engine, table_name=table_name)
        now = _now()
        assert (await store.claim(claim_request(new_pause_key(), now=now))).outcome is (
            ClaimOutcome.CLAIMED
        )
        await store.aclose()
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
        with pytest.raises(StoreUnavailable, match="closed"):
            await store.claim(claim_request(new_pause_key(), now=now))
    finally:
        await engine.dispose()


async def test_a_store_on_a_shared_engine_leaves_its_isolation_level_as_it_was(
    url: str, table_name: str
) -> None:
    engine = create_async_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            before = await conn.get_isolation_level()
        async with SQLAlchemyStore(engine, table_name=table_name) as store:
            await store.claim(claim_request(new_pause_key(), now=_now()))
        async with engine.connect() as conn:
            assert await conn.get_isolation_level() == before
    finally:
        await engine.dispose()


async def test_the_registry_opens_the_store_by_url(url: str, table_name: str) -> None:
    store = open_store(url, table_name=table_name)
    try:
        assert isinstance(store, SQLAlchemyStore)
        assert isinstance(store, TokenStore)
        assert (await store.claim(claim_request(new_pause_key(), now=_now()))).outcome is (
            ClaimOutcome.CLAIMED
        )
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("url", "driver", "extra"),
    [
        ("postgresql+asyncpg://u@127.0.0.1/db", "asyncpg", "postgresql"),
        ("postgresql://u@127.0.0.1/db", "asyncpg", "postgresql"),
        ("mysql+asyncmy://u@127.0.0.1/db", "asyncmy", "mysql"),
        ("mariadb+asyncmy://u@127.0.0.1/db", "asyncmy", "mysql"),
        ("sqlite+aiosqlite:///tokens.db", "aiosqlite", "sqlite"),
    ],
)
def test_a_missing_driver_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, url: str, driver: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, driver, None)  # what an uninstalled package looks like
    with pytest.raises(BackendNotInstalled) as caught:
        SQLAlchemyStore.from_url(url)
    assert install_hint(f"pausetoken-sqlalchemy[{extra}]") in caught.value.detail
    with pytest.raises(BackendNotInstalled):
        open_store(url)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://u@127.0.0.1/db",
        "mysql+aiomysql://u@127.0.0.1/db",
        "oracle+oracledb://u@127.0.0.1/db",
        "not a url",
    ],
)
def test_an_unsupported_url_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError):
        SQLAlchemyStore.from_url(url)


def test_an_invalid_url_option_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="pool_size"):
        SQLAlchemyStore.from_url(f"sqlite+aiosqlite:///{tmp_path}/t.db?pool_size=many")


async def test_pool_and_store_options_come_from_the_url_query_and_keywords(
    tmp_path: Path,
) -> None:
    store = SQLAlchemyStore.from_url(
        f"sqlite+aiosqlite:///{tmp_path}/t.db?pool_size=3&table_name=from_query&timeout=2.5",
        max_overflow=1,
    )
    try:
        assert store.engine.pool.size() == 3  # type: ignore[attr-defined]
        assert store.table.name == "from_query"
        assert "pool_size" not in str(store.engine.url)
    finally:
        await store.aclose()
    store = SQLAlchemyStore.from_url(
        f"sqlite+aiosqlite:///{tmp_path}/t.db?table_name=from_query", table_name="from_keyword"
    )
    try:
        assert store.table.name == "from_keyword"
    finally:
        await store.aclose()
    store = SQLAlchemyStore.from_url(f"sqlite+aiosqlite:///{tmp_path}/t.db", pool_size="4")
    try:
        assert store.engine.pool.size() == 4  # type: ignore[attr-defined]
    finally:
        await store.aclose()


async def test_a_url_without_a_driver_gets_the_supported_one() -> None:
    store = SQLAlchemyStore.from_url("postgresql://user@127.0.0.1:1/db")
    try:
        assert store.engine.dialect.driver == "asyncpg"
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://user:s3cr3t-pw@127.0.0.1:1/db",
        "mysql+asyncmy://user:s3cr3t-pw@127.0.0.1:1/db",
    ],
)
async def test_an_unreachable_server_fails_closed_without_showing_the_password(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with SQLAlchemyStore.from_url(url, timeout=5) as store:
        with pytest.raises(StoreUnavailable) as caught:
            await store.claim(claim_request(new_pause_key(), now=_now()))
        assert "s3cr3t-pw" not in str(caught.value)
        assert "***" in str(caught.value)
        assert "s3cr3t-pw" not in repr(store)
    assert "s3cr3t-pw" not in caplog.text


def test_naive_times_are_refused_before_any_database_work(tmp_path: Path) -> None:
    store = SQLAlchemyStore.from_url(f"sqlite+aiosqlite:///{tmp_path}/t.db")
    naive = datetime(2030, 1, 1)  # noqa: DTZ001 - the point of the test
    request = claim_request(new_pause_key(), now=naive)
    with pytest.raises(ValueError, match="timezone-aware"):
        asyncio.run(store.claim(request))
    assert not (tmp_path / "t.db").exists()


async def test_a_sqlite_file_runs_in_wal_mode(url_for: Callable[[str], str]) -> None:
    async with SQLAlchemyStore.from_url(url_for("sqlite")) as store:
        await store.ensure_schema()
        async with store.engine.connect() as conn:
            mode = (await conn.execute(text("PRAGMA journal_mode"))).scalar_one()
    assert mode == "wal"


@pytest.mark.parametrize("engine_name", ["mysql"])  # the table fixtures follow this engine
async def test_mysql_claims_make_the_driver_log_no_warnings(
    url: str, table_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="asyncmy")
    now, key, revoked = _now(), new_pause_key(), new_pause_key()
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as store:
        await store.ensure_schema()
        caplog.clear()
        outcomes = [(await store.claim(claim_request(key, now=now, lease_id="lease-a"))).outcome]
        outcomes.append((await store.claim(claim_request(key, now=now))).outcome)
        await store.commit(key, "lease-a", now + timedelta(hours=1))
        outcomes.append((await store.claim(claim_request(key, now=now))).outcome)
        outcomes.append((await store.claim(claim_request(key, now=now, answer=OTHER))).outcome)
        await store.revoke(revoked, SCOPE, "approval", now + timedelta(hours=1), now)
        outcomes.append((await store.claim(claim_request(revoked, now=now))).outcome)
    assert outcomes == [
        ClaimOutcome.CLAIMED,
        ClaimOutcome.IN_PROGRESS,
        ClaimOutcome.REDEEMED_SAME,
        ClaimOutcome.REDEEMED_OTHER,
        ClaimOutcome.REVOKED,
    ]
    assert [r for r in caplog.records if r.name.startswith("asyncmy")] == []


def test_a_sqlite_without_returning_is_refused_at_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sqlite3.sqlite_version_info", (3, 34, 1))
    with pytest.raises(ConfigurationError, match=r"3\.35"):
        SQLAlchemyStore.from_url(f"sqlite+aiosqlite:///{tmp_path}/t.db")
