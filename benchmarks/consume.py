"""Consume throughput on each engine: `PauseTokens.consume()` against a hand-written check.

For SQLite (a file, WAL), PostgreSQL, MySQL or MariaDB, and Redis, in one process and one
run: consumes/s at concurrency 16 through `PauseTokens.consume()` on that engine's store
(``SQLAlchemyStore``, ``RedisStore``), against what a user would write instead on the same
engine (the baseline; target ratio >= 0.9, above 1 means pausetoken is faster): joserfc's
strict decode of the same kind of token (``jwt.decode`` with the same HS256 key, then
``JWTClaimsRegistry`` checking ``iss``, ``aud``, ``exp``, the scope hash and that every
other claim is there), then ONE statement on the raw async driver that tells a first use
from a replay:

* PostgreSQL (asyncpg) and SQLite (aiosqlite): ``INSERT ... ON CONFLICT DO NOTHING
  RETURNING 1``, first when a row comes back;
* MySQL and MariaDB (asyncmy, autocommit): ``INSERT IGNORE``, first when one row is affected
  (reliable for ``INSERT IGNORE``, unlike ``ON DUPLICATE KEY UPDATE``);
* Redis (redis-py asyncio): ``SET key 1 NX PX``, first when it answers OK.

The baseline's table holds what the store's must, the jti (primary key) and its expiry
(indexed, for purging); its connections are sized like the store's: 16 opened up front and
handed out by a queue on servers (nothing is sent on return: asyncpg's own pool would add a
reset round trip), the one shared connection on SQLite, a blocking pool of 16 on Redis. Our
side verifies its token, checks the answer's type, reads the pause's checkpoint
(`MemoryCheckpoints`) and claims and commits; its tokens are minted up front with
`PauseTokens.mint()`, the baseline's are the same claims signed by joserfc.

When the store offers the one-step ``consume`` (`pausetoken.plugins.SupportsConsume`) and the
service redeems through it, the figure is measured a second time with that method hidden
by a delegating wrapper, so the service claims and then commits (two store calls). Which
store calls a consume made is found by running one through a recording wrapper, and printed.

The output also shows this process's CPU time per consume next to the wall time per consume:
when the two are about equal, the figure is bound by this process's CPU, not the server's.

Every figure is the median of several rounds; the candidates take turns within a round, in
an order that alternates from round to round. Engines are skipped with a one-line note as
in ``stores.py``: a driver or store distribution not installed, or no URL variable
(``PAUSETOKEN_TEST_POSTGRESQL_URL``, ``PAUSETOKEN_TEST_MYSQL_URL``,
``PAUSETOKEN_TEST_REDIS_URL``) and nothing listening at the loopback default. Tables and keys
are made for the run and removed afterwards.

    python benchmarks/consume.py                      # 5 rounds x 4,000 consumes each
    python benchmarks/consume.py --quick              # 2 rounds x 300
    python benchmarks/consume.py --engine postgresql  # one engine
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from joserfc import jwt
from joserfc.jwk import OctKey

import pausetoken.plugins
from _drivers import connect
from _results import record
from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    PauseTokens,
    Scope,
)
from redeem import PAYLOAD, Decision, Refund
from stores import (
    DEFAULT_URLS,
    ENV,
    drop_redis_keys,
    drop_table,
    rate,
    runnable,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from datetime import datetime

    from pausetoken.plugins import ClaimRequest, ClaimResult, PauseRecord, TokenStore

CONCURRENCY = 16
SCOPE = Scope("acme", namespace="billing")
ANSWER = {"approved": True}
# A random key per run, as the key checks require; the baseline signs and verifies with it.
SECRET = secrets.token_bytes(32)
KID = "bench"
OCT_KEY = OctKey.import_key(SECRET)
HEADER = {"alg": "HS256", "typ": "pause+jwt", "kid": KID}
REQUIRED: jwt.ClaimsOption = {"essential": True}
ENGINES = ("sqlite", "postgresql", "mysql", "redis")
# Which store calls a consume made, as the output names them.
PATHS = {
    ("consume",): "one step (store.consume)",
    ("claim", "commit"): "two steps (store.claim + store.commit)",
}


# -- the store, with its one-step consume hidden (and a recording variant) ------------------


class TwoStep:
    """Delegates every `TokenStore` method to ``store``, but has no ``consume``."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        return await self.store.claim(request)

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        return await self.store.renew(pause_key, lease_id, lease_until)

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        return await self.store.commit(pause_key, lease_id, expires_at)

    async def release(self, pause_key: str, lease_id: str) -> bool:
        return await self.store.release(pause_key, lease_id)

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        return await self.store.revoke(pause_key, scope_hash, name, expires_at, now)

    async def status(self, pause_key: str) -> PauseRecord | None:
        return await self.store.status(pause_key)

    async def purge(self, before: datetime) -> int:
        return await self.store.purge(before)

    async def check(self) -> None:
        await self.store.check()

    async def aclose(self) -> None:
        """Nothing: the wrapped store is closed by whoever opened it."""


