"""The conformance kit, the races and a failover on a Redis Cluster the tests start.

Three masters with a replica each, on free loopback ports, formed once per test session
and stopped afterwards; the ``redis-cluster`` nox session runs this module alone.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

import pytest
from redis.asyncio.cluster import ClusterNode, RedisCluster

from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest
from pausetoken.testing import StoreConformance, StoreFactory
from pausetoken_redis import RedisStore
from redis_servers import redis_binaries, redis_cluster, wait_cluster_ok

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping

    from pausetoken.plugins import TokenStore

pytestmark = pytest.mark.redis_cluster


@pytest.fixture(scope="module")
def cluster_ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    with redis_cluster(tmp_path_factory.mktemp("redis-cluster")) as ports:
        yield ports


@pytest.fixture
def cluster_url(cluster_ports: list[int]) -> str:
    return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in cluster_ports[:3]) + "/"


class TestRedisClusterConformance(StoreConformance):
    supports_purge: ClassVar[bool] = False
    process_race_processes = 8

    @pytest.fixture
    def store_url(self, cluster_url: str) -> str:
        return cluster_url

    @pytest.fixture
    def store_url_options(self) -> Mapping[str, Any]:
        return {"key_prefix": f"pt-test-{secrets.token_hex(6)}:"}

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


def _request(key: str, now: datetime) -> ClaimRequest:
    return ClaimRequest(
        pause_key=key,
        scope_hash="s" * 64,
        name="approval",
        response_hash="a" * 64,
        expires_at=now + timedelta(hours=1),
        lease_id=secrets.token_hex(8),
        lease_until=now + timedelta(hours=1),
        now=now,
    )


def _replica_of_a_master(cluster_ports: list[int]) -> int:
    """The port of a replica (the last nodes were made replicas by ``--cluster create``)."""
    _, cli = redis_binaries()
    for port in cluster_ports[3:]:
        role = subprocess.run(
            [cli, "-h", "127.0.0.1", "-p", str(port), "role"],
            capture_output=True,
            text=True,
            check=True,
        )
        if role.stdout.startswith("slave"):
            return port
    pytest.fail("no replica in the cluster")  # pragma: no cover


@pytest.mark.slow
async def test_a_failover_under_load_is_unavailable_at_worst_and_never_claims_twice(
    cluster_url: str, cluster_ports: list[int]
) -> None:
    keys = [secrets.token_hex(8) for _ in range(300)]
    wins: Counter[str] = Counter()
    unavailable = 0
    stop_at = asyncio.Event()

    async with RedisStore.from_url(cluster_url, timeout=2) as store:
        await store.check()

        async def worker(offset: int) -> None:
            nonlocal unavailable
            while not stop_at.is_set():
                for key in keys[offset:] + keys[:offset]:
                    try:
                        result = await store.claim(_request(key, datetime.now(UTC)))
                    except StoreUnavailable:
                        unavailable += 1
                        await asyncio.sleep(0.01)
                        continue
                    if result.outcome is ClaimOutcome.CLAIMED:
                        wins[key] += 1

        load = asyncio.gather(*(worker(i * 17) for i in range(16)))
        await asyncio.sleep(0.5)
        replica = _replica_of_a_master(cluster_ports)
        _, cli = redis_binaries()
        await asyncio.to_thread(
            subprocess.run,
            [cli, "-h", "127.0.0.1", "-p", str(replica), "cluster", "failover"],
            capture_output=True,
            check=True,
        )
        await asyncio.sleep(2.0)
        stop_at.set()
        await load  # anything but StoreUnavailable would raise here
        for port in cluster_ports:
            wait_cluster_ok(port)
        assert wins, "no claim went through"
        assert max(wins.values()) == 1, [key for key, count in wins.items() if count > 1]
        for key in wins:
            assert await store.status(key) is not None, key


async def test_a_redis_url_with_the_cluster_option_opens_a_cluster_client(
    cluster_ports: list[int],
) -> None:
    url = f"redis://127.0.0.1:{cluster_ports[0]}/0"
    async with RedisStore.from_url(url, cluster=True, key_prefix="pt-test-option:") as store:
        assert store.is_cluster
        await store.check()
        keys = [secrets.token_hex(8) for _ in range(20)]  # spread over every master's slots
        now = datetime.now(UTC)
        for key in keys:
            assert (await store.claim(_request(key, now))).outcome is ClaimOutcome.CLAIMED
        for key in keys:
            assert await store.release(key, "another-lease") is False


async def _claim_all_at_once(store: RedisStore, count: int) -> list[ClaimOutcome]:
    now = datetime.now(UTC)
    requests = [_request(secrets.token_hex(8), now) for _ in range(count)]
    results = await asyncio.gather(*(store.claim(request) for request in requests))
    return [result.outcome for result in results]


async def test_300_concurrent_claims_on_one_cluster_store_all_succeed(cluster_url: str) -> None:
    # redis-py's asyncio cluster client fails at once (MaxConnectionsError) when a node's
    # connections are all busy; 300 claims over three masters are ~100 per node, more than
    # the default pool of each node holds.
    async with RedisStore.from_url(cluster_url, key_prefix="pt-test-many:") as store:
        await store.check()
        outcomes = await _claim_all_at_once(store, 300)
    assert outcomes == [ClaimOutcome.CLAIMED] * 300


async def test_claims_beyond_max_connections_wait_for_a_connection(cluster_url: str) -> None:
    async with RedisStore.from_url(
        cluster_url, key_prefix="pt-test-few:", max_connections=2
    ) as store:
        outcomes = await _claim_all_at_once(store, 250)
    assert outcomes == [ClaimOutcome.CLAIMED] * 250


async def test_a_handed_cluster_client_is_bounded_by_its_own_max_connections(
    cluster_ports: list[int],
) -> None:
    nodes = [ClusterNode("127.0.0.1", port) for port in cluster_ports[:3]]
    client = RedisCluster(startup_nodes=nodes, max_connections=3)
    try:
        store = RedisStore(client, key_prefix="pt-test-handed:")
        outcomes = await _claim_all_at_once(store, 200)
        await store.aclose()
        assert outcomes == [ClaimOutcome.CLAIMED] * 200
        assert await client.ping()  # never closed by the store
    finally:
        await client.aclose()
