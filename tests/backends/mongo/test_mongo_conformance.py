"""The conformance kit against the Mongo store (nx-27017, or the configured server)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest
from mongo_support import new_collection

from pausetoken.testing import StoreConformance, StoreFactory
from pausetoken_mongo import MongoStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from pausetoken.plugins import TokenStore


class TestMongoConformance(StoreConformance):
    # Every step is a server round trip: short runs locally, the kit's default in CI.
    stateful_step_count = 30 if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 12

    @pytest.fixture
    def store_url(self, mongodb_url: str) -> str:
        return mongodb_url

    @pytest.fixture
    def store_url_options(self, collections: list[str]) -> Mapping[str, Any]:
        return {"collection": new_collection(collections)}

    @pytest.fixture
    def store_factory(self, store_url: str, store_url_options: Mapping[str, Any]) -> StoreFactory:
        async def open_one() -> MongoStore:
            return MongoStore.from_url(store_url, **store_url_options)

        return open_one

    @pytest.fixture
    async def store(self, store_factory: StoreFactory) -> AsyncIterator[TokenStore]:
        store = await store_factory()
        await store.check()
        yield store
        await store.aclose()
