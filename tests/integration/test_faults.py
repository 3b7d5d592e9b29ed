"""Faults under load, on private servers: what callers see, and that no body runs twice.

Every test starts its own server (`private_servers`: PostgreSQL, MariaDB, Redis with
``appendonly yes`` and ``appendfsync always``, a Redis Cluster of three such masters, nx-27017
on a SQLite file) on a free loopback port with its data in a temporary directory, and stops it
at the end; the machine's shared servers are never touched. Redemptions go through the whole
service (`PauseTokens.redeem`); the bodies' own file (`redeemers`) counts the bodies that ran.
A body run again after its caller was told `CommitUnconfirmed` ("the run may have resumed"; the
worker then leaves that pause, as docs/operations.md asks) is counted apart and printed; any
other second run fails.

- **Restarts** (a fast one, then a SIGKILL) while 4 processes redeem: callers see only
  `StoreUnavailable` (or `CommitUnconfirmed`), no body runs twice, every token is redeemed
  once in the end, and redemptions resume within seconds of the server's return.
- **Partition** (`BlackHole` stops forwarding, connections stay open; a Redis Cluster's
  nodes, whose addresses the client learns from the cluster itself, are stopped with SIGSTOP
  instead, which leaves their connections open and unanswered just the same): every call
  fails with `StoreUnavailable` within the store's timeout (a dead connection is dropped
  within that time too), none hangs; once it heals, the store serves again within seconds.
- **A worker SIGKILLed between claim and commit**: its pause is redeemed once, by another
  worker, after the lease.
- **Disk full** (SQLite on a 2 MiB tmpfs): typed errors, no body runs, nothing half-written,
  and the same service redeems again once space is freed.
- **Clock skew** beyond ``leeway`` is tested at the documented bound in test_leases.py.
- **The table dropped** under a running store: SQL engines and MongoDB refuse
  (``store_table_missing``) and do not create it again. Redis cannot tell: after ``FLUSHDB``
  (or a restart without persistence) its keys are simply absent, and a pause answered before
  can be answered again. No test pretends otherwise; docs/redis.md says so.

On a Redis Cluster the restarted server is one of its masters (no replicas: a failover to
an asynchronous replica may lose acknowledged writes, see docs/redis.md; a manual
``CLUSTER FAILOVER``, which loses none, is tested in tests/backends/redis).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from redeemers import Plan, crowd, finish, hung_marker, new_jwks, started, tally

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    PauseTokens,
    Scope,
    TokenStatus,
    open_store,
)
from pausetoken.exceptions import (
    ConfigurationError,
    PauseTokenError,
    RedemptionInProgress,
    StoreUnavailable,
)
from private_servers import (
    BlackHole,
    PrivateServer,
    free_port,
    mariadb_server,
    nx_27017_server,
    postgresql_server,
)
from redis_servers import DURABLE, private_cluster, start_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from contextlib import AbstractContextManager

pytestmark = pytest.mark.slow

SERVERS = ("postgresql", "mysql", "redis", "redis-cluster", "mongodb")
#: Seconds one store operation may take (the stores' ``timeout``).
STORE_TIMEOUT = 2.0
#: Seconds a store call may take beyond its timeout before it counts as hanging.
SLACK = 2.0
#: Seconds a call cut off by a partition may take beyond its timeout: the event loop's own
#: scheduling on a busy machine, nothing more (a dead connection is dropped within the call's
#: time, never after it).
SCHEDULING = 0.5
#: Seconds a partition lasts: longer than the calls it fails, as a real one does, so that
#: what a client checks in the background (pymongo's server monitor) meets it too.
PARTITION_S = STORE_TIMEOUT * 2.5
#: Seconds within which a store serves again once a partition heals. The SQL stores and
#: Redis serve at once; MongoDB's client waits for its server monitor, whose check sent while
#: cut off gives up at the store's timeout (its connect timeout), and checks again 0.5 s later.
HEALED_S = STORE_TIMEOUT + 1.0
LEASE_S = 6.0
LEEWAY_S = 1.0
WORKERS = 4
SCOPE = Scope("faults")


@contextlib.contextmanager
def private(engine: str, directory: Path) -> Iterator[PrivateServer]:
    """A private server of ``engine``, stopped at the end."""
    if engine == "postgresql":
        with postgresql_server() as server:
            yield server
    elif engine == "mysql":
        with mariadb_server(directory) as server:
            yield server
    elif engine == "mongodb":
        with nx_27017_server(directory) as server:
            yield server
    elif engine == "redis":
        port = free_port()
        data = directory / "redis"

        def start() -> subprocess.Popen[bytes]:
            return start_server(data, port, *DURABLE)

        server = PrivateServer(
            url=f"redis://127.0.0.1:{port}/0", port=port, start=start, process=start()
        )
        try:
            yield server
        finally:
            server.stop(immediate=True)
    elif engine == "redis-cluster":
        # Three durable masters; the one restarted is the first (the cluster stops the rest).
        with private_cluster(directory, replicas=0, durable=True) as cluster:
            server = PrivateServer(
                url=cluster.url,
                port=cluster.ports[0],
                start=lambda: cluster.start_node(0),
                process=cluster.processes[0],
            )
            try:
                yield server
            finally:
                server.stop(immediate=True)
    else:  # pragma: no cover
        pytest.fail(f"unknown engine {engine}")


def url_through(url: str, port: int, proxy_port: int) -> str:
    """``url`` with its port replaced by the proxy's."""
    return url.replace(f"127.0.0.1:{port}", f"127.0.0.1:{proxy_port}")


