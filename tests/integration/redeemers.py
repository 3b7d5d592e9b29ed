"""Worker processes that redeem the same pauses through the whole service, and their tally.

Each worker (a ``spawn``-ed process) opens the store from its URL, builds a `PauseTokens`
with the shared key ring, mints its own token for every pause of the plan (the pause key is
the same in every worker: same thread, checkpoint and interrupt ids, so all tokens meet one
row), waits at a barrier for the others, then redeems every pause with
``async with tokens.redeem(...)`` until each one was either run or answered as a replay.

The body of a redemption appends the pause's number to one file opened with ``O_APPEND``:
that file, not the store's own view, is what counts the bodies that ran. A worker retries a
pause after errors the store may recover from (`StoreUnavailable`, `RedemptionInProgress`,
`CommitUnconfirmed`) and records every error by class and code.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import multiprocessing
import os
import random
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from multiprocessing.synchronize import Barrier

    from pausetoken import PauseTokens

#: Errors after which a worker tries the pause again later.
RETRIED = frozenset({"StoreUnavailable", "RedemptionInProgress"})
#: Errors a fault may show callers (besides these, any error is a finding). After
#: `CommitUnconfirmed` the body ran: the worker does not answer that pause again (as
#: docs/operations.md asks), and records it in `unconfirmed_file()`.
EXPECTED = RETRIED | {"CommitUnconfirmed"}


@attrs.frozen
class Plan:
    """What every worker of a crowd does.

    Attributes:
        url: The store URL each worker opens.
        options: Keyword options for the store.
        jwks: The shared key ring, as JWKS JSON.
        pauses: How many pauses every worker redeems (numbered from 0).
        bodies: The file the bodies append to.
        reports: The directory each worker writes its report to.
        lease_s: The service's lease, in seconds.
        leeway_s: The service's clock-skew allowance, in seconds.
        lanes: Concurrent redemptions per worker.
        deadline: Wall-clock time (``time.time()``) after which a worker gives up.
        clock_offset_s: Added to this worker's clock (a skewed worker).
        body_s: Seconds each body sleeps (so that faults meet claims in flight).
        hang_at: The first body of this pause number never ends (the test kills its worker,
            whose pid `hung_marker()` holds); later claimers run it normally.
    """

    url: str
    options: dict[str, Any]
    jwks: str
    pauses: int
    bodies: str
    reports: str
    lease_s: float = 5.0
    leeway_s: float = 1.0
    lanes: int = 4
    deadline: float = 0.0
    clock_offset_s: float = 0.0
    body_s: float = 0.0
    hang_at: int | None = None


@attrs.frozen
class Tally:
    """What a crowd did, from the bodies' file and the workers' reports."""

    pauses: int
    runs: collections.Counter[int]
    errors: collections.Counter[str]
    unfinished: int

    @property
    def bodies_run(self) -> int:
        """Bodies that ran, all pauses together."""
        return sum(self.runs.values())

    unconfirmed: frozenset[int] = frozenset()

    @property
    def double_runs(self) -> list[int]:
        """Pauses whose body ran more than once without a caller being told it may have."""
        return sorted(
            n for n, count in self.runs.items() if count > 1 and n not in self.unconfirmed
        )

    @property
    def announced_double_runs(self) -> list[int]:
        """Pauses that ran again after a caller got `CommitUnconfirmed` ("may have resumed")."""
        return sorted(n for n, count in self.runs.items() if count > 1 and n in self.unconfirmed)

    @property
    def lost(self) -> list[int]:
        """Pauses whose body never ran."""
        return [n for n in range(self.pauses) if self.runs[n] == 0]

    def unexpected_errors(self) -> dict[str, int]:
        """Errors other than those a fault may show callers."""
        return {k: v for k, v in self.errors.items() if k.split(":")[0] not in EXPECTED}

    def summary(self, engine: str, processes: int) -> str:
        """One line for the log: tokens, bodies run, double runs and lost tokens."""
        return (
            f"{engine}: {processes} processes x {self.pauses} tokens: "
            f"bodies run {self.bodies_run}, double runs {len(self.double_runs)}, "
            f"lost tokens {len(self.lost)}, runs again after CommitUnconfirmed "
            f"{len(self.announced_double_runs)}, errors {dict(self.errors) or 'none'}"
        )


def new_jwks() -> str:
    """A fresh HS256 key ring as JWKS JSON, for every worker of a crowd."""
    from pausetoken import KeyRing

    return json.dumps(KeyRing.generate().to_jwks())


@contextlib.contextmanager
def crowd(plan: Plan, processes: int) -> Iterator[list[multiprocessing.process.BaseProcess]]:
    """Start ``processes`` workers on ``plan``; kill whatever is left at the end.

    Yields the processes (a test may SIGKILL one). Wait for them with `finish()`.
    """
    Path(plan.reports).mkdir(parents=True, exist_ok=True)
    Path(plan.bodies).touch()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes)
    workers = [
        ctx.Process(target=_worker, args=(plan, barrier, i), name=f"redeemer-{i}", daemon=True)
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    try:
        yield workers
    finally:
        barrier.abort()
        for worker in workers:
            if worker.is_alive():
                worker.kill()
            worker.join(10)


def finish(workers: list[multiprocessing.process.BaseProcess], plan: Plan) -> None:
    """Wait for the workers until the plan's deadline (plus a grace period)."""
    for worker in workers:
        worker.join(max(0.1, plan.deadline - time.time() + 10))


