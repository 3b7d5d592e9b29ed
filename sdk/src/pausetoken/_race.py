"""Races: concurrent claims of the same pauses, started together so that none gets ahead.

`race_processes()` makes several OS processes claim the same pauses through one store
URL; `race_tasks()` and `warm_up()` do the same for tasks of one event loop (the
conformance kit and ``pausetoken store check`` use them). A claim that reads and then writes
passes a race whose first claimer writes before the others have even connected, so every
racer opens its connections first and waits at a barrier; only then do they all claim.
Processes leave a barrier up to milliseconds apart, longer than a claim takes, so
`race_processes()` also has them all start each round at one agreed instant, and races the
keys in several such rounds.

It lives outside [`pausetoken.testing`][pausetoken.testing] so that each spawned worker imports
only the core
(not pytest and hypothesis), which keeps a race's start-up short. ``race_processes`` is
public as [`pausetoken.testing.race_processes()`][pausetoken.testing.race_processes].
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import multiprocessing
import queue
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import attrs

from pausetoken import exceptions
from pausetoken._claims import new_jti
from pausetoken._registry import load_store, open_store, redact_url
from pausetoken._store_api import ClaimOutcome, ClaimRequest
from pausetoken.exceptions import ConfigurationError, PauseTokenError, StoreCheckFailed

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
    from multiprocessing.sharedctypes import Synchronized
    from multiprocessing.synchronize import Barrier

    from pausetoken._store_api import TokenStore

__all__ = ["race_processes", "race_tasks", "warm_up"]

T = TypeVar("T")

_SCOPE = hashlib.sha256(b"race scope").hexdigest()
_ANSWER = hashlib.sha256(b"race answer").hexdigest()
#: Concurrent ``status`` calls each worker makes before the barrier, to open its connections.
_WARM_CALLS = 8
#: How long after the last process reaches a round's barrier they all start claiming: more
#: than the spread of their wake-ups, so that none is still asleep at the start.
_START_AFTER = 0.02
#: The last stretch before the start that a worker spins through instead of sleeping.
_SPIN = 0.003


async def warm_up(store: TokenStore, connections: int) -> None:
    """Make ``store`` open up to ``connections`` connections before a race.

    It issues that many concurrent ``status`` calls on distinct random keys (rows nobody
    has), so a store with a connection pool has them open and idle when the race starts.

    Args:
        store: The store about to race.
        connections: How many calls to have in flight at once.
    """
    await asyncio.gather(*(store.status(new_jti()) for _ in range(connections)))


async def race_tasks(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run every call as its own task, all released together from an `asyncio.Barrier`.

    Args:
        calls: Zero-argument coroutine functions (typically one store call each).

    Returns:
        Their results, in the order of ``calls``.
    """
    if not calls:
        return []
    barrier = asyncio.Barrier(len(calls))

    async def one(call: Callable[[], Awaitable[T]]) -> T:
        await barrier.wait()
        return await call()

    return list(await asyncio.gather(*(one(call) for call in calls)))


@attrs.frozen
class _Job:
    url: str
    keys: list[str]
    options: dict[str, Any]
    #: Wall-clock time (``time.time()``) after which the worker gives up.
    deadline: float
    rounds: int
    #: Whether every other process consumes in one call instead of claiming.
    consume: bool = False