def options_of(engine: str, timeout: float = STORE_TIMEOUT) -> dict[str, Any]:
    if engine == "mongodb":
        return {"collection": "tokens", "timeout": timeout}
    return {"timeout": timeout}


@contextlib.asynccontextmanager
async def service(
    url: str, options: dict[str, Any], jwks: str, *, offset: float = 0.0
) -> AsyncIterator[PauseTokens]:
    """A service on its own store; ``offset`` seconds added to its clock."""
    store = open_store(url, **options)
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.from_jwks(jwks)),
        store=store,
        checkpoints=MemoryCheckpoints(),
        lease=timedelta(seconds=LEASE_S),
        leeway=timedelta(seconds=LEEWAY_S),
        clock=lambda: time.time() + offset,
    )
    tokens.register(Interrupt("approve", payload=dict[str, int], response=bool))
    try:
        yield tokens
    finally:
        await store.aclose()


async def mint(tokens: PauseTokens, n: int) -> str:
    event = await tokens.mint(
        "approve",
        {"n": n},
        scope=SCOPE,
        thread_id=f"thread-{n}",
        run_id="run",
        interrupt_id="interrupt",
        checkpoint_id="checkpoint",
    )
    return event.token


def plan_for(url: str, options: dict[str, Any], tmp_path: Path, **changes: Any) -> Plan:
    fields: dict[str, Any] = {
        "url": url,
        "options": options,
        "jwks": new_jwks(),
        "pauses": 200,
        "bodies": str(tmp_path / "bodies"),
        "reports": str(tmp_path / "reports"),
        "lease_s": LEASE_S,
        "leeway_s": LEEWAY_S,
        "body_s": 0.2,
        "deadline": time.time() + 150,
    }
    fields.update(changes)
    return Plan(**fields)


def bodies_so_far(plan: Plan) -> int:
    return len(Path(plan.bodies).read_text().split())


def wait_for_more_bodies(plan: Plan, than: int, seconds: float) -> float:
    """Seconds until a body ran after ``than`` had; fail after ``seconds``."""
    started = time.monotonic()
    while bodies_so_far(plan) <= than:
        if time.monotonic() - started > seconds:
            pytest.fail(f"no redemption within {seconds:g} s of the server's return")
        time.sleep(0.05)
    return time.monotonic() - started


def assert_exactly_once(plan: Plan) -> None:
    result = tally(plan)
    print(result.summary(Path(plan.bodies).parent.name, WORKERS))  # noqa: T201 - in the log
    assert result.double_runs == []
    assert result.lost == []
    assert result.unfinished == 0
    assert result.unexpected_errors() == {}


# -- restart ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", SERVERS)
def test_restarts_under_load_lose_nothing_and_run_nothing_twice(
    engine: str, tmp_path: Path
) -> None:
    """A fast restart, then a SIGKILL and a restart, under one continuous load."""
    with private(engine, tmp_path / "server") as server:
        # nx-27017 (one Python process on SQLite) serves fewer redemptions a second.
        pauses = 100 if engine == "mongodb" else 200
        # A lease well beyond the outage: commits retried after it land while it holds.
        plan = plan_for(server.url, options_of(engine), tmp_path, pauses=pauses, lease_s=12.0)
        recovered_in = []
        with crowd(plan, WORKERS) as workers:
            started(plan, WORKERS)
            for immediate, load in ((False, 20), (True, 60)):
                while bodies_so_far(plan) < load:
                    time.sleep(0.02)
                server.stop(immediate=immediate)
                # Down for longer than one store call may take, so callers meet it gone,
                # but shorter than a lease: running redemptions keep their claims.
                time.sleep(STORE_TIMEOUT + 0.5)
                before = bodies_so_far(plan)
                server.resume()
                recovered_in.append(wait_for_more_bodies(plan, before, seconds=15))
            finish(workers, plan)
        assert_exactly_once(plan)
    assert max(recovered_in) < 15, recovered_in