class Recording(TwoStep):
    """`TwoStep` that notes the name of each claim and commit."""

    def __init__(self, store: TokenStore) -> None:
        super().__init__(store)
        self.calls: list[str] = []

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        self.calls.append("claim")
        return await super().claim(request)

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        self.calls.append("commit")
        return await super().commit(pause_key, lease_id, expires_at)


class RecordingOneStep(Recording):
    """`Recording` with the wrapped store's ``consume`` too."""

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        self.calls.append("consume")
        result: ClaimResult = await cast("Any", self.store).consume(request)
        return result


def offers_consume(store: TokenStore) -> bool:
    """Whether ``store`` has the optional one-step ``consume`` (by the protocol once it exists)."""
    protocol = getattr(pausetoken.plugins, "SupportsConsume", None)
    return isinstance(store, protocol) if protocol is not None else hasattr(store, "consume")


# -- our side -------------------------------------------------------------------------------

KEYS = KeyRing.from_secret(SECRET, kid=KID)
THREADS = itertools.count()


def service(store: TokenStore, checkpoints: MemoryCheckpoints) -> PauseTokens:
    tokens = PauseTokens(signer=JoseSigner(KEYS), store=store, checkpoints=checkpoints)
    tokens.register(Interrupt("refund", payload=Refund, response=Decision))
    return tokens


async def mint(tokens: PauseTokens, n: int) -> list[str]:
    return [
        (
            await tokens.mint(
                "refund", PAYLOAD, scope=SCOPE, thread_id=f"t-{next(THREADS)}", run_id="run"
            )
        ).token
        for _ in range(n)
    ]


async def path_taken(store: TokenStore, checkpoints: MemoryCheckpoints) -> str:
    """Which store calls one `PauseTokens.consume()` on ``store`` makes, named."""
    recording = RecordingOneStep(store) if offers_consume(store) else Recording(store)
    tokens = service(recording, checkpoints)
    [token] = await mint(tokens, 1)
    await tokens.consume(token, ANSWER, scope=SCOPE)
    calls = tuple(recording.calls)
    return PATHS.get(calls, " + ".join(f"store.{call}" for call in calls))


def our_consume(tokens: PauseTokens, batch: list[str]) -> Callable[[int], Awaitable[None]]:
    async def consume(i: int) -> None:
        done = await tokens.consume(batch[i], ANSWER, scope=SCOPE)
        assert not done.replayed

    return consume


# -- the hand-written side ------------------------------------------------------------------


