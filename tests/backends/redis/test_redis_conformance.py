"""The conformance kit, the 8-store race and the multi-process race on a standalone Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from pausetoken.testing import StoreConformance, StoreFactory
from pausetoken_redis import RedisStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from pausetoken.plugins import TokenStore


class TestRedisConformance(StoreConformance):
    # Rows expire by themselves (PEXPIREAT): purge has nothing to delete.
    supports_purge: ClassVar[bool] = False
    process_race_processes = 8

    @pytest.fixture
    def store_url(self, url: str) -> str:
        return url

    @pytest.fixture
    def store_url_options(self, key_prefix: str) -> Mapping[str, Any]:
        return {"key_prefix": key_prefix}

    @pytest.fixture
    def store_factory(self, store_url: str, store_url_options: Mapping[str, Any]) -> StoreFactory:
        async def open_one() -> RedisStore:
            return RedisStore.from_url(store_url, **store_url_options)

        return open_one

    @pytest.fixture
    async def store(self, store_factory: StoreFactory) -> AsyncIterator[TokenStore]:
        store = await store_factory()
        await store.check()
        yield store
        await store.aclose()
