"""Leases on private servers: a holder cut off from its store mid-body never runs at the
same time as the worker that takes its pause over, an outage shorter than a third of the
lease does not cost it the claim, and a clock ahead by the documented bound takes no live
claim.

Each partition test starts a private server (`private_servers`) and two services on it: the
*holder* reaches the server through a `BlackHole` proxy, the *taker* directly, so a partition
drops only the holder's traffic. The holder's store ``timeout`` is far above ``leeway``: a
renewal blocked on the cut connection must not keep the holder's body running past the
lease's end, which is when the taker's retries may start to succeed (after ``leeway`` more).
Bodies write their start and end times to a side file, and the test compares them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from redeemers import new_jwks

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    PauseTokens,
    Scope,
    open_store,
)
from pausetoken.exceptions import LeaseLost, RedemptionInProgress, StoreUnavailable
from private_servers import (
    BlackHole,
    PrivateServer,
    free_port,
    mariadb_server,
    nx_27017_server,
    postgresql_server,
)
from redis_servers import private_cluster, start_server

if TYPE_CHECKING:
    import subprocess
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow

ENGINES = ("postgresql", "mysql", "redis", "mongodb")
LEASE_S = 3.0
LEEWAY_S = 0.5
#: The holder's store timeout: well above ``leeway`` (and above the lease itself).
HOLDER_TIMEOUT_S = 5.0
#: The taker's: its server is never cut off.
TAKER_TIMEOUT_S = 10.0
SCOPE = Scope("partition")


@contextlib.contextmanager
def server_of(engine: str, directory: Path) -> Iterator[PrivateServer]:
    if engine == "postgresql":
        with postgresql_server() as server:
            yield server
    elif engine == "mysql":
        with mariadb_server(directory) as server:
            yield server
    elif engine == "mongodb":
        with nx_27017_server(directory) as server:
            yield server
    elif engine == "redis-cluster":  # no partition test proxies a cluster: the clock test only
        with private_cluster(directory, replicas=0) as cluster:
            yield PrivateServer(
                url=cluster.url,
                port=cluster.ports[0],
                start=lambda: cluster.start_node(0),
                process=cluster.processes[0],
            )
    else:
        port = free_port()

        def start() -> subprocess.Popen[bytes]:
            return start_server(directory / "redis", port)

        server = PrivateServer(
            url=f"redis://127.0.0.1:{port}/0", port=port, start=start, process=start()
        )
        try:
            yield server
        finally:
            server.stop(immediate=True)


def options_of(engine: str, timeout: float) -> dict[str, Any]:
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


async def mint(tokens: PauseTokens) -> str:
    """A token for the one pause both services answer (same thread, checkpoint, interrupt)."""
    event = await tokens.mint(
        "approve",
        {"n": 1},
        scope=SCOPE,
        thread_id="thread",
        run_id="run",
        interrupt_id="interrupt",
        checkpoint_id="checkpoint",
    )
    return event.token


class Bodies:
    """The side file: one ``<who> <start|end> <time.time()>`` line per event."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.touch()
        self._started: collections.defaultdict[str, asyncio.Event] = collections.defaultdict(
            asyncio.Event
        )

    def note(self, who: str, event: str) -> None:
        with self.path.open("a") as out:
            out.write(f"{who} {event} {time.time():.6f}\n")
        if event == "start":
            self._started[who].set()

    async def body(self, who: str, seconds: float) -> None:
        self.note(who, "start")
        try:
            await asyncio.sleep(seconds)
        finally:
            self.note(who, "end")

    def times(self) -> dict[tuple[str, str], float]:
        found: dict[tuple[str, str], float] = {}
        for line in self.path.read_text().splitlines():
            who, event, at = line.split()
            assert (who, event) not in found, f"{who} {event} twice"
            found[who, event] = float(at)
        return found

    async def started(self, who: str) -> None:
        await self._started[who].wait()


async def take_over(taker: PauseTokens, token: str, bodies: Bodies, *, until: float) -> bool:
    """Retry the pause as the taker until it is answered: whether the taker's body ran."""
    while time.monotonic() < until:
        try:
            async with taker.redeem(token, response=True, scope=SCOPE) as redemption:
                if redemption.replayed:
                    return False
                await redemption.lease.run(bodies.body("taker", 0.2))
                return True
        except (RedemptionInProgress, StoreUnavailable):
            await asyncio.sleep(0.05)
    pytest.fail("the taker never got an answer")


