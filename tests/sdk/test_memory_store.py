"""MemoryStore: the whole conformance kit, plus what is particular to it."""

from __future__ import annotations

import asyncio
import hashlib
import warnings
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

import pausetoken
from pausetoken import MemoryStore, MemoryStoreWarning, _memory_store
from pausetoken._store_api import STORE_API_VERSION
from pausetoken.exceptions import ConfigurationError, StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest
from pausetoken.testing import StoreConformance

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")

NOW = datetime(2030, 1, 1, tzinfo=UTC)
HASH = hashlib.sha256(b"x").hexdigest()


def _request(pause_key: str = "j" * 22) -> ClaimRequest:
    return ClaimRequest(
        pause_key=pause_key,
        scope_hash=HASH,
        name="approval",
        response_hash=HASH,
        expires_at=NOW + timedelta(hours=1),
        lease_id="lease",
        lease_until=NOW + timedelta(seconds=30),
        now=NOW,
    )


class TestMemoryStoreConformance(StoreConformance):
    """The kit through the one ``store`` (warmed with concurrent calls before each race)."""

    process_race_skip_reason = "MemoryStore is process-local: other processes never see its rows"

    @pytest.fixture
    async def store(self) -> AsyncIterator[MemoryStore]:
        store = MemoryStore()
        yield store
        await store.aclose()


def test_the_first_store_of_a_process_warns_that_it_is_not_shared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_memory_store, "_warned", False)
    with pytest.warns(MemoryStoreWarning, match="this process only"):
        MemoryStore()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MemoryStore()  # the second one is silent


def test_the_warning_is_a_user_warning() -> None:
    assert issubclass(pausetoken.MemoryStoreWarning, UserWarning)


@pytest.mark.parametrize("url", ["memory://", "memory:", "MEMORY://"])
def test_from_url_accepts_the_memory_scheme(url: str) -> None:
    assert isinstance(MemoryStore.from_url(url), MemoryStore)


@pytest.mark.parametrize(
    "url", ["memory://somewhere", "memory:///x", "sqlite:///x.db", "", "memoryx://"]
)
def test_from_url_refuses_anything_else(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        MemoryStore.from_url(url)
    assert info.value.code == "configuration_error"


def test_from_url_refuses_options() -> None:
    with pytest.raises(ConfigurationError, match="no options"):
        MemoryStore.from_url("memory://", pool_size=3)


def test_it_declares_the_store_api_version_and_is_process_local() -> None:
    assert MemoryStore.api_version == STORE_API_VERSION == 2
    assert MemoryStore.process_local is True
    assert isinstance(MemoryStore(), pausetoken.TokenStore)


def test_two_stores_share_nothing() -> None:
    async def scenario() -> tuple[ClaimOutcome, ClaimOutcome]:
        first, second = MemoryStore(), MemoryStore()
        a = await first.claim(_request())
        b = await second.claim(_request())
        return a.outcome, b.outcome

    assert asyncio.run(scenario()) == (ClaimOutcome.CLAIMED, ClaimOutcome.CLAIMED)


async def test_a_closed_store_fails_closed() -> None:
    store = MemoryStore()
    await store.claim(_request())
    await store.aclose()
    await store.aclose()  # closing twice is fine
    with pytest.raises(StoreUnavailable) as info:
        await store.claim(_request())
    assert info.value.http_status == 503
    with pytest.raises(StoreUnavailable):
        await store.status("j" * 22)
    assert repr(store) == "MemoryStore(closed)"


async def test_repr_counts_rows_and_shows_no_token_ids() -> None:
    store = MemoryStore()
    await store.claim(_request("secretjti" * 3))
    assert repr(store) == "MemoryStore(rows=1)"
