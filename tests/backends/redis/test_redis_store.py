"""RedisStore beyond the kit: options, URLs, data layout, errors, shared clients, check."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from redis.asyncio import Redis

from pausetoken.exceptions import ConfigurationError, StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest, PauseState
from pausetoken_redis import RedisStore, _store
from redis_servers import durable_server, free_port, start_server, stop

if TYPE_CHECKING:
    from pathlib import Path


def _request(key: str, *, now: datetime, answer: str = "a" * 64) -> ClaimRequest:
    return ClaimRequest(
        pause_key=key,
        scope_hash="s" * 64,
        name="approval",
        response_hash=answer,
        expires_at=now + timedelta(hours=1, microseconds=3),
        lease_id="lease-1",
        lease_until=now + timedelta(seconds=30),
        now=now,
    )


def test_an_unknown_option_is_refused_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="pool_size"):
        RedisStore.from_url("redis://127.0.0.1:6379/0", pool_size=5)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_connections", 0),
        ("max_connections", "10"),
        ("timeout", 0),
        ("timeout", True),
        ("key_prefix", "app:{x}:"),
        ("cluster", "yes"),
    ],
)
def test_a_bad_option_value_is_refused(option: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=option):
        RedisStore.from_url("redis://127.0.0.1:6379/0", **{option: value})


def test_a_url_of_another_scheme_is_refused_without_its_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        RedisStore.from_url("memcached://app:s3cret@cache/0")
    assert "s3cret" not in str(caught.value)


def test_a_cluster_url_with_a_database_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="database 0"):
        RedisStore.from_url("redis+cluster://127.0.0.1:7000,127.0.0.1:7001/3")


def test_the_key_is_the_prefix_and_the_pause_key_as_a_hash_tag() -> None:
    store = RedisStore(Redis(), key_prefix="app:")
    assert store.key("Ab-1") == "app:{Ab-1}"


async def test_a_refused_connection_is_store_unavailable_without_the_password() -> None:
    url = f"redis://app:s3cret@127.0.0.1:{free_port()}/0"
    async with RedisStore.from_url(url, timeout=2) as store:
        with pytest.raises(StoreUnavailable) as caught:
            await store.claim(_request("k1", now=datetime.now(UTC)))
        with pytest.raises(StoreUnavailable):
            await store.check()
    assert "s3cret" not in str(caught.value)
    assert "127.0.0.1" in str(caught.value)


async def test_a_silent_server_times_out_within_the_store_timeout() -> None:
    # A server that takes the connection and never answers; the handed client has no socket
    # timeout of its own, so only the store's timeout ends the calls, each on its own.
    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(-1)
        writer.close()

    async with await asyncio.start_server(swallow, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        client = Redis(host="127.0.0.1", port=port, socket_timeout=None)
        try:
            async with RedisStore(client, timeout=0.3) as store:
                now = datetime.now(UTC)
                started = time.monotonic()
                results = await asyncio.gather(
                    *(store.claim(_request(f"k{i}", now=now)) for i in range(5)),
                    return_exceptions=True,
                )
                took = time.monotonic() - started
        finally:
            await client.aclose()
    assert all(isinstance(result, StoreUnavailable) for result in results), results
    assert 0.3 <= took < 3, took
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0


async def test_a_closed_store_is_unavailable(url: str, key_prefix: str) -> None:
    store = RedisStore.from_url(url, key_prefix=key_prefix)
    await store.aclose()
    await store.aclose()  # twice is fine
    with pytest.raises(StoreUnavailable):
        await store.status("k1")
    with pytest.raises(StoreUnavailable):
        await store.purge(datetime.now(UTC))


async def test_a_handed_client_is_never_closed(url: str, key_prefix: str) -> None:
    client = Redis.from_url(url)
    try:
        async with RedisStore(client, key_prefix=key_prefix) as store:
            await store.check()
            assert await store.status("k1") is None
        assert await client.ping()
    finally:
        await client.aclose()


async def test_a_client_decoding_responses_works_too(url: str, key_prefix: str) -> None:
    client = Redis.from_url(url, decode_responses=True)
    try:
        store = RedisStore(client, key_prefix=key_prefix)
        now = datetime.now(UTC)
        assert (await store.claim(_request("k1", now=now))).outcome is ClaimOutcome.CLAIMED
        record = await store.status("k1")
        assert record is not None
        assert record.state is PauseState.CLAIMED
        assert record.lease_until == now + timedelta(seconds=30)
    finally:
        await client.aclose()


async def test_a_row_is_one_hash_expiring_at_the_row_expiry(url: str, key_prefix: str) -> None:
    now = datetime.now(UTC)
    request = _request("k1", now=now)
    async with RedisStore.from_url(url, key_prefix=key_prefix) as store:
        await store.claim(request)
        client = store.client
        key = store.key("k1")
        assert await client.type(key) == b"hash"
        expected_ms = -(
            -((request.expires_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1))
            // 1000
        )
        assert await client.pexpiretime(key) == expected_ms
        # A lower expiry never lowers the key's either.
        lower = ClaimRequest(**{**_fields(request), "expires_at": now + timedelta(minutes=1)})
        await store.claim(lower)
        assert await client.pexpiretime(key) == expected_ms


def _fields(request: ClaimRequest) -> dict[str, object]:
    return {
        "pause_key": request.pause_key,
        "scope_hash": request.scope_hash,
        "name": request.name,
        "response_hash": request.response_hash,
        "expires_at": request.expires_at,
        "lease_id": request.lease_id,
        "lease_until": request.lease_until,
        "now": request.now,
    }


async def test_purge_deletes_nothing_and_says_rows_expire_by_themselves(
    url: str, key_prefix: str
) -> None:
    async with RedisStore.from_url(url, key_prefix=key_prefix) as store:
        await store.claim(_request("k1", now=datetime.now(UTC)))
        assert await store.purge(datetime.now(UTC) + timedelta(days=1)) == 0
        assert await store.status("k1") is not None
        assert store.expires_rows_itself


@pytest.mark.slow
async def test_check_warns_when_persistence_is_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    server = start_server(tmp_path, port, "--appendonly", "no")
    try:
        async with RedisStore.from_url(f"redis://127.0.0.1:{port}/0") as store:
            await store.check()
            assert len(store.warnings) == 1
            assert "persistence is off" in store.warnings[0]
            assert "appendfsync always" in store.warnings[0]
            assert "persistence is off" in caplog.text
    finally:
        stop(server)


@pytest.mark.slow
async def test_check_is_quiet_when_every_write_is_on_disk(tmp_path: Path) -> None:
    with durable_server(tmp_path) as (port, _running):
        async with RedisStore.from_url(f"redis://127.0.0.1:{port}/0") as store:
            await store.check()
            assert store.warnings == ()


def _raiser(filename: str) -> Any:
    """A script runner failing with TypeError inside code of ``filename``."""
    namespace: dict[str, Any] = {}
    code = "async def run(*args):\n    raise TypeError(\"'NoneType' object is not callable\")\n"
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - a fixed snippet
    return namespace["run"]


async def test_a_transport_failing_under_a_write_is_store_unavailable(
    url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CPython 3.13.0's selector transport raises TypeError when a connection closed during a
    # failover is written to; it is the connection failing, not a bug of the caller.
    store = RedisStore.from_url(url, key_prefix=key_prefix)
    runners = dict(_store._RUN)
    runners["status"] = _raiser("/usr/lib/python3.13/asyncio/selector_events.py")
    monkeypatch.setattr(_store, "_RUN", runners)
    with pytest.raises(StoreUnavailable):
        await store.status("k1")
    runners["status"] = _raiser("/srv/app/elsewhere.py")
    with pytest.raises(TypeError):
        await store.status("k1")
    await store.aclose()


def test_store_options_in_the_url_query_are_taken_like_keywords() -> None:
    store = RedisStore.from_url(
        "redis://127.0.0.1:6379/0?key_prefix=app%3Aq%3A&max_connections=7&timeout=2.5"
    )
    assert store.key("k") == "app:q:{k}"
    assert store.client.connection_pool.max_connections == 7
    assert store._timeout == 2.5  # no public reading of it
    assert "key_prefix" not in repr(store)


def test_a_keyword_wins_over_the_url_query() -> None:
    store = RedisStore.from_url("redis://127.0.0.1:6379/0?key_prefix=q:", key_prefix="kw:")
    assert store.key("k") == "kw:{k}"


def test_redis_py_options_in_the_query_still_reach_redis_py() -> None:
    store = RedisStore.from_url("redis://127.0.0.1:6379/0?health_check_interval=7&key_prefix=a:")
    assert store.client.connection_pool.connection_kwargs["health_check_interval"] == 7


@pytest.mark.parametrize(
    "query",
    ["pool_size=5", "key_prefix=a:&bogus=1", "socket_timout=3"],
)
def test_an_unknown_option_in_the_url_query_is_refused(query: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RedisStore.from_url(f"redis://app:s3cret@127.0.0.1:6379/0?{query}")
    assert caught.value.code == "settings_unknown"
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("query", "option"),
    [
        ("max_connections=many", "max_connections"),
        ("timeout=soon", "timeout"),
        ("timeout=0", "timeout"),
        ("cluster=maybe", "cluster"),
        ("key_prefix=a{b}", "key_prefix"),
    ],
)
def test_a_bad_option_value_in_the_url_query_is_refused(query: str, option: str) -> None:
    with pytest.raises(ConfigurationError, match=option):
        RedisStore.from_url(f"redis://127.0.0.1:6379/0?{query}")


def test_a_cluster_url_takes_store_options_in_its_query_and_nothing_else() -> None:
    store = RedisStore.from_url("redis+cluster://127.0.0.1:7000,127.0.0.1:7001/?key_prefix=c:")
    assert store.key("k") == "c:{k}"
    with pytest.raises(ConfigurationError, match="socket_timeout"):
        RedisStore.from_url("redis+cluster://127.0.0.1:7000/?socket_timeout=3")


def test_a_short_timeout_needs_no_wait_timeout_when_no_replica_is_awaited() -> None:
    store = RedisStore.from_url("redis://127.0.0.1:6379/0", timeout=0.5)
    assert store._timeout == 0.5  # no public reading of it