def started(plan: Plan, processes: int, *, seconds: float = 120.0) -> None:
    """Wait until ``processes`` workers minted their tokens and passed the barrier."""
    end = time.monotonic() + seconds
    marker = Path(plan.reports)
    while len(list(marker.glob("*.started"))) < processes:
        if time.monotonic() > end:
            msg = f"the workers did not start within {seconds:g} s"
            raise TimeoutError(msg)
        time.sleep(0.05)


def tally(plan: Plan) -> Tally:
    """Count the bodies run (from the bodies' file) and the workers' errors."""
    runs: collections.Counter[int] = collections.Counter(
        int(line) for line in Path(plan.bodies).read_text().split()
    )
    errors: collections.Counter[str] = collections.Counter()
    unfinished = 0
    for report in Path(plan.reports).glob("*.json"):
        data = json.loads(report.read_text())
        errors.update(data["errors"])
        unfinished += data["unfinished"]
    unconfirmed_path = unconfirmed_file(plan)
    unconfirmed = (
        frozenset(int(n) for n in unconfirmed_path.read_text().split())
        if unconfirmed_path.exists()
        else frozenset()
    )
    return Tally(plan.pauses, runs, errors, unfinished, unconfirmed)


def unconfirmed_file(plan: Plan) -> Path:
    """The pauses whose redemption ended in `CommitUnconfirmed`, one number a line."""
    return Path(plan.bodies + ".unconfirmed")


def _worker(plan: Plan, barrier: Barrier, index: int) -> None:
    errors: collections.Counter[str] = collections.Counter()
    unfinished = asyncio.run(_redeem_all(plan, barrier, index, errors))
    report = Path(plan.reports) / f"{index}.json"
    report.write_text(json.dumps({"errors": errors, "unfinished": unfinished}))


async def _redeem_all(
    plan: Plan, barrier: Barrier, index: int, errors: collections.Counter[str]
) -> int:
    from pausetoken import (
        Interrupt,
        JoseSigner,
        KeyRing,
        MemoryCheckpoints,
        PauseTokens,
        Scope,
        open_store,
    )

    store = open_store(plan.url, **plan.options)
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.from_jwks(plan.jwks)),
        store=store,
        checkpoints=MemoryCheckpoints(),
        lease=timedelta(seconds=plan.lease_s),
        leeway=timedelta(seconds=plan.leeway_s),
        clock=lambda: time.time() + plan.clock_offset_s,
    )
    tokens.register(Interrupt("approve", payload=dict[str, int], response=bool))
    scope = Scope("race")
    minted = [await _mint(tokens, n, scope, plan.deadline) for n in range(plan.pauses)]
    await asyncio.to_thread(barrier.wait, max(1.0, plan.deadline - time.time()))
    (Path(plan.reports) / f"{index}.started").touch()
    todo = list(range(plan.pauses))
    random.Random(index).shuffle(todo)  # noqa: S311 - an order, not a secret
    bodies = os.open(plan.bodies, os.O_WRONLY | os.O_APPEND)
    try:
        while todo and time.time() < plan.deadline:
            queue = collections.deque(todo)
            todo = []

            async def lane(queue: collections.deque[int], todo: list[int]) -> None:
                while queue and time.time() < plan.deadline:
                    n = queue.popleft()
                    if not await _redeem_one(tokens, minted[n], n, plan, bodies, errors, scope):
                        todo.append(n)

            await asyncio.gather(*(lane(queue, todo) for _ in range(plan.lanes)))
            todo.extend(queue)
            if todo:
                await asyncio.sleep(0.05)
    finally:
        os.close(bodies)
        await store.aclose()
    return len(todo)


async def _mint(tokens: PauseTokens, n: int, scope: Any, deadline: float) -> str:
    """Mint this worker's token for pause ``n``, retrying while the store is slow to answer."""
    from pausetoken.exceptions import StoreUnavailable

    while True:
        try:
            event = await tokens.mint(
                "approve",
                {"n": n},
                scope=scope,
                thread_id=f"thread-{n}",
                run_id="run",
                interrupt_id="interrupt",
                checkpoint_id="checkpoint",
            )
        except StoreUnavailable:
            if time.time() > deadline:
                raise
            await asyncio.sleep(0.1)
        else:
            return event.token


async def _redeem_one(  # noqa: PLR0917 - one redemption's context
    tokens: PauseTokens,
    token: str,
    n: int,
    plan: Plan,
    bodies: int,
    errors: collections.Counter[str],
    scope: Any,
) -> bool:
    """Redeem pause ``n`` once; whether it is done (its body ran, here or elsewhere)."""
    from pausetoken.exceptions import PauseTokenError

    try:
        async with tokens.redeem(token, response=True, scope=scope) as redemption:
            if not redemption.replayed:
                if n == plan.hang_at and _first_to_hang(plan):
                    await asyncio.sleep(3600)  # until the test kills this worker
                if plan.body_s:
                    await asyncio.sleep(plan.body_s)
                os.write(bodies, f"{n}\n".encode())
    except PauseTokenError as exc:
        errors[f"{type(exc).__name__}:{exc.code}"] += 1
        if type(exc).__name__ == "CommitUnconfirmed":
            with unconfirmed_file(plan).open("a") as out:
                out.write(f"{n}\n")
        # Any other error is a finding: recorded, and the pause left (the tally shows it).
        return type(exc).__name__ not in RETRIED
    return True


def _first_to_hang(plan: Plan) -> bool:
    """Whether this worker is the one that hangs (the file it creates says so, and where)."""
    try:
        hung = os.open(hung_marker(plan), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return False
    os.write(hung, str(os.getpid()).encode())
    os.close(hung)
    return True


def hung_marker(plan: Plan) -> Path:
    """The file naming the process whose body hangs (it exists once that body started)."""
    return Path(plan.reports) / "hung.pid"