class Baseline:
    """joserfc's strict decode, then one statement on the raw driver that decides first use."""

    #: What the statement is, as the output names it.
    statement = ""

    registry = jwt.JWTClaimsRegistry()

    def expect(self, scope_hash: str) -> None:
        """Check tokens as a strict user would, for the scope whose hash is ``scope_hash``."""
        self.registry = jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": "pausetoken"},
            aud={"essential": True, "value": "pausetoken"},
            exp={"essential": True},
            scope_hash={"essential": True, "value": scope_hash},
            session_id={"essential": True, "allow_blank": True},  # "" when there is none
            iat=REQUIRED,
            jti=REQUIRED,
            name=REQUIRED,
            interrupt_id=REQUIRED,
            run_id=REQUIRED,
            thread_id=REQUIRED,
            checkpoint_id=REQUIRED,
            request_hash=REQUIRED,
            ver=REQUIRED,
        )

    async def first_use(self, jti: str, exp: int) -> bool:
        """Record ``jti`` (valid until ``exp``); whether this was its first use."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    def consume(self, batch: list[str]) -> Callable[[int], Awaitable[None]]:
        async def consume(i: int) -> None:
            claims = jwt.decode(batch[i], OCT_KEY, algorithms=["HS256"]).claims
            self.registry.validate(claims)
            assert await self.first_use(claims["jti"], claims["exp"])

        return consume


def sign_like(claims: dict[str, Any], n: int) -> list[str]:
    """``n`` tokens of ``claims`` (each with a fresh jti), signed by joserfc."""
    return [
        jwt.encode(HEADER, {**claims, "jti": secrets.token_urlsafe(16)}, OCT_KEY) for _ in range(n)
    ]


class SqlBaseline(Baseline):
    """A jti table on PostgreSQL, MySQL/MariaDB or SQLite, through the raw async driver."""

    def __init__(self, family: str, url: str, table: str) -> None:
        from sqlalchemy.engine import make_url  # noqa: PLC0415

        self.family, self.url, self.table = family, make_url(url), table
        self.conns: list[Any] = []
        self.idle: asyncio.Queue[Any] = asyncio.Queue()
        if family == "postgresql":
            self.statement = "INSERT ... ON CONFLICT DO NOTHING RETURNING 1 (asyncpg)"
            self.sql = (
                f"INSERT INTO {table} (jti, expires_at) VALUES ($1, $2)"
                " ON CONFLICT DO NOTHING RETURNING 1"
            )
        elif family == "sqlite":
            self.statement = "INSERT ... ON CONFLICT DO NOTHING RETURNING 1 (aiosqlite)"
            self.sql = (
                f"INSERT INTO {table} (jti, expires_at) VALUES (?, ?)"
                " ON CONFLICT DO NOTHING RETURNING 1"
            )
        else:
            self.statement = "INSERT IGNORE (asyncmy)"
            self.sql = f"INSERT IGNORE INTO {table} (jti, expires_at) VALUES (%s, %s)"

    async def open(self, size: int) -> None:
        """Open the connections (one on SQLite) and create the table."""
        for _ in range(1 if self.family == "sqlite" else size):
            # As the store opens its file: autocommit, WAL, a busy timeout.
            conn = await connect(self.family, self.url, wal=True)
            self.conns.append(conn)
            self.idle.put_nowait(conn)
        key = "VARBINARY(64)" if self.family == "mysql" else "TEXT"
        await self.execute(
            f"CREATE TABLE {self.table} (jti {key} PRIMARY KEY, expires_at BIGINT NOT NULL)"
        )
        await self.execute(f"CREATE INDEX ix_{self.table}_exp ON {self.table} (expires_at)")

    async def server(self) -> str:
        """The server's version string (MariaDB names itself in it)."""
        conn = self.conns[0]
        if self.family != "mysql":
            return ""
        async with conn.cursor() as cursor:
            await cursor.execute("SELECT VERSION()")
            row = await cursor.fetchone()
        return str(row[0])

    async def execute(self, sql: str) -> None:
        conn = self.conns[0]
        if self.family == "mysql":
            async with conn.cursor() as cursor:
                await cursor.execute(sql)
        else:
            await conn.execute(sql)

    async def first_use(self, jti: str, exp: int) -> bool:
        if self.family == "sqlite":  # one connection shared, as the store does
            return bool(await self.conns[0].execute_fetchall(self.sql, (jti, exp)))
        conn = await self.idle.get()
        try:
            if self.family == "postgresql":
                return await conn.fetchval(self.sql, jti, exp) is not None
            async with conn.cursor() as cursor:
                await cursor.execute(self.sql, (jti, exp))
                return bool(cursor.rowcount == 1)
        finally:
            self.idle.put_nowait(conn)

    async def close(self) -> None:
        try:
            await self.execute(f"DROP TABLE IF EXISTS {self.table}")
        finally:
            for conn in self.conns:
                if self.family == "mysql":
                    await conn.ensure_closed()
                else:
                    await conn.close()


class RedisBaseline(Baseline):
    """``SET key 1 NX PX`` on a redis-py asyncio client with a blocking pool of 16."""

    statement = "SET key 1 NX PX (redis-py)"

    def __init__(self, url: str, prefix: str) -> None:
        from redis.asyncio import BlockingConnectionPool, Redis  # noqa: PLC0415

        pool = BlockingConnectionPool.from_url(url, max_connections=CONCURRENCY, timeout=10)
        self.client = Redis.from_pool(pool)
        self.prefix = prefix

    async def first_use(self, jti: str, exp: int) -> bool:
        ttl_ms = max(1, int((exp - time.time()) * 1000))
        return bool(await self.client.set(f"{self.prefix}{jti}", b"1", nx=True, px=ttl_ms))

    async def close(self) -> None:
        await self.client.aclose()


# -- one engine -----------------------------------------------------------------------------


