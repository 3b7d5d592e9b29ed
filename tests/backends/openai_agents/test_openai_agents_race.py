"""Workers racing to apply the same approvals: every tool runs once, no approval is lost.

Each worker is what another process would hold: its own agent object, its own service, its
own connections to the token store and to the run states (SQLite file or PostgreSQL).
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

from agents import Runner
from openai_agents_support import ACME, Refunds, refund_agent, run_id

from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken.exceptions import RedemptionInProgress, StaleToken
from pausetoken_openai_agents import (
    AgentRunCheckpoints,
    Decision,
    Resumed,
    SQLRunStates,
    mint_pending,
    resume,
)

WORKERS = 6
RUNS = 4


async def _worker(
    engine: str, keys: KeyRing, refunds: Refunds, stack: AsyncExitStack
) -> PauseTokens:
    store = open_store(engine)
    stack.push_async_callback(store.aclose)
    states = SQLRunStates(engine)
    stack.push_async_callback(states.aclose)
    checkpoints = AgentRunCheckpoints(refund_agent(refunds), states)
    return PauseTokens(signer=JoseSigner(keys), store=store, checkpoints=checkpoints)


async def test_racing_workers_run_each_approved_tool_exactly_once(
    engine: str, refunds: Refunds
) -> None:
    keys = KeyRing.generate()
    async with AsyncExitStack() as stack:
        workers = [await _worker(engine, keys, refunds, stack) for _ in range(WORKERS)]
        agent = refund_agent(refunds)
        tokens: list[str] = []
        for _ in range(RUNS):
            result = await Runner.run(agent, "refund")
            (event,) = await mint_pending(workers[0], run_id(), scope=ACME, result=result)
            tokens.append(event.token)
        attempts = [
            resume(worker, token, Decision(approve=True), scope=ACME)
            for token in tokens
            for worker in workers
        ]
        outcomes: list[Any] = await asyncio.gather(*attempts, return_exceptions=True)
        fresh = [o for o in outcomes if isinstance(o, Resumed) and not o.replayed]
        refused = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(fresh) == RUNS
        assert len(refunds.done) == RUNS
        assert all(isinstance(o, RedemptionInProgress | StaleToken) for o in refused), refused
        # Every approval was committed: any worker now answers a retry as a replay.
        for token in tokens:
            again = await resume(workers[-1], token, Decision(approve=True), scope=ACME)
            assert again.replayed
        assert len(refunds.done) == RUNS