def race_processes(
    url: str,
    pause_keys: Iterable[str],
    *,
    processes: int = 8,
    options: Mapping[str, Any] | None = None,
    timeout: float = 120.0,
    rounds: int = 10,
    consume: bool = False,
) -> dict[str, int]:
    """Claim every pause from several processes at once; count the ``CLAIMED`` answers.

    Each process (started with ``spawn``) opens the store with
    [`open_store()`][pausetoken.open_store], calls its ``check`` and opens its connections (a
    few concurrent ``status`` calls). The keys are then raced in ``rounds`` rounds: every
    process waits at a barrier for the others, and when the last one arrives they all start
    at one instant a few milliseconds later (the first to wake spins until then), each
    claiming the round's keys concurrently with its own lease: every other process takes
    them in reverse order, so two processes that do not start at the same moment still
    meet on some key halfway through. A store
    that is correct across processes answers ``CLAIMED`` exactly once per key. The store must
    be shared between processes (a database file or server): a process-local store such as
    ``memory://`` is refused. With ``consume``, every other process consumes in one call
    (``store.consume``, a store with
    [`SupportsConsume`][pausetoken.plugins.SupportsConsume]) instead of claiming, so that
    consumes race claims: still one ``CLAIMED`` per key.

    Examples:
        ```python
        counts = race_processes(f"sqlite+aiosqlite:///{tmp_path}/t.db", keys)
        assert counts == dict.fromkeys(keys, 1)
        ```

    Args:
        url: The store URL every process opens (or ``module:attr``).
        pause_keys: The pause keys to claim.
        processes: How many processes race.
        options: Keyword options for the store's ``from_url`` (must be picklable).
        timeout: Seconds the whole race may take, starting the processes included.
        rounds: How many rounds the keys are split into (each started together): more
            rounds give a claim that reads and then writes more chances to be caught.
        consume: Let every other process consume instead of claim.

    Returns:
        For each key, how many processes got ``CLAIMED``.

    Raises:
        ConfigurationError: the store is process-local, or ``processes`` is below 2.
        PauseTokenError: a process failed or the race ran out of time (the store's own
            typed error when it raised one, otherwise code ``race_worker_failed``).
    """
    deadline = time.monotonic() + timeout
    keys = list(dict.fromkeys(pause_keys))
    if processes < 2:  # noqa: PLR2004 - a race needs two
        msg = "a race needs at least 2 processes"
        raise ConfigurationError(msg)
    if getattr(load_store(url), "process_local", False):
        msg = (
            f"race_processes needs a store shared between processes; {redact_url(url)} is "
            "local to each process (use a database file or a server)"
        )
        raise ConfigurationError(msg)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Value("d", 0.0)
    # The last process to arrive sets the instant every process starts the round at.
    barrier = ctx.Barrier(processes, action=functools.partial(_set_start, start))
    results: multiprocessing.Queue[tuple[Any, ...]] = ctx.Queue()
    job = _Job(
        url,
        keys,
        dict(options or {}),
        time.time() + timeout,
        max(1, min(rounds, len(keys))),
        consume=consume,
    )
    workers = [
        ctx.Process(
            target=_worker,
            args=(job, i % 2 == 1, barrier, start, results),
            name=f"pausetoken-race-{i}",
            daemon=True,
        )
        for i in range(processes)
    ]
    started: list[multiprocessing.process.BaseProcess] = []
    try:
        _start(workers, started, deadline, timeout)
        answers = _collect(results, started, deadline, timeout)
    except BaseException:
        # Release the workers waiting at the barrier instead of letting them sit it out.
        barrier.abort()
        raise
    finally:
        for worker in started:
            worker.join(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
            if worker.is_alive():
                worker.terminate()
                worker.join()
        results.close()
    return _tally(keys, answers)


def _start(
    workers: Sequence[multiprocessing.process.BaseProcess],
    started: list[multiprocessing.process.BaseProcess],
    deadline: float,
    timeout: float,
) -> None:
    # Starting a spawned interpreter takes a while: the race's deadline covers it too.
    for worker in workers:
        if time.monotonic() > deadline:
            _give_up(f"only {len(started)} of {len(workers)} processes started in {timeout} s")
        worker.start()
        started.append(worker)


def _tally(keys: list[str], answers: list[tuple[Any, ...]]) -> dict[str, int]:
    counts = dict.fromkeys(keys, 0)
    for answer in answers:
        if answer[0] == "error":
            _, name, code, detail = answer
            raise _rebuild(name, code, detail)
        for key in answer[1]:
            counts[key] += 1
    return counts


def _give_up(what: str) -> NoReturn:
    msg = f"a race process failed ({what})"
    raise StoreCheckFailed(msg, code=StoreCheckFailed.RACE_WORKER_FAILED)


def _collect(
    results: multiprocessing.Queue[tuple[Any, ...]],
    workers: Sequence[multiprocessing.process.BaseProcess],
    deadline: float,
    timeout: float,
) -> list[tuple[Any, ...]]:
    answers: list[tuple[Any, ...]] = []
    while len(answers) < len(workers):
        try:
            answers.append(results.get(timeout=max(0.01, min(0.5, deadline - time.monotonic()))))
        except queue.Empty:
            dead = [w for w in workers if w.exitcode not in (None, 0)]
            if dead:
                _give_up(f"exit code {dead[0].exitcode}")
            if time.monotonic() > deadline:
                _give_up(f"no answer in {timeout} s")
    return answers


def _rebuild(name: str, code: str, detail: str) -> PauseTokenError:
    cls = getattr(exceptions, name, None)
    if isinstance(cls, type) and issubclass(cls, PauseTokenError):
        return cls(detail, code=code)
    return StoreCheckFailed(
        f"a race process raised {name}", code=StoreCheckFailed.RACE_WORKER_FAILED
    )


def _set_start(start: Synchronized[float]) -> None:
    start.value = time.time() + _START_AFTER


def _worker(
    job: _Job,
    backwards: bool,  # noqa: FBT001 - a process target's positional argument
    barrier: Barrier,
    start: Synchronized[float],
    results: multiprocessing.Queue[tuple[Any, ...]],
) -> None:
    try:
        claimed = asyncio.run(_claim_all(job, barrier, start, backwards=backwards))
    except PauseTokenError as exc:
        results.put(("error", type(exc).__name__, exc.code, exc.detail))
    except (Exception, threading.BrokenBarrierError) as exc:  # noqa: BLE001 - sent to the parent
        # Only the type crosses: a message could carry a URL or other configuration.
        results.put(("error", type(exc).__name__, "race_worker_failed", ""))
    else:
        results.put(("ok", claimed))


async def _claim_all(
    job: _Job, barrier: Barrier, start: Synchronized[float], *, backwards: bool
) -> list[str]:
    store = open_store(job.url, **job.options)
    claimed: list[str] = []
    try:
        await store.check()
        await warm_up(store, min(len(job.keys), _WARM_CALLS))
        for round_keys in (job.keys[i :: job.rounds] for i in range(job.rounds)):
            # Wait in a thread so the store's own loop keeps running while the others come.
            await asyncio.to_thread(barrier.wait, max(0.0, job.deadline - time.time()))
            await _until(start.value)
            keys = round_keys[::-1] if backwards else round_keys
            claimed += await _claim_round(store, keys, consume=job.consume and backwards)
    finally:
        await store.aclose()
    return claimed


async def _until(moment: float) -> None:
    """Return at ``moment`` (``time.time()``): sleep most of the way, spin the rest."""
    await asyncio.sleep(max(0.0, moment - time.time() - _SPIN))
    while time.time() < moment:
        pass


async def _claim_round(store: TokenStore, keys: Sequence[str], *, consume: bool) -> list[str]:
    now = datetime.now(UTC)
    requests = [
        ClaimRequest(
            pause_key=key,
            scope_hash=_SCOPE,
            name="race",
            response_hash=_ANSWER,
            expires_at=now + timedelta(hours=1),
            lease_id=new_jti(),
            lease_until=now + timedelta(minutes=5),
            now=now,
        )
        for key in keys
    ]
    take = store.consume if consume else store.claim  # type: ignore[attr-defined]
    outcomes = await asyncio.gather(*(take(r) for r in requests))
    return [
        r.pause_key
        for r, o in zip(requests, outcomes, strict=True)
        if o.outcome is ClaimOutcome.CLAIMED
    ]
