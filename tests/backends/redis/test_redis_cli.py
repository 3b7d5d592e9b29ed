"""``pausetoken backends``, ``store check`` and ``store purge`` with the Redis store."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING
from urllib.parse import quote

from redis.asyncio import Redis

from pausetoken._cli import main

if TYPE_CHECKING:
    import pytest


def test_backends_lists_redis_and_rediss(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "rediss" in out
    assert "pausetoken-redis" in out


def test_store_check_passes_and_shows_what_check_found(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "check", "--json", url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"]
    steps = {step["name"]: step for step in report["steps"]}
    # The server's persistence warning, if any, follows "ready".
    assert steps["check"]["detail"].startswith("ready")
    assert steps["purge"]["detail"] == "none needed: rows expire by themselves"


def test_store_purge_explains_that_rows_expire_by_themselves(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "purge", url, "--before", "1h"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "0"
    assert "expire by themselves" in captured.err


def test_store_check_of_a_refused_server_fails_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from redis_servers import free_port

    code = main(["store", "check", f"redis://app:s3cret@127.0.0.1:{free_port()}/0"])
    assert code != 0
    captured = capsys.readouterr()
    assert "s3cret" not in captured.out + captured.err
    assert "store_unavailable" in captured.out + captured.err


async def _keys(url: str, pattern: str) -> dict[bytes, int]:
    """The keys matching ``pattern`` and their time to live in milliseconds."""
    client = Redis.from_url(url)
    try:
        return {key: await client.pttl(key) async for key in client.scan_iter(match=pattern)}
    finally:
        await client.aclose()


def test_store_check_rows_all_expire_within_ten_minutes(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = asyncio.run(_keys(url, "pausetoken:*"))
    assert main(["store", "check", "--json", url]) == 0
    capsys.readouterr()
    left = {k: ttl for k, ttl in asyncio.run(_keys(url, "pausetoken:*")).items() if k not in before}
    assert left, "the check wrote no row under the default prefix"
    # -1 would be a key without expiry: it would stay under the prefix for good.
    assert all(0 < ttl <= 10 * 60 * 1000 for ttl in left.values()), left


def test_store_check_with_a_key_prefix_in_the_url_writes_only_there(
    url: str, key_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = asyncio.run(_keys(url, "pausetoken:*"))
    prefixed = f"{url}?key_prefix={quote(key_prefix)}"
    assert main(["store", "check", "--json", prefixed]) == 0
    assert json.loads(capsys.readouterr().out)["passed"]
    assert asyncio.run(_keys(url, f"{key_prefix}*"))
    assert set(asyncio.run(_keys(url, "pausetoken:*"))) <= set(before)
