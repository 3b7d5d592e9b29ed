"""``wait_replicas``: writes confirmed by ``WAIT`` on a private primary with one replica."""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from pausetoken.exceptions import ConfigurationError, StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest, PauseState
from pausetoken_redis import RedisStore
from redis_servers import free_port, redis_binaries, start_server, stop

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow


def _request(key: str, now: datetime) -> ClaimRequest:
    return ClaimRequest(
        pause_key=key,
        scope_hash="s" * 64,
        name="approval",
        response_hash="a" * 64,
        expires_at=now + timedelta(hours=1),
        lease_id="lease-1",
        lease_until=now + timedelta(minutes=1),
        now=now,
    )


def _wait_linked(replica: int, seconds: float = 20.0) -> None:
    _, cli = redis_binaries()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        info = subprocess.run(
            [cli, "-p", str(replica), "info", "replication"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if "master_link_status:up" in info:
            return
        time.sleep(0.05)
    pytest.fail(f"the replica on port {replica} did not link within {seconds}s")


@pytest.fixture
def primary_and_replica(
    tmp_path: Path,
) -> Iterator[tuple[int, int, list[subprocess.Popen[bytes]]]]:
    primary, replica = free_port(), free_port()
    running = [start_server(tmp_path / "primary", primary)]
    try:
        running.append(
            start_server(tmp_path / "replica", replica, "--replicaof", "127.0.0.1", str(primary))
        )
        _wait_linked(replica)
        yield primary, replica, running
    finally:
        for process in running:
            stop(process)


async def test_a_commit_acknowledged_by_the_replica_is_on_the_replica(
    primary_and_replica: tuple[int, int, list[subprocess.Popen[bytes]]],
) -> None:
    primary, replica, _ = primary_and_replica
    url = f"redis://127.0.0.1:{primary}/0?wait_replicas=1&wait_timeout=2"
    async with RedisStore.from_url(url, timeout=5) as store:
        now = datetime.now(UTC)
        assert (await store.claim(_request("k1", now))).outcome is ClaimOutcome.CLAIMED
        assert await store.commit("k1", "lease-1", now + timedelta(hours=1))
        revoked = await store.revoke("k2", "s" * 64, "approval", now + timedelta(hours=1), now)
        assert revoked.state is PauseState.REVOKED
    # WAIT returned only once the replica had both writes: no sleep needed to see them.
    async with RedisStore.from_url(f"redis://127.0.0.1:{replica}/0") as on_replica:
        record = await on_replica.status("k1")
        assert record is not None
        assert record.state is PauseState.REDEEMED
        assert (await on_replica.status("k2")) is not None


async def test_a_commit_no_replica_acknowledges_is_unavailable_but_landed_on_the_primary(
    primary_and_replica: tuple[int, int, list[subprocess.Popen[bytes]]],
) -> None:
    primary, _, running = primary_and_replica
    url = f"redis://127.0.0.1:{primary}/0"
    async with RedisStore.from_url(url, wait_replicas=1, wait_timeout=0.3) as store:
        now = datetime.now(UTC)
        assert (await store.claim(_request("k1", now))).outcome is ClaimOutcome.CLAIMED
        stop(running.pop())  # the replica
        with pytest.raises(StoreUnavailable, match="1 replica") as caught:
            await store.commit("k1", "lease-1", now + timedelta(hours=1))
        assert "could not confirm" in str(caught.value)
        # The commit is on the primary: the service's retry finds it committed (idempotent),
        # and status() shows it; only its durability could not be confirmed.
        record = await store.status("k1")
        assert record is not None
        assert record.state is PauseState.REDEEMED
        with pytest.raises(StoreUnavailable):
            await store.claim(_request("k2", now))
        # A refusal writes nothing, so it needs no acknowledgement.
        assert await store.commit("k3", "lease-1", now + timedelta(hours=1)) is False


async def test_without_replicas_a_store_asking_for_one_never_confirms_a_claim(
    tmp_path: Path,
) -> None:
    port = free_port()
    server = start_server(tmp_path, port)
    try:
        url = f"redis://127.0.0.1:{port}/0"
        async with RedisStore.from_url(url, wait_replicas=1, wait_timeout=0.2) as store:
            with pytest.raises(StoreUnavailable, match="0 of 1 replica"):
                await store.claim(_request("k1", datetime.now(UTC)))
    finally:
        stop(server)


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"wait_replicas": -1}, "settings_invalid"),
        ({"wait_replicas": "1"}, "settings_invalid"),
        ({"wait_replicas": 1, "wait_timeout": 0}, "settings_invalid"),
        ({"wait_replicas": 1, "wait_timeout": 5, "timeout": 5}, "settings_invalid"),
        ({"wait_replicas": 1, "cluster": True}, "settings_conflict"),
    ],
)
def test_wait_options_the_store_cannot_honour_are_refused(
    options: dict[str, object], code: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RedisStore.from_url("redis://127.0.0.1:6379/0", **options)
    assert caught.value.code == code


async def test_scripts_are_loaded_again_on_the_waiting_path(
    primary_and_replica: tuple[int, int, list[subprocess.Popen[bytes]]],
) -> None:
    primary, _, _ = primary_and_replica
    url = f"redis://127.0.0.1:{primary}/0"
    async with RedisStore.from_url(url, wait_replicas=1, wait_timeout=2) as store:
        await store.check()
        await store.client.script_flush()  # what a restart does to the script cache
        outcome = (await store.claim(_request("k1", datetime.now(UTC)))).outcome
        assert outcome is ClaimOutcome.CLAIMED
