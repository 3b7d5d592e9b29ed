"""A Redis restart during a claim load: only StoreUnavailable, and no pause claimed twice."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest
from pausetoken_redis import RedisStore
from redis_servers import DURABLE, durable_server, start_server, stop

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow


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


async def _claim_load(
    store: RedisStore, keys: list[str], stop_at: asyncio.Event
) -> tuple[Counter[str], int]:
    """Claim every key over and over until ``stop_at``: wins per key, StoreUnavailable count."""
    wins: Counter[str] = Counter()
    unavailable = 0

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

    await asyncio.gather(*(worker(i) for i in range(16)))
    return wins, unavailable


async def test_a_restart_under_load_is_unavailable_and_never_claims_twice(tmp_path: Path) -> None:
    keys = [secrets.token_hex(8) for _ in range(200)]
    with durable_server(tmp_path / "redis") as (port, running):
        url = f"redis://127.0.0.1:{port}/0"
        async with RedisStore.from_url(url, timeout=1, max_connections=16) as store:
            await store.check()
            stop_at = asyncio.Event()
            load = asyncio.create_task(_claim_load(store, keys, stop_at))
            await asyncio.sleep(0.5)
            # SIGKILL: acknowledged writes survive only through the AOF (appendfsync always).
            stop(running.pop())
            await asyncio.sleep(0.5)
            running.append(start_server(tmp_path / "redis", port, *DURABLE))
            await asyncio.sleep(1.0)
            stop_at.set()
            wins, unavailable = await load
            assert unavailable > 0, "the restart was not noticed"
            assert max(wins.values()) == 1, [k for k, n in wins.items() if n > 1]
            # Every claim that was answered CLAIMED survived the restart (the AOF kept it).
            assert wins
            for key in wins:
                record = await store.status(key)
                assert record is not None, key


async def test_scripts_are_loaded_again_after_a_restart(tmp_path: Path) -> None:
    with durable_server(tmp_path / "redis") as (port, _running):
        async with RedisStore.from_url(f"redis://127.0.0.1:{port}/0") as store:
            await store.check()
            # SCRIPT FLUSH is what a restart does to the script cache: EVALSHA says NOSCRIPT.
            await store.client.script_flush()
            now = datetime.now(UTC)
            assert (await store.claim(_request("k1", now))).outcome is ClaimOutcome.CLAIMED