@contextlib.asynccontextmanager
async def holder_and_taker(
    engine: str, tmp_path: Path
) -> AsyncIterator[tuple[PauseTokens, PauseTokens, BlackHole]]:
    with server_of(engine, tmp_path / "server") as server, BlackHole(server.port) as hole:
        jwks = new_jwks()
        through = server.url.replace(f"127.0.0.1:{server.port}", f"127.0.0.1:{hole.port}")
        async with (
            service(through, options_of(engine, HOLDER_TIMEOUT_S), jwks) as holder,
            service(server.url, options_of(engine, TAKER_TIMEOUT_S), jwks) as taker,
        ):
            yield holder, taker, hole


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_holder_cut_off_mid_body_stops_before_the_taker_starts(
    engine: str, tmp_path: Path
) -> None:
    bodies = Bodies(tmp_path / "bodies")
    async with holder_and_taker(engine, tmp_path) as (holder, taker, hole):
        mine, theirs = await mint(holder), await mint(taker)

        async def hold() -> None:
            async with holder.redeem(mine, response=True, scope=SCOPE) as redemption:
                await redemption.lease.run(bodies.body("holder", LEASE_S * 10))

        holding = asyncio.create_task(hold())
        await bodies.started("holder")
        await asyncio.sleep(0.2)
        hole.cut.set()  # for good: the holder never reaches the server again
        taker_ran = await take_over(taker, theirs, bodies, until=time.monotonic() + 60)
        with pytest.raises(LeaseLost):
            await holding
    times = bodies.times()
    assert taker_ran
    gap = times["taker", "start"] - times["holder", "end"]
    print(f"{engine}: the taker started {gap:.3f} s after the holder's body ended")  # noqa: T201
    assert gap > 0, times


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_outage_shorter_than_the_lease_leaves_the_claim_with_its_holder(
    engine: str, tmp_path: Path
) -> None:
    bodies = Bodies(tmp_path / "bodies")
    async with holder_and_taker(engine, tmp_path) as (holder, taker, hole):
        mine, theirs = await mint(holder), await mint(taker)

        async def hold() -> None:
            async with holder.redeem(mine, response=True, scope=SCOPE) as redemption:
                await redemption.lease.run(bodies.body("holder", LEASE_S * 1.5))

        holding = asyncio.create_task(hold())
        await bodies.started("holder")
        # Cut off over the first renewal (a third of the lease in) for a third of the lease.
        await asyncio.sleep(LEASE_S / 6)
        hole.cut.set()
        await asyncio.sleep(LEASE_S / 3)
        hole.cut.clear()
        taker_ran = await take_over(taker, theirs, bodies, until=time.monotonic() + 60)
        await holding  # kept its claim, and committed
    assert not taker_ran
    assert set(bodies.times()) == {("holder", "start"), ("holder", "end")}


@pytest.mark.parametrize("engine", ["sqlite", *ENGINES, "redis-cluster"])
async def test_a_clock_ahead_by_leeway_and_half_the_lease_takes_no_live_claim(
    engine: str, tmp_path: Path
) -> None:
    """The bound docs/concepts.md states ("Clock skew"), exactly at the bound."""
    with contextlib.ExitStack() as stack:
        if engine == "sqlite":
            url = f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}"
        else:
            url = stack.enter_context(server_of(engine, tmp_path / "server")).url
        jwks, options = new_jwks(), options_of(engine, TAKER_TIMEOUT_S)
        skew = LEEWAY_S + LEASE_S / 2
        async with (
            service(url, options, jwks) as honest,
            service(url, options, jwks, offset=skew) as ahead,
        ):
            mine, theirs = await mint(honest), await mint(ahead)
            refused = 0
            async with honest.redeem(mine, response=True, scope=SCOPE):
                end = time.monotonic() + LEASE_S * 2  # renewed meanwhile
                while time.monotonic() < end:
                    with pytest.raises(RedemptionInProgress):
                        async with ahead.redeem(theirs, response=True, scope=SCOPE):
                            pass
                    refused += 1
                    await asyncio.sleep(0.05)
            async with ahead.redeem(theirs, response=True, scope=SCOPE) as redemption:
                assert redemption.replayed
    assert refused > LEASE_S * 2 / 0.1  # it kept trying all along
