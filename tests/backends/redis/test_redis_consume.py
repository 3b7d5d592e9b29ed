"""``RedisStore.consume``: claim and commit in one script, exactly as the two would leave it.

The rules every store follows (outcomes, retries, takeovers, races) are the conformance
kit's, run against the store in this directory's conformance tests; these are what only
this store can show: its round trips and what it writes on the server.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

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
from pausetoken_redis import RedisStore, _scripts
from redis_servers import free_port, start_server, stop

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CLAIMED = ClaimResult(ClaimOutcome.CLAIMED)
_request = StoreConformance.request


def _key() -> str:
    return secrets.token_urlsafe(12)


def _pexpiretime(moment: datetime) -> int:
    return -(-((moment - _EPOCH) // TICK) // 1000)


async def _assert_status(store: RedisStore, expected: PauseRecord) -> None:
    assert_same_record(await store.status(expected.pause_key), expected, "status")
    # The key's PEXPIREAT follows the row's expiry, as it does after claim and commit.
    assert await store.client.pexpiretime(store.key(expected.pause_key)) == _pexpiretime(
        expected.expires_at
    )


@pytest.fixture
async def store(url: str, key_prefix: str) -> AsyncIterator[RedisStore]:
    async with RedisStore.from_url(url, key_prefix=key_prefix) as opened:
        await opened.check()
        yield opened


def test_the_store_offers_consume() -> None:
    assert isinstance(RedisStore(Redis()), SupportsConsume)


async def test_consume_of_an_unknown_pause_redeems_it_with_every_field(store: RedisStore) -> None:
    request = _request(_key(), now=_now(), lease_id="lease-a")
    assert await store.consume(request) == CLAIMED
    await _assert_status(store, redeemed_record(request))


def _round_trips(store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> list[list[object]]:
    """The commands of each round trip the store's client makes from now on (a list each)."""
    trips: list[list[object]] = []
    execute = store.client.execute_command
    pipelined = Pipeline._execute_pipeline

    async def single(*args: Any, **options: Any) -> Any:
        trips.append([args[0]])
        return await execute(*args, **options)

    async def batch(pipe: Pipeline, connection: Any, commands: Any, raise_on_error: bool) -> Any:
        trips.append([args[0] for args, _ in commands])
        return await pipelined(pipe, connection, commands, raise_on_error)

    monkeypatch.setattr(store.client, "execute_command", single)
    monkeypatch.setattr(Pipeline, "_execute_pipeline", batch)
    return trips


