"""The Redis server for the Redis store tests, and per-test key prefixes.

The server is ``PAUSETOKEN_TEST_REDIS_URL`` (``.ci/run`` starts one on 127.0.0.1:6379 and
sets it); without it the tests skip with the reason, and under CI the nox session fails
instead. Every test writes under its own key prefix and deletes those keys afterwards, so
parallel runs on one server never meet, and nothing else on the server is touched.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import pytest
from redis.asyncio import Redis

import servers

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def redis_url() -> str:
    """The configured standalone server, or skip the test saying which variable."""
    url = servers.variable("REDIS_URL")
    if not url:
        pytest.skip(f"{servers.PREFIX}REDIS_URL is not set: no Redis server to test against")
    return url


def new_prefix() -> str:
    return f"pt-test-{secrets.token_hex(6)}:"


async def delete_prefixed(client: Redis, prefix: str) -> None:
    """Delete the keys under ``prefix`` (never FLUSHDB: the server is shared)."""
    batch = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
    if batch:
        await client.delete(*batch)


@pytest.fixture
def url() -> str:
    return redis_url()


@pytest.fixture
async def key_prefix(url: str) -> AsyncIterator[str]:
    """A fresh key prefix, its keys deleted after the test."""
    prefix = new_prefix()
    yield prefix
    client = Redis.from_url(url)
    try:
        await delete_prefixed(client, prefix)
    finally:
        await client.aclose()
