"""The Mongo store's own behaviour: options, URLs, indexes, sharing a client, failures."""

from __future__ import annotations

import asyncio
import socket
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from pymongo import AsyncMongoClient

from pausetoken import open_store
from pausetoken._cli import main
from pausetoken.exceptions import ConfigurationError, StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest, PauseState, store_family
from pausetoken_mongo import DEFAULT_COLLECTION, MongoStore
from private_servers import BlackHole

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


# `store check` opens and closes twenty clients in quick succession, and a store closed during
# a partition closes a client whose monitor is still connecting. pymongo's async monitor
# can drop, unclosed, a socket it was still opening when its client closes: a ResourceWarning
# at garbage collection, about 1 run in 6 (pymongo's own tests meet it: PYTHON-3923). Every
# store here is closed; only that socket warning is let through, any other one still fails.
_LOOP_END_SOCKET = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <socket\.socket:pytest.PytestUnraisableExceptionWarning"
)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _request(key: str, *, now: datetime, lease: str = "lease-1") -> ClaimRequest:
    return ClaimRequest(
        pause_key=key,
        scope_hash="s" * 64,
        name="approval",
        response_hash="r" * 64,
        expires_at=now + timedelta(hours=1, microseconds=3),
        lease_id=lease,
        lease_until=now + timedelta(seconds=30),
        now=now,
    )


@pytest.fixture
async def client(mongodb_url: str) -> AsyncIterator[AsyncMongoClient[dict[str, object]]]:
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(mongodb_url, tz_aware=True)
    yield client
    await client.close()


# -- options and URLs --------------------------------------------------------------------


def test_an_unknown_option_is_refused_when_the_store_is_opened() -> None:
    with pytest.raises(ConfigurationError, match="table_name") as caught:
        MongoStore.from_url("mongodb://127.0.0.1:1/app", table_name="x")
    assert caught.value.code == "settings_unknown"


def test_an_unknown_url_option_is_refused_without_showing_the_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        MongoStore.from_url("mongodb://app:s3cret@127.0.0.1:1/app?noSuchOption=1")
    assert "s3cret" not in str(caught.value)
    assert "***" in str(caught.value)


def test_unacknowledged_writes_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="write_concern 0"):
        MongoStore.from_url("mongodb://127.0.0.1:1/app", write_concern=0)


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "5"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout: object) -> None:
    with pytest.raises(ConfigurationError, match="timeout"):
        MongoStore.from_url("mongodb://127.0.0.1:1/app", timeout=timeout)


def test_an_unknown_read_concern_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="read_concern"):
        MongoStore.from_url("mongodb://127.0.0.1:1/app", read_concern="snapshot-ish")


def test_the_url_path_names_the_database_and_the_query_the_collection() -> None:
    store = MongoStore.from_url("mongodb://127.0.0.1:1/app?collection=pauses&timeout=2.5")
    assert store.collection.database.name == "app"
    assert store.collection.name == "pauses"
    assert "collection 'pauses'" in repr(store)


def test_without_a_database_in_the_url_the_default_is_used() -> None:
    store = MongoStore.from_url("mongodb://127.0.0.1:1")
    assert store.collection.database.name == "pausetoken"
    assert store.collection.name == DEFAULT_COLLECTION


def test_the_database_option_wins_over_the_url_path() -> None:
    store = MongoStore.from_url("mongodb://127.0.0.1:1/app", database="other")
    assert store.collection.database.name == "other"


def test_writes_and_reads_use_the_majority_concerns_by_default() -> None:
    collection = MongoStore.from_url("mongodb://127.0.0.1:1/app").collection
    assert collection.write_concern.document == {"w": "majority"}
    assert collection.read_concern.level == "majority"


def test_the_repr_never_shows_the_password() -> None:
    store = MongoStore.from_url("mongodb://app:s3cret@127.0.0.1:1/app")
    assert "s3cret" not in repr(store)


def _connect_timeout(store: MongoStore) -> float | None:
    return store.collection.database.client.options.pool_options.connect_timeout


def test_the_client_s_connect_timeout_is_the_store_s_timeout() -> None:
    """So that its server monitor gives up on a check a partition left unanswered in time."""
    assert _connect_timeout(MongoStore.from_url("mongodb://127.0.0.1:1/app?timeout=2.5")) == 2.5
    assert _connect_timeout(MongoStore.from_url("mongodb://127.0.0.1:1/app", timeout=3)) == 3
    assert _connect_timeout(MongoStore.from_url("mongodb://127.0.0.1:1/app")) == 10


def test_a_connect_timeout_the_url_sets_is_kept() -> None:
    url = "mongodb://127.0.0.1:1/app?connecttimeoutms=20000&timeout=2"
    assert _connect_timeout(MongoStore.from_url(url)) == 20