async def test_consume_is_one_evalsha(store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> None:
    trips = _round_trips(store, monkeypatch)
    now = _now()
    key = _key()
    assert await store.consume(_request(key, now=now)) == CLAIMED
    assert trips == [["EVALSHA"]]
    trips.clear()
    assert (await store.consume(_request(key, now=now))).outcome is ClaimOutcome.REDEEMED_SAME
    assert trips == [["EVALSHA"]]


async def test_concurrent_consumes_share_round_trips(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sixteen consumes submitted at once leave in pipelines of up to eight scripts, never
    # two of one pause in one pipeline, and each gets the answer it would get alone: four
    # pauses are consumed twice, with different answers, and exactly one of the two wins.
    now = _now()
    keys = [_key() for _ in range(12)]
    requests = [_request(key, now=now, lease_id=f"lease-{i}") for i, key in enumerate(keys)]
    rivals = [
        _request(key, now=now, lease_id=f"rival-{i}", response_hash=OTHER_ANSWER)
        for i, key in enumerate(keys[:4])
    ]
    trips = _round_trips(store, monkeypatch)
    results = await asyncio.gather(*map(store.consume, [*requests, *rivals]))
    assert sum(map(len, trips)) == 16
    assert len(trips) < 16
    assert all(len(trip) <= 8 and set(trip) == {"EVALSHA"} for trip in trips)
    assert results[4:12] == [CLAIMED] * 8
    pairs = zip(results[:4], results[12:], strict=True)
    for first, rival, outcomes in zip(requests, rivals, pairs, strict=False):
        assert {result.outcome for result in outcomes} == {
            ClaimOutcome.CLAIMED,
            ClaimOutcome.REDEEMED_OTHER,
        }
        await _assert_status(store, redeemed_record(first if outcomes[0] == CLAIMED else rival))
    for request in requests[4:]:
        await _assert_status(store, redeemed_record(request))


@pytest.mark.parametrize("before", ["nothing", "lease_ends_now", "lease_ended_long_ago"])
@pytest.mark.parametrize("expiry", ["lower", "higher"])
async def test_consume_leaves_exactly_what_claim_then_commit_leave(
    store: RedisStore, before: str, expiry: str
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
    client = store.client
    assert await client.hgetall(store.key(consumed)) == await client.hgetall(store.key(committed))
    assert await client.pexpiretime(store.key(consumed)) == await client.pexpiretime(
        store.key(committed)
    )


async def test_consume_by_the_lease_that_committed_is_claimed_again(store: RedisStore) -> None:
    now, key = _now(), _key()
    request = _request(key, now=now, lease_id="lease-a")
    assert await store.claim(request) == CLAIMED
    assert await store.commit(key, "lease-a", request.expires_at) is True
    assert await store.consume(request) == CLAIMED
    await _assert_status(store, redeemed_record(request))


@pytest.mark.parametrize("state", ["claimed", "redeemed", "revoked", "lapsed", "retried"])
async def test_consume_only_ever_raises_the_expiry_and_the_key_s_pexpireat(
    store: RedisStore, state: str
) -> None:
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
    assert await store.client.pexpiretime(store.key(key)) == _pexpiretime(first.expires_at)
    higher = attrs.evolve(lower, expires_at=first.expires_at + timedelta(milliseconds=2))
    await store.consume(higher)
    raised = await store.status(key)
    assert raised is not None
    assert raised.expires_at == higher.expires_at
    assert await store.client.pexpiretime(store.key(key)) == _pexpiretime(higher.expires_at)


async def _racing_stores(url: str, key_prefix: str, count: int) -> list[RedisStore]:
    stores = [RedisStore.from_url(url, key_prefix=key_prefix) for _ in range(count)]
    for one in stores:
        await one.check()
    return stores


def _bound(
    method: Callable[[ClaimRequest], Awaitable[ClaimResult]], request: ClaimRequest
) -> Callable[[], Awaitable[ClaimResult]]:
    return lambda: method(request)


async def test_check_loads_the_consume_script(store: RedisStore) -> None:
    sha = hashlib.sha1(_scripts.CONSUME.encode(), usedforsecurity=False).hexdigest()
    assert await store.client.script_exists(sha) == [True]


@pytest.mark.slow
async def test_consume_loads_its_script_again_after_a_flush(tmp_path: Path) -> None:
    port = free_port()
    server = start_server(tmp_path, port)
    try:
        async with RedisStore.from_url(f"redis://127.0.0.1:{port}/0") as store:
            await store.check()
            await store.client.script_flush()  # what a restart does to the script cache
            request = _request(_key(), now=_now())
            assert await store.consume(request) == CLAIMED
            await _assert_status(store, redeemed_record(request))
    finally:
        stop(server)


@pytest.mark.slow
async def test_a_consume_no_replica_acknowledges_is_unavailable_but_landed(
    tmp_path: Path,
) -> None:
    port = free_port()
    server = start_server(tmp_path, port)
    try:
        url = f"redis://127.0.0.1:{port}/0"
        async with RedisStore.from_url(url, wait_replicas=1, wait_timeout=0.2) as store:
            await store.client.script_flush()  # NOSCRIPT on the waiting path too
            request = _request(_key(), now=_now())
            with pytest.raises(StoreUnavailable, match="0 of 1 replica"):
                await store.consume(request)
            # The redemption is on the primary; only its durability could not be confirmed.
            await _assert_status(store, redeemed_record(request))
            # A refusal wrote nothing but the expiry, and needs no acknowledgement.
            other = _request(request.pause_key, now=request.now)
            assert (await store.consume(other)).outcome is ClaimOutcome.REDEEMED_SAME
    finally:
        stop(server)
