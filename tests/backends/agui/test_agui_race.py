"""Exactly once through the adapter: racing workers, and a takeover after an unconfirmed commit."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from agui_support import APPROVE, RefundAgent, answer, interrupts, resume, start

from pausetoken import PauseTokens
from pausetoken.exceptions import (
    CommitUnconfirmed,
    PauseTokenError,
    RedemptionInProgress,
    StaleToken,
    StoreUnavailable,
)
from pausetoken_agui import METADATA_KEY, AgUi
from scaffolding import ACME

if TYPE_CHECKING:
    from collections.abc import Callable

    from pausetoken import TokenStore
    from scaffolding import Clock

WORKERS = 8
THREADS = 4


async def test_racing_workers_run_each_resumed_agent_exactly_once(
    make_agui: Callable[..., AgUi], thread: str
) -> None:
    agent = RefundAgent()
    minting = make_agui()
    entries = []
    for number in range(THREADS):
        finished = await minting.run(start(f"{thread}-{number}"), agent, scope=ACME)
        (interrupt,) = interrupts(finished)
        entries.append((f"{thread}-{number}", answer(interrupt, APPROVE)))
    workers = [make_agui() for _ in range(WORKERS)]
    outcomes: list[str] = []

    async def attempt(worker: AgUi, thread_id: str, entry: Any) -> None:
        try:
            finished = await worker.run(resume(thread_id, entry), agent, scope=ACME)
        except PauseTokenError as exc:
            outcomes.append(exc.code)
        else:
            replayed = (finished.metadata or {}).get(METADATA_KEY, {}).get("replayed")
            outcomes.append("replayed" if replayed else "resumed")

    await asyncio.gather(*(attempt(worker, t, entry) for worker in workers for t, entry in entries))
    assert len(agent.refunds) == THREADS
    assert len(agent.runs) == THREADS
    assert outcomes.count("resumed") == THREADS
    allowed = {"resumed", "replayed", RedemptionInProgress.default_code, StaleToken.default_code}
    assert set(outcomes) <= allowed


class CommitNeverArrives:
    """A token store whose commits never reach the engine; the clock passes the lease meanwhile."""

    def __init__(self, store: TokenStore, clock: Clock, lease_s: float) -> None:
        self._store = store
        self._clock = clock
        self._lease_s = lease_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit(self, *args: Any, **kwargs: Any) -> bool:
        del args, kwargs
        self._clock.now += self._lease_s * 3
        msg = "the store cannot be reached"
        raise StoreUnavailable(msg)


async def test_a_takeover_after_an_unconfirmed_commit_never_runs_the_agent_twice(
    make_agui: Callable[..., AgUi], store: TokenStore, clock: Clock, thread: str
) -> None:
    agent = RefundAgent()
    second = make_agui()
    lease = second.service.lease
    first = make_agui(store=CommitNeverArrives(store, clock, lease.total_seconds()), lease=lease)
    assert isinstance(first.service, PauseTokens)
    (interrupt,) = interrupts(await first.run(start(thread), agent, scope=ACME))
    entry = answer(interrupt, APPROVE)
    with pytest.raises(CommitUnconfirmed):
        await first.run(resume(thread, entry), agent, scope=ACME)
    assert agent.refunds == [("o-1", 500)]
    # The first worker's lease has ended: a second worker may claim the pause, and is
    # refused because the thread moved on (before the agent ran, and saved after it).
    with pytest.raises(StaleToken):
        await second.run(resume(thread, entry, run_id="run-3"), agent, scope=ACME)
    assert agent.refunds == [("o-1", 500)]
    assert agent.runs == ["run-2"]
