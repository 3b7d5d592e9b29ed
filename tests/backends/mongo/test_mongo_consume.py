"""``MongoStore.consume``: claim and commit in one command, exactly as the two would leave it.

The rules every store follows (outcomes, retries, takeovers, races) are the conformance
kit's, run against the store in this directory's conformance tests; these are what only
this store can show: its round trips and what it writes on the server.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from mongo_support import DATABASE
from pymongo import AsyncMongoClient, monitoring

import servers
from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
    SupportsConsume,
)
from pausetoken.testing._stateful import assert_same_record
from pausetoken.testing._stores import (
    ANSWER,
    LEASE,
    OTHER_ANSWER,
    TICK,
    TTL,
    StoreConformance,
    _now,
    redeemed_record,
)
from pausetoken.testing._stores import OTHER_SCOPE_HASH as OTHER_SCOPE
from pausetoken.testing._stores import SCOPE_HASH as SCOPE
from pausetoken_mongo import MongoStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CLAIMED = ClaimResult(ClaimOutcome.CLAIMED)
_request = StoreConformance.request
# nx-27017 (0.8.1) never raises a date with $max, so there the TTL index's date stays what
# the first write set, after claim and commit as after consume; a genuine MongoDB raises it.
_RAISES_DATES = servers.variable("MONGODB_URL") is not None


def _key() -> str:
    return secrets.token_urlsafe(12)


def _remove_after(moment: datetime) -> datetime:
    millis = -(-((moment - _EPOCH) // TICK) // 1000)
    return _EPOCH + timedelta(milliseconds=millis)


async def _assert_status(store: MongoStore, expected: PauseRecord) -> None:
    assert_same_record(await store.status(expected.pause_key), expected, "status")
    # The TTL index's date follows the expiry, as it does after claim and commit.
    document = await store.collection.find_one({"_id": expected.pause_key})
    assert document is not None
    if _RAISES_DATES:
        assert document["remove_after"] == _remove_after(expected.expires_at)


class _Commands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
async def client(mongodb_url: str) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url, tz_aware=True)
    yield client
    await client.close()


def test_the_store_offers_consume() -> None:
    assert isinstance(MongoStore.from_url("mongodb://127.0.0.1/app"), SupportsConsume)


async def test_consume_of_an_unknown_pause_redeems_it_with_every_field(store: MongoStore) -> None:
    request = _request(_key(), now=_now(), lease_id="lease-a")
    assert await store.consume(request) == CLAIMED
    await _assert_status(store, redeemed_record(request))


async def test_a_first_consume_is_one_round_trip_as_a_first_claim_is(
    mongodb_url: str, collection: str
) -> None:
    commands = _Commands()
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        mongodb_url, tz_aware=True, event_listeners=[commands]
    )
    try:
        store = MongoStore(client[DATABASE], collection=collection)
        await store.check()
        now = _now()
        commands.names.clear()
        assert await store.claim(_request(_key(), now=now)) == CLAIMED
        claimed = list(commands.names)
        commands.names.clear()
        assert await store.consume(_request(_key(), now=now)) == CLAIMED
        assert commands.names == claimed == ["insert"]
    finally:
        await client.close()


@pytest.mark.parametrize("before", ["nothing", "lease_ends_now", "lease_ended_long_ago"])
@pytest.mark.parametrize("expiry", ["lower", "higher"])
async def test_consume_leaves_exactly_what_claim_then_commit_leave(
    store: MongoStore, before: str, expiry: str
) -> None:
    now = _now()
    consumed, committed = _key(), _key()
    at = now
    if before != "nothing":
        for key in (consumed, committed):
            first = _request(key, now=now, lease_id="lease-old", response_hash=OTHER_ANSWER)
            assert await store.claim(first) == CLAIMED
        at = now + LEASE if before == "lease_ends_now" else now + LEASE + timedelta(hours=2)
    expires_at = (now + TTL - TICK) if expiry == "lower" else (at + TTL + TICK)
    kwargs: dict[str, Any] = {
        "now": at,
        "lease_id": "lease-new",
        "scope_hash": OTHER_SCOPE,
        "name": "second-look",
        "lease": timedelta(seconds=7, microseconds=5),
        "expires_at": expires_at,
    }
    assert await store.consume(_request(consumed, **kwargs)) == CLAIMED
    two_step = _request(committed, **kwargs)
    assert await store.claim(two_step) == CLAIMED
    assert await store.commit(committed, "lease-new", two_step.expires_at) is True

    expected = await store.status(committed)
    assert expected is not None
    assert expected.state is PauseState.REDEEMED
    await _assert_status(store, attrs.evolve(expected, pause_key=consumed))
    one = await store.collection.find_one({"_id": consumed}, projection={"_id": False})
    two = await store.collection.find_one({"_id": committed}, projection={"_id": False})
    assert one == two


async def test_consume_by_the_lease_that_committed_is_claimed_again(store: MongoStore) -> None:
    now, key = _now(), _key()
    request = _request(key, now=now, lease_id="lease-a")
    assert await store.claim(request) == CLAIMED
    assert await store.commit(key, "lease-a", request.expires_at) is True
    assert await store.consume(request) == CLAIMED
    await _assert_status(store, redeemed_record(request))


@pytest.mark.parametrize("state", ["claimed", "redeemed", "revoked", "lapsed", "retried"])
async def test_consume_only_ever_raises_the_expiry(store: MongoStore, state: str) -> None:
    now, key = _now(), _key()
    first = _request(key, now=now, lease_id="lease-a")
    if state == "revoked":
        await store.revoke(key, SCOPE, "approval", first.expires_at, now)
    elif state == "redeemed":
        await store.consume(first)
    else:
        await store.claim(first)
    at = first.lease_until if state == "lapsed" else now
    lease_id = "lease-a" if state == "retried" else "lease-b"
    if state == "retried":
        await store.commit(key, "lease-a", first.expires_at)
    lower = _request(key, now=at, lease_id=lease_id, expires_at=first.expires_at - TICK)
    await store.consume(lower)
    kept = await store.status(key)
    assert kept is not None
    assert kept.expires_at == first.expires_at
    higher = attrs.evolve(lower, expires_at=first.expires_at + timedelta(milliseconds=2))
    await store.consume(higher)
    raised = await store.status(key)
    assert raised is not None
    assert raised.expires_at == higher.expires_at
    document = await store.collection.find_one({"_id": key})
    assert document is not None
    if _RAISES_DATES:
        assert document["remove_after"] == _remove_after(higher.expires_at)


def _bound(
    method: Callable[[ClaimRequest], Awaitable[ClaimResult]], request: ClaimRequest
) -> Callable[[], Awaitable[ClaimResult]]:
    return lambda: method(request)


@pytest.mark.parametrize("before", ["nothing", "lapsed_claim", "consumed"])
async def test_consume_in_a_dropped_collection_is_refused(
    mongodb_url: str, collection: str, client: AsyncMongoClient[dict[str, Any]], before: str
) -> None:
    now, key = _now(), _key()
    store = MongoStore.from_url(mongodb_url, collection=collection)
    try:
        await store.check()
        request = _request(key, now=now + LEASE, lease_id="lease-b")
        if before == "lapsed_claim":
            await store.claim(_request(key, now=now, lease_id="lease-a"))
        elif before == "consumed":
            assert await store.consume(request) == CLAIMED
        # Dropped, then created again by an insert: the marker and the guard's index are gone.
        await client[DATABASE].drop_collection(collection)
        if before != "nothing":
            recreated = {
                "_id": key,
                "state": "redeemed" if before == "consumed" else "claimed",
                "scope_hash": SCOPE,
                "name": "approval",
                "response_hash": ANSWER,
                "lease_id": "lease-b" if before == "consumed" else "lease-a",
                "lease_until": 0,
                "expires_at": 0,
                "remove_after": _EPOCH,
            }
            await client[DATABASE][collection].insert_one(recreated)
        with pytest.raises(StoreUnavailable) as refused:
            await store.consume(request)
        assert refused.value.code == "store_table_missing"
    finally:
        await store.aclose()
