"""What many test modules share: a clock the tests move by hand, the tenants, and the
environment of a worker process that imports these."""

from __future__ import annotations

import os
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