# -- partition --------------------------------------------------------------------------


@contextlib.contextmanager
def partitionable(
    engine: str, directory: Path
) -> Iterator[tuple[str, Callable[[], AbstractContextManager[None]]]]:
    """A private server's URL, and a partition: a context during which it answers nothing."""
    if engine == "redis-cluster":
        with private_cluster(directory, replicas=0, durable=True) as cluster:
            yield cluster.url, cluster.frozen
        return
    with private(engine, directory) as server, BlackHole(server.port) as hole:

        @contextlib.contextmanager
        def cut() -> Iterator[None]:
            hole.cut.set()
            try:
                yield
            finally:
                hole.cut.clear()

        yield url_through(server.url, server.port, hole.port), cut


@pytest.mark.parametrize("engine", SERVERS)
async def test_a_partition_fails_every_call_within_the_timeout(engine: str, tmp_path: Path) -> None:
    with partitionable(engine, tmp_path / "server") as (url, partition):
        jwks = new_jwks()
        async with service(url, options_of(engine), jwks) as tokens:
            minted = [await mint(tokens, n) for n in range(7)]
            untouched = minted.pop()  # not claimed while cut off: free once the store serves
            await tokens.consume(minted[0], response=True, scope=SCOPE)  # connections open

            async def one(token: str) -> float:
                started = time.monotonic()
                with pytest.raises(StoreUnavailable):
                    async with asyncio.timeout(STORE_TIMEOUT * 3 + SLACK):  # a hang fails here
                        await tokens.consume(token, response=True, scope=SCOPE)
                return time.monotonic() - started

            with partition():
                cut_at = time.monotonic()
                # More at once than open connections: some wait on new ones, never answered.
                took = await asyncio.gather(*(one(token) for token in minted[1:]))
                await asyncio.sleep(cut_at + PARTITION_S - time.monotonic())
            healed = time.monotonic()
            # A failed claim is not released: one store call, which gives up at its timeout.
            print(f"{engine}: calls cut off failed after {sorted(took)} s")  # noqa: T201
            assert max(took) < STORE_TIMEOUT + SCHEDULING, took
            while True:
                try:
                    await tokens.consume(untouched, response=True, scope=SCOPE)
                    break
                except StoreUnavailable:
                    if time.monotonic() - healed > 30:
                        raise
                    await asyncio.sleep(0.05)
            serving_after = time.monotonic() - healed
            print(f"{engine}: serving again {serving_after:.2f} s after the partition healed")  # noqa: T201
            assert serving_after < HEALED_S, serving_after
            # A stopped server (SIGSTOP) runs the claims buffered for it once it continues,
            # after their callers gave up: those pauses are in progress until their lease ends.
            async with asyncio.timeout(30):
                while True:
                    try:
                        await tokens.consume(minted[1], response=True, scope=SCOPE)
                        break
                    except (StoreUnavailable, RedemptionInProgress):
                        await asyncio.sleep(0.2)


# -- a worker killed between claim and commit --------------------------------------------


@pytest.mark.parametrize("engine", ["sqlite", *SERVERS])
def test_a_worker_killed_between_claim_and_commit_leaves_its_pause_to_another(
    engine: str, tmp_path: Path
) -> None:
    with contextlib.ExitStack() as stack:
        if engine == "sqlite":
            url, options = f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}", options_of(engine)
        else:
            server = stack.enter_context(private(engine, tmp_path / "server"))
            url, options = server.url, options_of(engine)
        plan = plan_for(url, options, tmp_path, pauses=12, lanes=1, hang_at=0, body_s=0.0)
        with crowd(plan, WORKERS) as workers:
            marker = hung_marker(plan)
            deadline = time.monotonic() + 60
            while not marker.exists() or not marker.read_text():
                assert time.monotonic() < deadline, "no worker claimed pause 0"
                time.sleep(0.02)
            os.kill(int(marker.read_text()), signal.SIGKILL)
            killed_at = time.monotonic()
            while "0" not in Path(plan.bodies).read_text().split():
                assert time.monotonic() - killed_at < LEASE_S + LEEWAY_S + 20, "never taken over"
                time.sleep(0.05)
            taken_over_after = time.monotonic() - killed_at
            finish(workers, plan)
        result = tally(plan)
    assert result.runs[0] == 1
    assert result.double_runs == []
    assert result.lost == []
    # Not before the lease (renewed until the kill) ran out.
    assert taken_over_after > LEASE_S * 2 / 3 - 0.5, taken_over_after


