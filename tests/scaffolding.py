"""What many test modules share: a clock the tests move by hand, the tenants, the
environment of a worker process that imports these, and a wait for driver threads."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import attrs

from pausetoken import Scope

#: The time the tests' clocks start at, unless a test says otherwise.
T0 = 1_800_000_000.0

ACME = Scope("acme")
GLOBEX = Scope("globex")
#: ACME with a namespace, for tests where the namespace must travel with the scope.
ACME_BILLING = Scope("acme", namespace="billing")


@attrs.define
class Clock:
    """Seconds since the epoch, moved by hand: ``PauseTokens(clock=Clock())``."""

    now: float = T0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def worker_env() -> dict[str, str]:
    """This process's environment, with the tests folder on the path of a worker script."""
    tests = str(Path(__file__).parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": tests if not path else os.pathsep.join([tests, path])}


async def threads_ended(before: set[threading.Thread], *, within: float = 5.0) -> None:
    """Wait until the threads started since ``before`` (``threading.enumerate()``) ended.

    aiosqlite stops the worker thread of a connection that failed to open without waiting
    for it; if the test's event loop closes first, the thread raises on the closed loop.
    """
    deadline = asyncio.get_running_loop().time() + within
    while any(thread.is_alive() for thread in set(threading.enumerate()) - before):
        assert asyncio.get_running_loop().time() < deadline, "a thread did not end"
        await asyncio.sleep(0.01)


class _Unhashable(type):  # noqa: PLW1641 - unhashable on purpose
    """A metaclass whose classes cannot be hashed (``__eq__`` without ``__hash__``)."""

    def __eq__(cls, other: object) -> bool:
        return cls is other


class Opaque(metaclass=_Unhashable):
    """A value whose class is no dict key: ABC checks and cattrs' dispatch raise TypeError on it."""
