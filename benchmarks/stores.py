"""Claim speed of each store against the raw driver doing the same, and with a full table.

For each engine, in one process and one run:

* claims/s at concurrency 1 and 16 through ``SQLAlchemyStore``, through the raw driver
  executing the store's own claim statement on connections it opened itself (the baseline;
  target ratio >= 0.8), and through SQLAlchemy Core with its defaults (``engine.begin()``
  per claim, the "before" figure);
* claim latency (median, p99) with 10,000 and with 1,000,000 rows in the table (target
  ratio <= 1.5), the rows filled by one ``INSERT ... SELECT``; two tables, whose rounds
  take turns.

For Redis: claims/s at concurrency 1 and 16 through ``RedisStore`` and through a raw
``SET NX PX``-equivalent Lua script run with ``EVALSHA`` on a client of its own with the same
blocking pool (target ratio >= 0.8). The server is ``PAUSETOKEN_TEST_REDIS_URL`` (default
``redis://127.0.0.1:6379/0``); keys go under a fresh prefix and are deleted afterwards.
Then claim latency with 10,000 and with 1,000,000 redeemed pauses' keys (target ratio
<= 1.5), written by a server-side script: a logical database is its own hash table, so the
10,000 go in the URL's database and the 1,000,000 in the next one, and their rounds take
turns. The filled keys expire within the hour should a run be cut short.

For MongoDB: claims/s at concurrency 1 and 16 through ``MongoStore`` against raw pymongo
``insert_one`` of the same document on the same collection (same concerns; target ratio
>= 0.8), on ``PAUSETOKEN_TEST_MONGODB_URL`` or else an nx-27017 server started for the run
(the output names the server). A store's first claim also writes a probe document that the
guard index refuses (docs/mongo.md, "Data layout"), so a third figure, with no
target, sets the store against the driver inserting those same two documents. Then claim
latency with 10,000 and with 1,000,000 redeemed pauses' documents (target ratio <= 1.5),
two collections whose rounds take turns, filled with ``insert_many`` under the store's
indexes (on nx-27017 the million takes about two minutes).

An engine whose driver or store distribution is not installed is skipped with a one-line
note, and so is PostgreSQL, MySQL or Redis when its URL variable is unset and nothing
listens at the loopback default.

Every figure is the median of several rounds; rounds take turns so load spikes hit all
candidates alike. URLs come from ``PAUSETOKEN_TEST_POSTGRESQL_URL`` and
``PAUSETOKEN_TEST_MYSQL_URL`` (loopback defaults otherwise); SQLite uses a temporary file.

    python benchmarks/stores.py                       # every engine
    python benchmarks/stores.py --engine postgresql   # one engine
    python benchmarks/stores.py --engine redis        # RedisStore against a raw script
    python benchmarks/stores.py --engine mongodb      # MongoDB (or nx-27017) only
    python benchmarks/stores.py --quick               # fewer claims, 50,000 rows or keys
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import itertools
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from _drivers import connect
from _results import record
from pausetoken.plugins import ClaimOutcome, ClaimRequest, PauseState

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping

    from pausetoken.plugins import TokenStore
    from pausetoken_mongo import MongoStore
    from pausetoken_sqlalchemy import SQLAlchemyStore

# Each engine's drivers and store are imported when its benchmark runs: an engine whose
# modules are missing is skipped with a note, so the others run from a partial install.
ENGINE_MODULES = {
    "sqlite": ("sqlalchemy", "aiosqlite", "pausetoken_sqlalchemy"),
    "postgresql": ("sqlalchemy", "asyncpg", "pausetoken_sqlalchemy"),
    "mysql": ("sqlalchemy", "asyncmy", "pausetoken_sqlalchemy"),
    "redis": ("redis", "pausetoken_redis"),
    "mongodb": ("pymongo", "pausetoken_mongo"),
}

DEFAULT_URLS = {
    "postgresql": "postgresql+asyncpg://postgres@127.0.0.1:5432/test",
    "mysql": "mysql+asyncmy://root@127.0.0.1:3306/test",
    "redis": "redis://127.0.0.1:6379/0",
}
ENV = {
    "postgresql": "PAUSETOKEN_TEST_POSTGRESQL_URL",
    "mysql": "PAUSETOKEN_TEST_MYSQL_URL",
    "redis": "PAUSETOKEN_TEST_REDIS_URL",
}
CONCURRENCY = (1, 16)
SCOPE = hashlib.sha256(b"bench scope").hexdigest()
ANSWER = hashlib.sha256(b"bench answer").hexdigest()


def requests(n: int) -> list[ClaimRequest]:
    now = datetime.now(UTC)
    return [
        ClaimRequest(
            pause_key=secrets.token_urlsafe(16),
            scope_hash=SCOPE,
            name="bench",
            response_hash=ANSWER,
            expires_at=now + timedelta(hours=1),
            lease_id=secrets.token_urlsafe(16),
            lease_until=now + timedelta(minutes=5),
            now=now,
        )
        for _ in range(n)
    ]


def claim_params(store: SQLAlchemyStore, request: ClaimRequest) -> Any:
    """The store's own claim parameters, in the order and form its driver takes them."""
    from pausetoken_sqlalchemy._statements import ClaimArgs  # noqa: PLC0415

    statements = store._statements  # noqa: SLF001 - the benchmark runs the store's own SQL
    return statements.claim_params(ClaimArgs.from_request(request), time.time_ns() // 1000)


class RawDriver:
    """The baseline: the driver alone, on connections it opened, running the same SQL."""

    def __init__(self, family: str, url: str, sql: str) -> None:
        from sqlalchemy.engine import make_url  # noqa: PLC0415

        self.family, self.url, self.sql = family, make_url(url), sql
        self.conns: list[Any] = []
        self.idle: asyncio.Queue[Any] = asyncio.Queue()

    async def open(self, size: int) -> None:
        for _ in range(1 if self.family == "sqlite" else size):
            conn = await connect(self.family, self.url)
            self.conns.append(conn)
            self.idle.put_nowait(conn)

    async def close(self) -> None:
        for conn in self.conns:
            if self.family == "mysql":
                await conn.ensure_closed()
            else:
                await conn.close()

    async def claim(self, params: Any) -> None:
        if self.family == "sqlite":  # one connection shared, as the store does
            rows = await self.conns[0].execute_fetchall(self.sql, params)
            assert rows
            return
        conn = await self.idle.get()
        try:
            if self.family == "postgresql":
                assert await conn.fetch(self.sql, *params)
            else:
                async with conn.cursor() as cursor:
                    await cursor.execute(self.sql, params)
                    assert cursor.lastrowid == 0
        finally:
            self.idle.put_nowait(conn)


async def rate(op: Callable[[int], Awaitable[None]], n: int, concurrency: int) -> float:
    counter = itertools.count()

    async def worker() -> None:
        while (i := next(counter)) < n:
            await op(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - start)


async def throughput(
    store: SQLAlchemyStore, raw: RawDriver, n: int, rounds: int
) -> dict[int, dict[str, float]]:
    from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415

    sql = raw.sql
    # Core gets its own engine: the store holds every connection of its pool.
    # On SQLite it waits for the file's lock as long as the store does (30 s, not 5).
    url = store.engine.url
    connect_args = {"timeout": 30} if url.get_backend_name() == "sqlite" else {}
    core_engine = create_async_engine(url, pool_size=16, max_overflow=0, connect_args=connect_args)
    results: dict[int, dict[str, float]] = {}
    for concurrency in CONCURRENCY:
        samples: dict[str, list[float]] = {"store": [], "raw": [], "core": []}
        for _ in range(rounds):
            reqs = requests(n)

            async def via_store(i: int, reqs: list[ClaimRequest] = reqs) -> None:
                result = await store.claim(reqs[i])
                assert result.outcome is ClaimOutcome.CLAIMED

            samples["store"].append(await rate(via_store, n, concurrency))
            params = [claim_params(store, r) for r in requests(n)]

            async def via_raw(i: int, params: list[Any] = params) -> None:
                await raw.claim(params[i])

            samples["raw"].append(await rate(via_raw, n, concurrency))
            core_params = [claim_params(store, r) for r in requests(n // 4)]

            async def via_core(i: int, params: list[Any] = core_params) -> None:
                async with core_engine.begin() as conn:
                    await conn.exec_driver_sql(sql, params[i])

            samples["core"].append(await rate(via_core, n // 4, concurrency))
        results[concurrency] = {k: statistics.median(v) for k, v in samples.items()}
    await core_engine.dispose()
    return results


def fill_sql(family: str, table: str, start: int, count: int) -> str:
    far = 4_000_000_000_000_000  # expires far in the future: nothing gets purged
    cols = (
        "(pause_key, scope_hash, name, state, response_hash, lease_id, lease_until_us,"
        " expires_at_us, created_at_us, updated_at_us)"
    )
    values = f"'{SCOPE}', 'fill', 'redeemed', '{ANSWER}', 'fill', 0, {far}, 0, 0"
    if family == "postgresql":
        return (
            f"INSERT INTO {table} {cols} SELECT convert_to('fill-' || g, 'UTF8'), {values}"
            f" FROM generate_series({start}, {start + count - 1}) AS g"
        )
    if family == "sqlite":
        return (
            f"WITH RECURSIVE s(g) AS (SELECT {start} UNION ALL SELECT g + 1 FROM s"
            f" WHERE g < {start + count - 1}) INSERT INTO {table} {cols}"
            f" SELECT CAST('fill-' || g AS BLOB), {values} FROM s"
        )
    digits = "(SELECT 0 d UNION ALL " + " UNION ALL ".join(f"SELECT {i}" for i in range(1, 10))
    powers = [10**i for i in range(len(str(count - 1)) or 1)]
    joins = ", ".join(f"{digits}) p{i}" for i in range(len(powers)))
    number = " + ".join(f"p{i}.d * {p}" for i, p in enumerate(powers))
    return (
        f"INSERT INTO {table} {cols} SELECT CAST(CONCAT('fill-', {start} + {number}) AS BINARY),"
        f" {values} FROM {joins} WHERE {number} < {count}"
    )


async def fill_to(store: SQLAlchemyStore, family: str, rows: int) -> float:
    from sqlalchemy import text  # noqa: PLC0415

    table = store.engine.dialect.identifier_preparer.format_table(store.table)
    async with store.engine.begin() as conn:
        have = (await conn.execute(text(f"SELECT COUNT(*) FROM {table}"))).scalar_one()
        start = time.perf_counter()
        if rows > have:
            await conn.execute(text(fill_sql(family, table, have, rows - have)))
    took = time.perf_counter() - start
    # What anyone does after a bulk load (autovacuum would do it later, mid-measurement).
    async with store.engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        analyze = {"mysql": "ANALYZE TABLE", "postgresql": "VACUUM ANALYZE"}.get(family)
        await auto.execute(text(f"{analyze} {table}" if analyze else "ANALYZE"))
    return took


async def latency_round(store: TokenStore, n: int) -> tuple[float, float]:
    """Median and p99 latency (s) of ``n`` claims one after another."""
    samples = []
    for request in requests(n):
        start = time.perf_counter()
        await store.claim(request)
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


async def latencies(
    stores: Mapping[int, TokenStore], n: int, rounds: int
) -> dict[int, tuple[float, float]]:
    """Median (µs) of each table's round medians and p99s; the tables take turns."""
    medians: dict[int, list[float]] = {rows: [] for rows in stores}
    p99s: dict[int, list[float]] = {rows: [] for rows in stores}
    order = list(stores)
    for i in range(rounds):
        for rows in order if i % 2 == 0 else order[::-1]:
            median, p99 = await latency_round(stores[rows], n)
            medians[rows].append(median)
            p99s[rows].append(p99)
    return {
        rows: (statistics.median(medians[rows]) * 1e6, statistics.median(p99s[rows]) * 1e6)
        for rows in stores
    }


def report_latencies(
    name: str, unit: str, took: dict[int, float], lat: dict[int, tuple[float, float]]
) -> None:
    """Print and record the claim latency with the most rows against the least."""
    small, big = min(lat), max(lat)
    for rows in sorted(lat):
        print(
            f"{unit} {rows:>9,} (filled in {took[rows]:5.1f} s): claim median"
            f" {lat[rows][0]:7.0f} µs, p99 {lat[rows][1]:7.0f} µs"
        )
    print(f"latency ratio {big:,} / {small:,} {unit}: {lat[big][0] / lat[small][0]:.2f}")
    record(
        f"{name}: claim latency, {big:,} / {small:,} {unit}",
        lat[big][0] / lat[small][0],
        detail=f"{lat[big][0]:.0f} µs / {lat[small][0]:.0f} µs (medians)",
        target=1.5,
        better="lower",
    )


async def drop_table(store: SQLAlchemyStore) -> None:
    from sqlalchemy import text  # noqa: PLC0415

    table = store.table.name
    async with store.engine.begin() as conn:
        await conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        await conn.execute(
            text("DELETE FROM pausetoken_schema WHERE table_name = :t"), {"t": table}
        )


async def bench(family: str, url: str, *, quick: bool) -> None:
    from sqlalchemy import text  # noqa: PLC0415

    from pausetoken_sqlalchemy import SQLAlchemyStore  # noqa: PLC0415

    n, rounds = (400, 2) if quick else (4000, 5)
    big = 50_000 if quick else 1_000_000
    table = f"pt_bench_{secrets.token_hex(4)}"
    options: dict[str, Any] = {"table_name": table}
    if family != "sqlite":
        options.update(pool_size=16, max_overflow=2)  # the store holds 16
    store = SQLAlchemyStore.from_url(url, **options)
    print(f"\n== {family}: {store!r}")
    try:
        await store.ensure_schema()
        claim_sql = store._statements._claim_sql  # type: ignore[attr-defined]  # noqa: SLF001
        raw = RawDriver(family, store.engine.url.render_as_string(hide_password=False), claim_sql)
        await raw.open(16)
        try:
            by_concurrency = await throughput(store, raw, n, rounds)
        finally:
            await raw.close()
        print(f"{'concurrency':>11} {'store/s':>9} {'raw/s':>9} {'ratio':>6} {'core/s':>9}")
        for concurrency, r in by_concurrency.items():
            print(
                f"{concurrency:>11} {r['store']:>9,.0f} {r['raw']:>9,.0f}"
                f" {r['store'] / r['raw']:>6.2f} {r['core']:>9,.0f}"
            )
            record(
                f"{family}: claims/s at concurrency {concurrency}, store / raw driver",
                r["store"] / r["raw"],
                detail=f"{r['store']:,.0f}/s / {r['raw']:,.0f}/s",
                target=0.8,
            )
        async with store.engine.begin() as conn:
            await conn.execute(text(f"DELETE FROM {table}"))
        # Two tables, measured in turns, so that load spikes hit both sizes alike.
        small = SQLAlchemyStore.from_url(url, **{**options, "table_name": f"{table}_small"})
        try:
            await small.ensure_schema()
            by_rows = {10_000: small, big: store}
            took = {rows: await fill_to(by_rows[rows], family, rows) for rows in by_rows}
            lat = await latencies(by_rows, n // 2, rounds)
        finally:
            await drop_table(small)
            await small.aclose()
        report_latencies(family, "rows", took, lat)
    finally:
        await drop_table(store)
        await store.aclose()


# The baseline: the least a claim can be, one SET NX PX in a script run with EVALSHA.
RAW_REDIS_CLAIM = "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0"


# Redeemed pauses as the store's scripts leave them, written on the server in one batch.
# ARGV: key prefix, first and last number, scope hash, response hash, expiry us and ms.
FILL_REDIS = """
for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do
  local k = ARGV[1] .. '{fill-' .. i .. '}'
  redis.call('HSET', k, 's', 'r', 'sh', ARGV[4], 'n', 'fill', 'rh', ARGV[5], 'l', 'fill',
             'lu', '0', 'e', ARGV[6])
  redis.call('PEXPIREAT', k, ARGV[7])
end
return 1
"""
# ARGV: key prefix, first and last number of the keys FILL_REDIS wrote.
UNFILL_REDIS = """
for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do
  redis.call('UNLINK', ARGV[1] .. '{fill-' .. i .. '}')
end
return 1
"""
FILL_BATCH = 20_000


def next_database(url: str) -> str:
    """The same Redis server's next logical database (the one before it for the last)."""
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{db + 1 if db < 15 else db - 1}"))


async def fill_redis(client: Any, prefix: str, keys: int) -> float:
    """Write ``keys`` redeemed pauses; they expire in an hour should the run be cut short."""
    expires = time.time() + 3600
    expiry = (str(int(expires * 1_000_000)), str(int(expires * 1000)))
    start = time.perf_counter()
    for first in range(0, keys, FILL_BATCH):
        last = min(keys, first + FILL_BATCH) - 1
        await client.eval(FILL_REDIS, 0, prefix, first, last, SCOPE, ANSWER, *expiry)
    return time.perf_counter() - start


async def drop_redis_keys(client: Any, prefix: str, filled: int) -> None:
    for first in range(0, filled, FILL_BATCH):
        last = min(filled, first + FILL_BATCH) - 1
        await client.eval(UNFILL_REDIS, 0, prefix, first, last)
    batch = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
    for start in range(0, len(batch), 1000):
        await client.delete(*batch[start : start + 1000])


async def redis_latencies(url: str, prefix: str, n: int, rounds: int, *, quick: bool) -> None:
    """Claim latency with 10,000 keys and with 1,000,000, in two databases taking turns.

    A logical database is its own hash table, as a SQL table is its own index: the small
    one is the URL's database, the large one the next. Both are cleaned up afterwards.
    """
    from pausetoken_redis import RedisStore  # noqa: PLC0415

    big = 50_000 if quick else 1_000_000
    urls = {10_000: url, big: next_database(url)}
    stores = {keys: RedisStore.from_url(urls[keys], key_prefix=prefix) for keys in urls}
    try:
        took = {keys: await fill_redis(stores[keys].client, prefix, keys) for keys in stores}
        lat = await latencies(stores, n, rounds)
    finally:
        for keys, store in stores.items():
            await drop_redis_keys(store.client, prefix, keys)
            await store.aclose()
    report_latencies("redis", "keys", took, lat)


async def bench_redis(url: str, *, quick: bool) -> None:
    from pausetoken_redis import RedisStore  # noqa: PLC0415

    n, rounds = (1000, 2) if quick else (20_000, 5)
    prefix = f"pt-bench-{secrets.token_hex(4)}:"
    store = RedisStore.from_url(url, key_prefix=prefix, max_connections=16)
    raw = RedisStore.from_url(url, key_prefix=prefix, max_connections=16).client
    print(f"\n== redis: {store!r}")
    try:
        await store.check()
        sha = await raw.script_load(RAW_REDIS_CLAIM)
        print(f"{'concurrency':>11} {'store/s':>9} {'raw/s':>9} {'ratio':>6}")
        for concurrency in CONCURRENCY:
            samples: dict[str, list[float]] = {"store": [], "raw": []}
            for _ in range(rounds):
                reqs = requests(n)

                async def via_store(i: int, reqs: list[ClaimRequest] = reqs) -> None:
                    result = await store.claim(reqs[i])
                    assert result.outcome is ClaimOutcome.CLAIMED

                keys = [f"{prefix}raw:{{{secrets.token_urlsafe(16)}}}" for _ in range(n)]

                async def via_raw(i: int, keys: list[str] = keys) -> None:
                    assert await raw.evalsha(sha, 1, keys[i], ANSWER, "3600000") == 1

                samples["store"].append(await rate(via_store, n, concurrency))
                samples["raw"].append(await rate(via_raw, n, concurrency))
            r = {name: statistics.median(values) for name, values in samples.items()}
            print(
                f"{concurrency:>11} {r['store']:>9,.0f} {r['raw']:>9,.0f}"
                f" {r['store'] / r['raw']:>6.2f}"
            )
            record(
                f"redis: claims/s at concurrency {concurrency}, store / raw script",
                r["store"] / r["raw"],
                detail=f"{r['store']:,.0f}/s / {r['raw']:,.0f}/s",
                target=0.8,
            )
    finally:
        await drop_redis_keys(raw, prefix, 0)
        await raw.aclose()
        await store.aclose()
    await redis_latencies(url, prefix, n // 5, rounds, quick=quick)


def pause_documents(n: int) -> list[dict[str, Any]]:
    """``n`` new pauses' documents, as the Mongo store writes them on a first claim."""
    now_us = time.time_ns() // 1000
    return [
        {
            "_id": r.pause_key,
            "state": "claimed",
            "scope_hash": r.scope_hash,
            "name": r.name,
            "response_hash": r.response_hash,
            "lease_id": r.lease_id,
            "lease_until": now_us,
            "expires_at": now_us,
            "remove_after": r.expires_at,
        }
        for r in requests(n)
    ]


def guarded_inserts(collection: Any, n: int) -> Callable[[int], Awaitable[None]]:
    """The least a guarded first claim can be: the driver's own two-document insert.

    A claim writes the pause's document and a probe that the guard's unique index refuses
    in a prepared collection (and that goes in only when the collection was dropped and made
    again): one ordered ``insert_many``. This inserts the same two documents, so the ratio
    against it shows the store's own cost apart from the server's cost of the guard.
    """
    from pymongo.errors import BulkWriteError  # noqa: PLC0415

    docs = pause_documents(n)

    async def insert(i: int) -> None:
        probe = {"_id": f"pausetoken:probe:{secrets.token_hex(8)}", "pausetoken_guard": 1}
        try:
            await collection.insert_many([docs[i], probe], ordered=True)
        except BulkWriteError as exc:
            [refused] = exc.details["writeErrors"]
            assert refused["index"] == 1, refused  # the probe, as in a prepared collection
        else:
            raise AssertionError("the guard's unique index did not refuse the probe")

    return insert


async def drop_collection(store: MongoStore) -> None:
    """Drop the store's collection and its record, as `drop_table` does on SQL, then close."""
    from pausetoken_mongo._store import SCHEMA_COLLECTION  # noqa: PLC0415

    collection = store.collection
    await collection.drop()
    await collection.database[SCHEMA_COLLECTION].delete_one({"_id": collection.name})
    await store.aclose()


async def fill_mongo(store: MongoStore, documents: int) -> float:
    """Insert ``documents`` redeemed pauses, as the store leaves them, in batches."""
    from pausetoken_mongo._documents import STATE, claim_fields, raise_expiry  # noqa: PLC0415

    expires = datetime.now(UTC) + timedelta(days=1)
    # The store's own field builders: a claim's fields, then redeemed, then its expiry.
    claimed = claim_fields(
        scope_hash=SCOPE, name="fill", response_hash=ANSWER, lease_id="fill", lease_until=expires
    )
    fields = {**claimed, STATE: PauseState.REDEEMED.value, **raise_expiry(expires)}
    start = time.perf_counter()
    for first in range(0, documents, FILL_BATCH):
        batch = range(first, min(documents, first + FILL_BATCH))
        await store.collection.insert_many(
            [{"_id": f"fill-{i}", **fields} for i in batch], ordered=False
        )
    return time.perf_counter() - start


async def mongo_latencies(
    url: str, name: str, served_by: str, n: int, rounds: int, *, quick: bool
) -> None:
    """Claim latency with 10,000 documents and with 1,000,000, two collections in turns."""
    from pausetoken_mongo import MongoStore  # noqa: PLC0415

    big = 50_000 if quick else 1_000_000
    stores = {
        documents: MongoStore.from_url(url, collection=f"{name}_{documents}")
        for documents in (10_000, big)
    }
    try:
        for store in stores.values():
            await store.check()  # the indexes first: the documents are filled under them
        took = {documents: await fill_mongo(stores[documents], documents) for documents in stores}
        lat = await latencies(stores, n, rounds)
    finally:
        for store in stores.values():
            await drop_collection(store)
    report_latencies(f"mongodb on {served_by}", "documents", took, lat)


async def bench_mongo(url: str, server: str, *, quick: bool) -> None:
    from pausetoken_mongo import MongoStore  # noqa: PLC0415

    n, rounds = (400, 2) if quick else (4000, 5)
    name = f"pt_bench_{secrets.token_hex(4)}"
    served_by = server.split(" at ", maxsplit=1)[0]
    store = MongoStore.from_url(url, collection=name)
    print(f"\n== mongodb on {server}: {store!r}")
    collection = store.collection
    try:
        await store.check()
        print(f"{'concurrency':>11} {'store/s':>9} {'raw/s':>9} {'ratio':>6} {'guarded/s':>9}")
        for concurrency in CONCURRENCY:
            samples: dict[str, list[float]] = {"store": [], "raw": [], "guarded": []}
            for _ in range(rounds):
                reqs = requests(n)

                async def via_store(i: int, reqs: list[ClaimRequest] = reqs) -> None:
                    result = await store.claim(reqs[i])
                    assert result.outcome is ClaimOutcome.CLAIMED

                samples["store"].append(await rate(via_store, n, concurrency))
                guarded = guarded_inserts(collection, n)
                samples["guarded"].append(await rate(guarded, n, concurrency))
                # The same document the store writes, inserted by the driver alone.
                docs = pause_documents(n)

                async def via_raw(i: int, docs: list[dict[str, Any]] = docs) -> None:
                    await collection.insert_one(docs[i])

                samples["raw"].append(await rate(via_raw, n, concurrency))
            store_rate = statistics.median(samples["store"])
            raw_rate = statistics.median(samples["raw"])
            guarded_rate = statistics.median(samples["guarded"])
            print(
                f"{concurrency:>11} {store_rate:>9,.0f} {raw_rate:>9,.0f}"
                f" {store_rate / raw_rate:>6.2f} {guarded_rate:>9,.0f}"
            )
            record(
                f"mongodb on {served_by}: claims/s at concurrency {concurrency},"
                " store / raw insert_one",
                store_rate / raw_rate,
                detail=f"{store_rate:,.0f}/s / {raw_rate:,.0f}/s",
                target=0.8,
            )
            record(
                f"mongodb on {served_by}: claims/s at concurrency {concurrency},"
                " store / raw insert_many of the document and a guard probe",
                store_rate / guarded_rate,
                detail=f"{store_rate:,.0f}/s / {guarded_rate:,.0f}/s",
            )
    finally:
        await drop_collection(store)
    await mongo_latencies(url, name, served_by, n // 2, rounds, quick=quick)


def run_mongo(tmp: str, *, quick: bool) -> None:
    """On PAUSETOKEN_TEST_MONGODB_URL, else on an nx-27017 started for the run."""
    url = os.environ.get("PAUSETOKEN_TEST_MONGODB_URL")
    if url:
        asyncio.run(bench_mongo(url, "PAUSETOKEN_TEST_MONGODB_URL", quick=quick))
        return
    beside = Path(sys.executable).parent / "nx-27017"
    command = str(beside) if beside.exists() else shutil.which("nx-27017")
    if command is None:
        print("\n== mongodb: skipped (no PAUSETOKEN_TEST_MONGODB_URL, nx-27017 not installed)")
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = Path(tmp) / "nx-27017.log"
    args = [command, "--db", "memory", "--host", "127.0.0.1", "-p", str(port)]
    args += ["--log-file", str(log), "--pid-file", str(Path(tmp) / "nx-27017.pid")]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        name = f"nx-27017 (MongoDB wire protocol on SQLite, in memory) at 127.0.0.1:{port}"
        asyncio.run(bench_mongo(f"mongodb://127.0.0.1:{port}/pausetoken_bench", name, quick=quick))
    finally:
        server.terminate()
        server.wait(10)


def runnable(engines: Iterable[str]) -> Iterator[str]:
    """The engines whose modules are installed and whose server is there; notes the rest."""
    for family in engines:
        missing = [m for m in ENGINE_MODULES[family] if importlib.util.find_spec(m) is None]
        if missing:
            print(f"\n== {family}: skipped ({', '.join(missing)} not installed)")
            continue
        unreachable = no_default_server(family)
        if unreachable:
            print(f"\n== {family}: skipped ({unreachable})")
            continue
        yield family


def no_default_server(family: str) -> str | None:
    """Why the loopback server an engine defaults to is not there, or ``None``.

    Only when its URL variable is unset: a URL given on purpose that fails is a failure.
    """
    if family not in ENV or os.environ.get(ENV[family]):
        return None
    parts = urlsplit(DEFAULT_URLS[family])
    host, port = parts.hostname or "127.0.0.1", parts.port or 0
    with socket.socket() as probe:
        probe.settimeout(1.0)
        if probe.connect_ex((host, port)) == 0:
            return None
    return f"nothing listens at {host}:{port}; set {ENV[family]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    engine_choices = ["sqlite", "postgresql", "mysql", "redis", "mongodb", "all"]
    parser.add_argument("--engine", choices=engine_choices, default="all")
    parser.add_argument("--quick", action="store_true", help="fewer claims, 50,000 rows")
    args = parser.parse_args()
    every = ["sqlite", "postgresql", "mysql", "redis", "mongodb"]
    engines = every if args.engine == "all" else [args.engine]
    with tempfile.TemporaryDirectory() as tmp:
        for family in runnable(engines):
            if family == "mongodb":
                run_mongo(tmp, quick=args.quick)
                continue
            if family == "redis":
                url = os.environ.get(ENV[family]) or DEFAULT_URLS[family]
                asyncio.run(bench_redis(url, quick=args.quick))
                continue
            if family == "sqlite":
                url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
            else:
                url = os.environ.get(ENV[family]) or DEFAULT_URLS[family]
            asyncio.run(bench(family, url, quick=args.quick))


if __name__ == "__main__":
    main()
