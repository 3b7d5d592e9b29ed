"""Store URLs per engine for the integration tests: shared servers, or private ones.

The race runs on the servers CI starts (``PAUSETOKEN_TEST_*_URL``, each test under its own
table, key prefix or collection) and on servers it starts itself (a Redis Cluster,
nx-27017). The fault tests only ever use private servers (`private_servers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from typing import TYPE_CHECKING, Any

import pytest

import servers
from private_servers import nx_27017_server
from redis_servers import redis_cluster

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

ENGINES = ("sqlite", "postgresql", "mysql", "redis", "redis-cluster", "mongodb")
SHARED = {"postgresql": "POSTGRESQL_URL", "mysql": "MYSQL_URL", "redis": "REDIS_URL"}
ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def shared_url(engine: str) -> str:
    """The configured shared server of ``engine``; skip without one (fail under CI)."""
    name = SHARED[engine]
    url = servers.variable(name)
    if not url:
        reason = f"{servers.PREFIX}{name} is not set: no {engine} server to test against"
        if ON_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    return url


@contextlib.contextmanager
def store_for(engine: str, directory: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """A store URL and options of ``engine`` holding nothing yet; cleaned up afterwards."""
    tag = secrets.token_hex(6)
    if engine == "sqlite":
        yield f"sqlite+aiosqlite:///{directory / 'tokens.db'}", {}
    elif engine in {"postgresql", "mysql"}:
        url, table = shared_url(engine), f"pt_race_{tag}"
        try:
            yield url, {"table_name": table}
        finally:
            asyncio.run(_drop_table(url, table))
    elif engine == "redis":
        url, prefix = shared_url(engine), f"pt-race-{tag}:"
        try:
            yield url, {"key_prefix": prefix}
        finally:
            asyncio.run(_delete_prefixed(url, prefix))
    elif engine == "redis-cluster":
        with redis_cluster(directory / "cluster", replicas=0) as ports:
            yield f"redis+cluster://127.0.0.1:{ports[0]}/", {}
    elif engine == "mongodb":
        with nx_27017_server(directory / "nx-27017") as server:
            yield server.url, {"collection": f"race_{tag}"}
    else:  # pragma: no cover - a typo in a parametrization
        pytest.fail(f"unknown engine {engine}")


async def _drop_table(url: str, table: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from pausetoken_sqlalchemy import SCHEMA_TABLE_NAME

    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            quote = engine.dialect.identifier_preparer.quote
            await conn.execute(text(f"DROP TABLE IF EXISTS {quote(table)}"))
            await conn.execute(
                text(f"DELETE FROM {quote(SCHEMA_TABLE_NAME)} WHERE table_name = :name"),  # noqa: S608
                {"name": table},
            )
    finally:
        await engine.dispose()


async def _delete_prefixed(url: str, prefix: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    try:
        batch = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
        for start in range(0, len(batch), 1000):
            await client.delete(*batch[start : start + 1000])
    finally:
        await client.aclose()
