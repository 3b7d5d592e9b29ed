"""Lost connections, timeouts and partitions on real servers: fail closed, then recover.

An administrator connection outside the store holds row locks and kills the store's
connections (``pg_terminate_backend`` on PostgreSQL, ``KILL`` on MariaDB/MySQL). A
`BlackHole` proxy in front of the server cuts the store off (a partition: connections stay
open and nothing answers); the server itself is never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncmy
import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy_support import LEASE, SCOPE, claim_request, new_pause_key

from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import ClaimOutcome
from pausetoken_sqlalchemy import SQLAlchemyStore
from private_servers import BlackHole

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

WAIT_S = 10.0
#: The store's timeout in the partition tests.
CUT_TIMEOUT = 1.0
#: What a call cut off may take beyond its timeout: the event loop's scheduling. (Closing a
#: dead connection gracefully, as SQLAlchemy's invalidation does first, would add 2 s.)
SCHEDULING_S = 0.5
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306}


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class Admin:
    """A plain driver connection next to the store, for locks and kills."""

    def __init__(self, engine: str, conn: Any) -> None:
        self.engine = engine
        self.conn = conn

    @classmethod
    async def connect(cls, engine: str, url: str) -> Admin:
        parsed = make_url(url)
        if engine == "postgresql":
            dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
            return cls(engine, await asyncpg.connect(dsn))
        conn = await asyncmy.connect(
            host=parsed.host,
            port=parsed.port or 3306,
            user=parsed.username,
            password=parsed.password or "",
            db=parsed.database,
            autocommit=True,
        )
        return cls(engine, conn)

    async def close(self) -> None:
        if self.engine == "postgresql":
            await self.conn.close()
        else:
            await self.conn.ensure_closed()

    async def execute(self, sql: str, *args: Any) -> list[Any]:
        if self.engine == "postgresql":
            numbered = sql
            for i in range(len(args)):
                numbered = numbered.replace("%s", f"${i + 1}", 1)
            return list(await self.conn.fetch(numbered, *args))
        async with self.conn.cursor() as cursor:
            await cursor.execute(sql, args)
            return list(await cursor.fetchall())

    async def lock_new_row(self, table: str, key: str) -> None:
        """Insert the pause ``key`` in a transaction left open: claims of it wait for its lock."""
        await self.execute("BEGIN")
        await self.execute(
            f"INSERT INTO {table} (pause_key, scope_hash, name, state, lease_id, lease_until_us,"  # noqa: S608 - our own generated table name
            " expires_at_us, created_at_us, updated_at_us)"
            " VALUES (%s, %s, 'admin', 'claimed', 'admin', 0, 0, 0, 0)",
            key.encode(),
            SCOPE,
        )

    async def rollback(self) -> None:
        await self.execute("ROLLBACK")

    async def server_id(self, driver_conn: Any) -> int:
        """The server's id for one of the store's connections (asked on that connection)."""
        if self.engine == "postgresql":
            return int(await driver_conn.fetchval("SELECT pg_backend_pid()"))
        async with driver_conn.cursor() as cursor:
            await cursor.execute("SELECT CONNECTION_ID()")
            return int((await cursor.fetchone())[0])

    async def kill(self, server_id: int) -> None:
        if self.engine == "postgresql":
            await self.execute("SELECT pg_terminate_backend(%s)", server_id)
        else:
            await self.execute(f"KILL {int(server_id)}")

    async def wait_until_blocked(self, server_id: int) -> None:
        """Poll until that connection waits for a row lock (so the kill lands mid-statement)."""
        if self.engine == "postgresql":
            sql = "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'"
        else:
            sql = (
                "SELECT 1 FROM information_schema.innodb_trx"
                " WHERE trx_mysql_thread_id = %s AND trx_state = 'LOCK WAIT'"
            )
        async with asyncio.timeout(WAIT_S):
            # InnoDB refreshes innodb_trx only after 100 ms without reads: poll slower.
            while not await self.execute(sql, server_id):  # noqa: ASYNC110 - polls the server
                await asyncio.sleep(0.25)


@pytest.fixture(params=["postgresql", "mysql"])
def engine_name(request: pytest.FixtureRequest) -> str:
    """Servers only (overrides the conftest's engines): SQLite has no connection to kill."""
    return str(request.param)


@pytest.fixture
async def admin(engine_name: str, url: str, table_name: str) -> AsyncIterator[Admin]:
    # Depends on the table so it closes first: an open admin transaction would block DROP.
    admin = await Admin.connect(engine_name, url)
    yield admin
    await admin.close()


async def _held_ids(store: SQLAlchemyStore, admin: Admin) -> list[int]:
    return [await admin.server_id(h.driver) for h in store._connections._idle]


async def test_a_connection_killed_mid_claim_fails_closed_and_the_next_call_succeeds(
    admin: Admin, url: str, table_name: str
) -> None:
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as store:
        now = _now()
        await store.claim(claim_request(new_pause_key(), now=now))  # holds one idle connection
        (victim,) = await _held_ids(store, admin)
        key = new_pause_key()
        await admin.lock_new_row(store.table.name, key)
        blocked = asyncio.create_task(store.claim(claim_request(key, now=now)))
        await admin.wait_until_blocked(victim)
        await admin.kill(victim)
        with pytest.raises(StoreUnavailable) as caught:
            await blocked
        assert caught.value.__cause__ is not None
        await admin.rollback()

        # The killed claim never took effect; the next caller is the one and only winner.
        first = await store.claim(claim_request(key, now=now))
        second = await store.claim(claim_request(key, now=now))
        assert (first.outcome, second.outcome) == (
            ClaimOutcome.CLAIMED,
            ClaimOutcome.IN_PROGRESS,
        )


async def test_every_held_connection_dropped_at_once_costs_at_most_one_failed_call(
    admin: Admin, url: str, table_name: str
) -> None:
    async with SQLAlchemyStore.from_url(url, table_name=table_name, pool_size=4) as store:
        now = _now()
        await asyncio.gather(
            *(store.claim(claim_request(new_pause_key(), now=now)) for _ in range(8))
        )
        victims = await _held_ids(store, admin)
        assert len(victims) > 1
        for victim in victims:  # what a server restart does to a pool
            await admin.kill(victim)
        key = new_pause_key()
        with pytest.raises(StoreUnavailable):
            await store.claim(claim_request(key, now=now))
        results = await asyncio.gather(
            *(store.claim(claim_request(key, now=now)) for _ in range(4))
        )
        assert sorted(r.outcome.value for r in results) == sorted(
            [ClaimOutcome.CLAIMED.value] + [ClaimOutcome.IN_PROGRESS.value] * 3
        )


async def test_an_idle_connection_the_server_dropped_is_replaced_without_an_error(
    admin: Admin, url: str, table_name: str
) -> None:
    async with SQLAlchemyStore.from_url(url, table_name=table_name, ping_after=0) as store:
        now = _now()
        await store.claim(claim_request(new_pause_key(), now=now))
        (victim,) = await _held_ids(store, admin)
        await admin.kill(victim)
        result = await store.claim(claim_request(new_pause_key(), now=now))
        assert result.outcome is ClaimOutcome.CLAIMED
        assert victim not in await _held_ids(store, admin)


async def test_a_claim_that_times_out_fails_closed_and_never_wins_twice(
    admin: Admin, url: str, table_name: str
) -> None:
    async with SQLAlchemyStore.from_url(url, table_name=table_name, timeout=0.5) as store:
        now = _now()
        await store.ensure_schema()
        key = new_pause_key()
        timed_out = claim_request(key, now=now)
        await admin.lock_new_row(store.table.name, key)
        with pytest.raises(StoreUnavailable) as caught:
            await store.claim(timed_out)
        assert isinstance(caught.value.__cause__, TimeoutError)
        await admin.rollback()

        # The server may still finish the abandoned statement (its lease then holds the
        # token until it lapses); either way exactly one later caller wins.
        moment = now
        after = await store.claim(claim_request(key, now=moment))
        if after.outcome is ClaimOutcome.IN_PROGRESS:
            assert after.lease_until == timed_out.lease_until
            moment = now + LEASE
            after = await store.claim(claim_request(key, now=moment))
        assert after.outcome is ClaimOutcome.CLAIMED
        again = await store.claim(claim_request(key, now=moment))
        assert again.outcome is ClaimOutcome.IN_PROGRESS


# -- partitions -----------------------------------------------------------------------------


@contextlib.contextmanager
def cut_off(engine_name: str, url: str) -> Iterator[tuple[str, BlackHole]]:
    """The server's URL through a `BlackHole` proxy (a loopback server only), and the proxy."""
    parsed = make_url(url)
    if parsed.host not in {"127.0.0.1", "localhost"}:
        pytest.skip("the partition tests proxy a server on the loopback interface only")
    with BlackHole(parsed.port or _DEFAULT_PORTS[engine_name]) as hole:
        proxied = parsed.set(host="127.0.0.1", port=hole.port)
        yield proxied.render_as_string(hide_password=False), hole


async def _timed_failure(store: SQLAlchemyStore) -> float:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        async with asyncio.timeout(CUT_TIMEOUT * 3 + 2):  # a hang fails here
            await store.claim(claim_request(new_pause_key(), now=_now()))
    return time.monotonic() - started


# Where a call meets the partition: the statement on a connection the store holds; the ping
# of a held connection that idled (``ping_after=0``); SQLAlchemy's pre-ping of a connection
# idle in its pool (the store gives each back at once, ``recycle_after`` being tiny); the
# schema step, on a connection from the pool.
_WAYS: dict[str, dict[str, float]] = {
    "statement": {},
    "ping": {"ping_after": 0},
    "pool_pre_ping": {"recycle_after": 1e-6},
    "schema_step": {},
}


@pytest.mark.parametrize("way", list(_WAYS))
async def test_a_call_cut_off_fails_within_the_timeout_and_the_next_one_after_it_succeeds(
    engine_name: str, url: str, table_name: str, way: str
) -> None:
    with cut_off(engine_name, url) as (proxied, hole):
        options = {"table_name": table_name, "timeout": CUT_TIMEOUT, **_WAYS[way]}
        async with SQLAlchemyStore.from_url(proxied, **options) as store:
            if way == "schema_step":
                async with store.engine.connect():
                    pass  # one connection idle in the pool
            else:
                await store.claim(claim_request(new_pause_key(), now=_now()))
            hole.cut.set()
            took = await _timed_failure(store)
            hole.cut.clear()
            assert took < CUT_TIMEOUT + SCHEDULING_S, took
            result = await store.claim(claim_request(new_pause_key(), now=_now()))
            assert result.outcome is ClaimOutcome.CLAIMED


async def test_the_application_s_own_connections_are_closed_as_sqlalchemy_closes_them(
    url: str, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store listens to its engine's invalidations, but acts only on those of its own work."""
    engine = create_async_engine(url)
    try:
        store = SQLAlchemyStore(engine, table_name=table_name)
        aborted: list[Any] = []
        monkeypatch.setattr(type(store._family), "abort", lambda _, conn: aborted.append(conn))
        await store.claim(claim_request(new_pause_key(), now=_now()))
        async with engine.connect() as conn:
            await conn.invalidate(asyncio.CancelledError())
        assert aborted == []
        await store.aclose()
    finally:
        await engine.dispose()