async def measure(label: str, store: TokenStore, baseline: Baseline, n: int, rounds: int) -> None:
    """Print and record our consumes/s on ``store`` against ``baseline``'s, at concurrency 16."""
    checkpoints = MemoryCheckpoints()
    candidates: dict[str, PauseTokens] = {"ours": service(store, checkpoints)}
    path = await path_taken(store, checkpoints)
    if offers_consume(store) and path == PATHS[("consume",)]:
        two = TwoStep(store)
        candidates["two-step"] = service(two, checkpoints)
        two_path = await path_taken(two, checkpoints)
    ours = candidates["ours"]
    [sample] = await mint(ours, 1)
    template = ours.verify(sample).to_dict()
    baseline.expect(template["scope_hash"])
    samples: dict[str, list[float]] = {name: [] for name in [*candidates, "baseline"]}
    # This process's CPU time per consume (user and system): when it is about the wall
    # time per consume, the run is bound by this process, not by the server.
    cpu: dict[str, list[float]] = {name: [] for name in samples}
    order = list(samples)
    warm = max(50, n // 10)
    for r in range(-1, rounds):  # round -1 warms connections and statement caches up
        count = warm if r < 0 else n
        ops: dict[str, Callable[[int], Awaitable[None]]] = {
            name: our_consume(tokens, await mint(tokens, count))
            for name, tokens in candidates.items()
        }
        ops["baseline"] = baseline.consume(sign_like(template, count))
        for name in order if r % 2 == 0 else order[::-1]:
            started = time.process_time()
            took = await rate(ops[name], count, CONCURRENCY)
            if r >= 0:
                samples[name].append(took)
                cpu[name].append((time.process_time() - started) / count)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    base = medians["baseline"]
    shown = {"ours": f"PauseTokens.consume, {path}"}
    if "two-step" in medians:
        shown["two-step"] = f"PauseTokens.consume, {two_path}, store.consume hidden"
    shown["baseline"] = f"hand-written: joserfc decode + claims, {baseline.statement}"
    width = max(map(len, shown.values()))
    for name, text in shown.items():
        print(f"{text:<{width}} {medians[name]:>8,.0f}/s   ratio {medians[name] / base:.2f}")
    print(
        "this process's CPU per consume (wall time per consume): "
        + ", ".join(
            f"{name} {statistics.median(cpu[name]) * 1e6:.0f} µs ({1e6 / medians[name]:.0f} µs)"
            for name in shown
        )
    )
    measure_name = f"{label}: consumes/s at concurrency {CONCURRENCY}"
    hand_written = f"joserfc + {baseline.statement}"
    record(
        f"{measure_name}, PauseTokens.consume in {path} / {hand_written}",
        medians["ours"] / base,
        detail=f"{medians['ours']:,.0f}/s / {base:,.0f}/s",
        target=0.9,
    )
    if "two-step" in medians:  # for comparison: what the one-step consume saves
        record(
            f"{measure_name}, PauseTokens.consume in {two_path}, store.consume hidden"
            f" / {hand_written}",
            medians["two-step"] / base,
            detail=f"{medians['two-step']:,.0f}/s / {base:,.0f}/s",
        )


async def bench_sql(family: str, url: str, n: int, rounds: int) -> None:
    from pausetoken_sqlalchemy import SQLAlchemyStore  # noqa: PLC0415

    table = f"pt_bench_{secrets.token_hex(4)}"
    options: dict[str, Any] = {"table_name": table}
    if family != "sqlite":
        options.update(pool_size=CONCURRENCY, max_overflow=2)  # the store holds 16
    store = SQLAlchemyStore.from_url(url, **options)
    raw_url = store.engine.url.render_as_string(hide_password=False)
    baseline = SqlBaseline(family, raw_url, f"{table}_jti")
    try:
        await store.check()
        await baseline.open(CONCURRENCY)
        server = await baseline.server()
        label = "mariadb" if "mariadb" in server.lower() else family
        print(f"\n== {label}: {store!r}")
        await measure(label, store, baseline, n, rounds)
    finally:
        try:
            await baseline.close()
        finally:
            await drop_table(store)
            await store.aclose()


async def bench_redis(url: str, n: int, rounds: int) -> None:
    from pausetoken_redis import RedisStore  # noqa: PLC0415

    prefix = f"pt-bench-{secrets.token_hex(4)}:"
    store = RedisStore.from_url(url, key_prefix=prefix, max_connections=CONCURRENCY)
    baseline = RedisBaseline(url, f"{prefix}jti:")
    print(f"\n== redis: {store!r}")
    try:
        await store.check()
        await measure("redis", store, baseline, n, rounds)
    finally:
        try:
            await drop_redis_keys(baseline.client, prefix, 0)
        finally:
            await baseline.close()
            await store.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=[*ENGINES, "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, fewer consumes")
    args = parser.parse_args()
    n, rounds = (300, 2) if args.quick else (4000, 5)
    engines = ENGINES if args.engine == "all" else (args.engine,)
    with tempfile.TemporaryDirectory() as tmp:
        for family in runnable(engines):
            if family == "redis":
                url = os.environ.get(ENV[family]) or DEFAULT_URLS[family]
                asyncio.run(bench_redis(url, n, rounds))
                continue
            if family == "sqlite":
                url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
            else:
                url = os.environ.get(ENV[family]) or DEFAULT_URLS[family]
            asyncio.run(bench_sql(family, url, n, rounds))


if __name__ == "__main__":
    main()
