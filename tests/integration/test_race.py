"""Exactly once at scale: many processes redeem the same tokens; every body runs once.

On each engine, ``PAUSETOKEN_TEST_RACE_PROCESSES`` processes (default 8) each mint a token
for each of ``PAUSETOKEN_TEST_RACE_TOKENS`` pauses (default 300; the full run is 5,000, see
docs/operations.md) and redeem all of them through ``PauseTokens.redeem``, in their own
order, four at a time. Every body appends its pause's number to a file opened with
``O_APPEND``; that file says how many bodies ran. The test prints tokens, bodies run,
double runs and lost tokens, and fails unless both of the last are 0.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from engines import ENGINES, store_for
from redeemers import Plan, crowd, finish, new_jwks, tally

import servers

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

TOKENS = int(servers.variable("RACE_TOKENS") or 300)
PROCESSES = int(servers.variable("RACE_PROCESSES") or 8)
#: Seconds the whole race of one engine may take (generous: two cores, eight processes).
SECONDS = 120 + TOKENS * 0.5


@pytest.mark.parametrize("engine", ENGINES)
def test_every_token_runs_its_body_exactly_once(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with store_for(engine, tmp_path) as (url, options):
        plan = Plan(
            url=url,
            options=options,
            jwks=new_jwks(),
            pauses=TOKENS,
            bodies=str(tmp_path / "bodies"),
            reports=str(tmp_path / "reports"),
            lease_s=30,
            deadline=time.time() + SECONDS,
        )
        started = time.monotonic()
        with crowd(plan, PROCESSES) as workers:
            finish(workers, plan)
        result = tally(plan)
    with capsys.disabled():
        print(f"\n{result.summary(engine, PROCESSES)} in {time.monotonic() - started:.1f} s")  # noqa: T201 - the race reports its numbers
    assert result.double_runs == []
    assert result.lost == []
    assert result.unfinished == 0
    assert result.unexpected_errors() == {}
