"""``race_processes``: several OS processes claim the same tokens through one store URL.

It lives outside :mod:`pausetoken.testing` so that each spawned worker imports only the core
(not pytest and hypothesis), which keeps a race's start-up short. It is public as
:func:`pausetoken.testing.race_processes`.
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import queue
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs

from pausetoken import exceptions
from pausetoken._claims import new_jti
from pausetoken._registry import load_store, open_store, redact_url
from pausetoken._store import ClaimOutcome, ClaimRequest
from pausetoken.exceptions import ConfigurationError, PauseTokenError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from multiprocessing.synchronize import Barrier

__all__ = ["race_processes"]

_SCOPE = hashlib.sha256(b"race scope").hexdigest()
_ANSWER = hashlib.sha256(b"race answer").hexdigest()


@attrs.frozen
class _Job:
    url: str
    jtis: list[str]
    options: dict[str, Any]
    timeout: float


def race_processes(
    url: str,
    jtis: Iterable[str],
    *,
    processes: int = 8,
    options: Mapping[str, Any] | None = None,
    timeout: float = 120.0,
) -> dict[str, int]:
    """Claim every token from several processes at once; count the ``CLAIMED`` answers.

    Each process (started with ``spawn``) opens the store with
    :func:`~pausetoken.open_store`, waits at a barrier for the others, then claims every
    ``jti`` concurrently with its own lease. A store that is correct across processes
    answers ``CLAIMED`` exactly once per token. The store must be shared between processes
    (a database file or server): a process-local store such as ``memory://`` is refused.

    Example:
        .. code-block:: python

            counts = race_processes(f"sqlite+aiosqlite:///{tmp_path}/t.db", jtis)
            assert counts == dict.fromkeys(jtis, 1)

    Args:
        url: The store URL every process opens (or ``module:attr``).
        jtis: The token ids to claim.
        processes: How many processes race.
        options: Keyword options for the store's ``from_url`` (must be picklable).
        timeout: Seconds to wait for all processes.

    Returns:
        For each ``jti``, how many processes got ``CLAIMED``.

    Raises:
        ConfigurationError: the store is process-local, or ``processes`` is below 2.
        PauseTokenError: a process failed (the store's own typed error when it raised one,
            otherwise code ``race_worker_failed``).
    """
    tokens = list(dict.fromkeys(jtis))
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
    barrier = ctx.Barrier(processes)
    results: multiprocessing.Queue[tuple[Any, ...]] = ctx.Queue()
    workers = [
        ctx.Process(
            target=_worker,
            args=(_Job(url, tokens, dict(options or {}), timeout), barrier, results),
            name=f"pausetoken-race-{i}",
            daemon=True,
        )
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    try:
        answers = _collect(results, workers, timeout)
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
                worker.join()
        results.close()
    counts = dict.fromkeys(tokens, 0)
    for answer in answers:
        if answer[0] == "error":
            _, name, code, detail = answer
            raise _rebuild(name, code, detail)
        for jti in answer[1]:
            counts[jti] += 1
    return counts


def _collect(
    results: multiprocessing.Queue[tuple[Any, ...]],
    workers: Sequence[multiprocessing.process.BaseProcess],
    timeout: float,
) -> list[tuple[Any, ...]]:
    answers: list[tuple[Any, ...]] = []
    deadline = time.monotonic() + timeout
    while len(answers) < len(workers):
        try:
            answers.append(results.get(timeout=0.5))
        except queue.Empty:
            dead = [w for w in workers if w.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                what = f"exit code {dead[0].exitcode}" if dead else f"no answer in {timeout} s"
                msg = f"a race process failed ({what})"
                raise PauseTokenError(msg, code="race_worker_failed") from None
    return answers


def _rebuild(name: str, code: str, detail: str) -> PauseTokenError:
    cls = getattr(exceptions, name, None)
    if isinstance(cls, type) and issubclass(cls, PauseTokenError):
        return cls(detail, code=code)
    return PauseTokenError(f"a race process raised {name}", code="race_worker_failed")


def _worker(job: _Job, barrier: Barrier, results: multiprocessing.Queue[tuple[Any, ...]]) -> None:
    try:
        claimed = asyncio.run(_claim_all(job, barrier))
    except PauseTokenError as exc:
        results.put(("error", type(exc).__name__, exc.code, exc.detail))
    except (Exception, threading.BrokenBarrierError) as exc:  # noqa: BLE001 - sent to the parent
        # Only the type crosses: a message could carry a URL or other configuration.
        results.put(("error", type(exc).__name__, "race_worker_failed", ""))
    else:
        results.put(("ok", claimed))


async def _claim_all(job: _Job, barrier: Barrier) -> list[str]:
    store = open_store(job.url, **job.options)
    try:
        # Wait in a thread so the store's own loop keeps running while the others start.
        await asyncio.to_thread(barrier.wait, job.timeout)
        now = datetime.now(UTC).replace(microsecond=0)
        requests = [
            ClaimRequest(
                jti=jti,
                scope_hash=_SCOPE,
                name="race",
                response_hash=_ANSWER,
                expires_at=now + timedelta(hours=1),
                lease_id=new_jti(),
                lease_until=now + timedelta(minutes=5),
                now=now,
            )
            for jti in job.jtis
        ]
        outcomes = await asyncio.gather(*(store.claim(r) for r in requests))
    finally:
        await store.aclose()
    return [
        r.jti for r, o in zip(requests, outcomes, strict=True) if o.outcome is ClaimOutcome.CLAIMED
    ]