# -- disk full ----------------------------------------------------------------------------


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
        timeout=30,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace')}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, timeout=30)


async def test_a_full_disk_gives_typed_errors_and_recovers_without_a_restart(
    tmp_path: Path,
) -> None:
    with small_tmpfs(tmp_path / "small", "2m") as disk:
        url = f"sqlite+aiosqlite:///{disk / 'tokens.db'}"
        async with service(url, {"timeout": STORE_TIMEOUT}, new_jwks()) as tokens:
            minted = [await mint(tokens, n) for n in range(400)]
            await tokens.consume(minted[0], response=True, scope=SCOPE)
            filler = disk / "filler"
            with contextlib.suppress(OSError), filler.open("wb") as out:
                while True:
                    out.write(b"\0" * 4096)
                    out.flush()
            ran: list[int] = []
            refused: dict[str, int] = {}
            for n in range(1, 400):
                try:
                    async with tokens.redeem(minted[n], response=True, scope=SCOPE):
                        ran.append(n)
                except PauseTokenError as exc:
                    key = f"{type(exc).__name__}:{exc.code}"
                    refused[key] = refused.get(key, 0) + 1
                    if sum(refused.values()) >= 20:
                        failed_from = n
                        break
            else:
                pytest.fail("the disk never filled up")
            assert set(refused) <= {"StoreUnavailable:store_unavailable"}, refused
            # Nothing half-written: every refused pause is still open, and none ran.
            for n in range(failed_from - 19, failed_from + 1):
                assert n not in ran
                assert (await tokens.status(minted[n], scope=SCOPE)) is TokenStatus.ACTIVE
            filler.unlink()
            for n in range(failed_from - 19, failed_from + 1):
                async with tokens.redeem(minted[n], response=True, scope=SCOPE) as redemption:
                    assert not redemption.replayed


# -- clock skew ---------------------------------------------------------------------------


# -- the table dropped -----------------------------------------------------------------------


async def drop(engine: str, url: str) -> None:
    if engine == "mongodb":
        from pymongo import AsyncMongoClient

        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url)
        try:
            await client.get_default_database().drop_collection("tokens")
        finally:
            await client.close()
        return
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine_ = create_async_engine(url)
    try:
        async with engine_.begin() as conn:
            await conn.execute(text("DROP TABLE pausetoken_redemptions"))
    finally:
        await engine_.dispose()


async def table_exists(engine: str, url: str) -> bool:
    """Whether the store's table is there again (for MongoDB: prepared again, or holding
    documents; any insert creates a collection, and the store's guard index is what refuses)."""
    if engine == "mongodb":
        from pymongo import AsyncMongoClient

        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url)
        try:
            collection = client.get_default_database()["tokens"]
            documents = await collection.count_documents({})
            indexes = await collection.index_information()
        finally:
            await client.close()
        return documents > 0 or any("pausetoken_guard" in name for name in indexes)
    from sqlalchemy import inspect
    from sqlalchemy.ext.asyncio import create_async_engine

    engine_ = create_async_engine(url)
    try:
        async with engine_.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
    finally:
        await engine_.dispose()
    return "pausetoken_redemptions" in names


@pytest.mark.parametrize("engine", ["sqlite", "postgresql", "mysql", "mongodb"])
async def test_a_table_dropped_under_a_running_store_is_refused_and_not_recreated(
    engine: str, tmp_path: Path
) -> None:
    with contextlib.ExitStack() as stack:
        if engine == "sqlite":
            url = f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}"
        else:
            url = stack.enter_context(private(engine, tmp_path / "server")).url
        async with service(url, options_of(engine), new_jwks()) as tokens:
            minted = [await mint(tokens, n) for n in range(4)]
            await tokens.consume(minted[0], response=True, scope=SCOPE)
            await drop(engine, url)
            for token in minted:  # the answered one and the open ones alike
                with pytest.raises(StoreUnavailable) as refused:
                    await tokens.consume(token, response=True, scope=SCOPE)
                assert refused.value.code == "store_table_missing"
            assert not await table_exists(engine, url)
        # A fresh start-up refuses too.
        store = open_store(url, **options_of(engine))
        try:
            with pytest.raises(ConfigurationError) as at_start:
                await store.check()
            assert at_start.value.code == "store_table_missing"
        finally:
            await store.aclose()
        assert not await table_exists(engine, url)