def _selection_timeout(store: MongoStore) -> float:
    return store.collection.database.client.options.server_selection_timeout


def test_the_client_s_server_selection_timeout_is_the_store_s_timeout() -> None:
    """So that closing the store during a partition waits no longer than an operation."""
    assert _selection_timeout(MongoStore.from_url("mongodb://127.0.0.1:1/app?timeout=2.5")) == 2.5
    assert _selection_timeout(MongoStore.from_url("mongodb://127.0.0.1:1/app")) == 10
    url = "mongodb://127.0.0.1:1/app?serverSelectionTimeoutMS=20000&timeout=2"
    assert _selection_timeout(MongoStore.from_url(url)) == 20


def test_srv_urls_choose_the_mongodb_store() -> None:
    assert store_family("mongodb+srv://cluster0.example.net/app") == "mongodb"


async def test_open_store_chooses_the_mongo_store_by_url(mongodb_url: str) -> None:
    store = open_store(mongodb_url)
    try:
        assert isinstance(store, MongoStore)
    finally:
        await store.aclose()


# -- data layout -----------------------------------------------------------------------


async def test_check_creates_the_ttl_index_on_the_removal_date(store: MongoStore) -> None:
    indexes = await store.collection.index_information()
    ttl = [spec for spec in indexes.values() if spec["key"] == [("remove_after", 1)]]
    assert len(ttl) == 1
    assert ttl[0]["expireAfterSeconds"] == 0
    assert any(spec["key"] == [("expires_at", 1)] for spec in indexes.values())
    assert await store.ensure_schema() is False  # already present


async def test_the_removal_date_is_never_before_the_exact_expiry(store: MongoStore) -> None:
    now = datetime.now(UTC).replace(microsecond=123_001)
    request = _request("k1", now=now)
    assert (await store.claim(request)).outcome is ClaimOutcome.CLAIMED
    document = await store.collection.find_one({"_id": "k1"})
    assert document is not None
    assert document["expires_at"] % 1000 != 0  # microseconds kept exactly
    assert document["remove_after"] >= request.expires_at
    assert document["remove_after"] - request.expires_at < timedelta(milliseconds=1)


# -- sharing a client ------------------------------------------------------------------


async def test_a_store_on_a_handed_database_never_closes_the_client(
    client: AsyncMongoClient[dict[str, object]], collection: str
) -> None:
    store = MongoStore.from_client(client, "pausetoken_test", collection=collection)
    await store.check()
    assert await store.status("nothing") is None
    await store.aclose()
    # The client still serves its owner.
    assert (await client.admin.command("ping"))["ok"] == 1


async def test_stores_sharing_a_client_see_each_others_claims(
    client: AsyncMongoClient[dict[str, object]], collection: str
) -> None:
    first = MongoStore(client["pausetoken_test"], collection=collection)
    second = MongoStore(client["pausetoken_test"], collection=collection)
    now = datetime.now(UTC)
    assert (await first.claim(_request("shared", now=now))).outcome is ClaimOutcome.CLAIMED
    other = await second.claim(_request("shared", now=now, lease="lease-2"))
    assert other.outcome is ClaimOutcome.IN_PROGRESS
    record = await second.status("shared")
    assert record is not None
    assert record.state is PauseState.CLAIMED


# -- failures --------------------------------------------------------------------------


@pytest.mark.slow
async def test_an_unreachable_server_is_store_unavailable_without_the_password() -> None:
    url = f"mongodb://app:s3cret@127.0.0.1:{_closed_port()}/app?timeout=0.5"
    store = MongoStore.from_url(url)
    try:
        with pytest.raises(StoreUnavailable) as caught:
            await store.claim(_request("k", now=datetime.now(UTC)))
        assert "s3cret" not in str(caught.value)
        with pytest.raises(StoreUnavailable):
            await store.check()
    finally:
        await store.aclose()


@pytest.mark.slow
@_LOOP_END_SOCKET
async def test_a_store_closed_during_a_partition_closes_within_its_timeout(
    mongodb_url: str, collection: str
) -> None:
    # Closing ends the client's sessions on a server it selects first. Once the driver's
    # monitor has found the server gone, that selection waited for pymongo's default server
    # selection timeout (30 s), whatever the store's timeout.
    parsed = urlsplit(mongodb_url)
    if parsed.hostname not in {"127.0.0.1", "localhost"} or parsed.port is None:
        pytest.skip("the partition tests proxy a server on the loopback interface only")
    with BlackHole(parsed.port) as hole:
        # The monitor checks the server every half second (pymongo's shortest interval).
        proxied = parsed._replace(
            netloc=f"127.0.0.1:{hole.port}", query="heartbeatFrequencyMS=500"
        ).geturl()
        store = MongoStore.from_url(proxied, collection=collection, timeout=1)
        await store.status("k")
        hole.cut.set()
        client = store.collection.database.client
        async with asyncio.timeout(15):
            # The driver's view of the server: no event tells when it changes.
            while client.topology_description.has_readable_server():  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        started = time.monotonic()
        async with asyncio.timeout(40):
            await store.aclose()
        assert time.monotonic() - started < 1 + 2


# -- the command line ------------------------------------------------------------------


@_LOOP_END_SOCKET
def test_store_check_passes(
    mongodb_url: str, collection: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"{mongodb_url}?collection={collection}"
    assert main(["store", "check", target]) == 0
    out = capsys.readouterr().out
    assert "created" in out
    assert "FAIL" not in out
    assert main(["store", "check", target]) == 0
    assert "already present" in capsys.readouterr().out


@_LOOP_END_SOCKET
def test_store_purge_runs(
    mongodb_url: str, collection: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"{mongodb_url}?collection={collection}"
    assert main(["store", "check", target]) == 0
    capsys.readouterr()
    assert main(["store", "purge", target, "--before", "1h"]) == 0
    assert capsys.readouterr().out.strip() == "0"


def test_backends_lists_the_mongo_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "mongodb" in out
    assert "pausetoken-mongo" in out


# -- a dropped collection --------------------------------------------------------------


async def test_a_dropped_collection_is_refused_and_never_accepts_a_pause_again(
    mongodb_url: str, collection: str, client: AsyncMongoClient[dict[str, object]]
) -> None:
    now = datetime.now(UTC)
    running = MongoStore.from_url(mongodb_url, collection=collection)
    try:
        await running.check()
        assert (await running.claim(_request("answered", now=now))).outcome is ClaimOutcome.CLAIMED
        assert await running.commit("answered", "lease-1", now + timedelta(hours=1)) is True
        await client["pausetoken_test"].drop_collection(collection)

        # A running store fails closed: the pause answered before is not claimable again.
        with pytest.raises(StoreUnavailable) as failed:
            await running.claim(_request("answered", now=now, lease="lease-2"))
        assert failed.value.code == "store_table_missing"
        with pytest.raises(StoreUnavailable) as failed_revoke:
            await running.revoke("other", "s" * 64, "approval", now + timedelta(hours=1), now)
        assert failed_revoke.value.code == "store_table_missing"
    finally:
        await running.aclose()

    # A store opened afterwards refuses to start rather than create the collection again.
    fresh = MongoStore.from_url(mongodb_url, collection=collection)
    try:
        with pytest.raises(ConfigurationError) as refused:
            await fresh.check()
        assert refused.value.code == "store_table_missing"
        assert "dropped" in refused.value.detail
        with pytest.raises(ConfigurationError, match="dropped"):
            await fresh.ensure_schema()
        with pytest.raises(ConfigurationError, match="dropped"):
            await fresh.claim(_request("answered", now=now, lease="lease-3"))
    finally:
        await fresh.aclose()


async def test_stores_starting_together_on_a_fresh_collection_all_start(
    mongodb_url: str, collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Worker A finds no sentinel; worker B prepares the collection completely before A reads
    # the schema record: A must not take B's record for a collection dropped after creation.
    slow = MongoStore.from_url(mongodb_url, collection=collection)
    quick = MongoStore.from_url(mongodb_url, collection=collection)
    read_sentinel = slow._has_sentinel  # the interleaving under test

    async def then_another_worker_prepares() -> bool:
        found = await read_sentinel()
        monkeypatch.undo()
        await quick.check()
        return found

    monkeypatch.setattr(slow, "_has_sentinel", then_another_worker_prepares)
    try:
        await slow.check()
        now = datetime.now(UTC)
        assert (await slow.claim(_request("first", now=now))).outcome is ClaimOutcome.CLAIMED
        assert (await quick.claim(_request("first", now=now, lease="lease-2"))).outcome is (
            ClaimOutcome.IN_PROGRESS
        )
    finally:
        await slow.aclose()
        await quick.aclose()


async def test_a_fresh_collection_is_prepared_by_the_first_operation(
    mongodb_url: str, collection: str
) -> None:
    store = MongoStore.from_url(mongodb_url, collection=collection)
    try:
        now = datetime.now(UTC)
        assert (await store.claim(_request("first", now=now))).outcome is ClaimOutcome.CLAIMED
        indexes = await store.collection.index_information()
        assert any(spec["key"] == [("remove_after", 1)] for spec in indexes.values())
        assert await store.ensure_schema() is False
        assert await store.purge(now + timedelta(days=1)) == 1  # the pause, nothing else
    finally:
        await store.aclose()
