"""Workers racing to apply the same approvals: every tool runs once, no approval is lost.

Each worker is what another process would hold: its own agent object, its own service, its
own connections to the token store and to the run states (SQLite file or PostgreSQL).
"""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from agents import Runner
from openai_agents_support import Refunds, refund_agent, run_id

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
from scaffolding import ACME, worker_env

WORKERS = 6
RUNS = 4
WORKER = Path(__file__).with_name("openai_agents_race_worker.py")


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


PROCESSES = 4
PROCESS_RUNS = 6


@pytest.mark.slow  # starts OS processes
async def test_racing_processes_run_each_approved_tool_exactly_once(
    engine: str, refunds: Refunds, tmp_path: Path
) -> None:
    # Each process has its own interpreter, agent, service and connections; they all start
    # at once (after every one said it is ready), half of them in the reverse token order.
    keys = KeyRing.generate()
    agent = refund_agent(refunds)
    store = open_store(engine)
    states = SQLRunStates(engine)
    service = PauseTokens(
        signer=JoseSigner(keys),
        store=store,
        checkpoints=AgentRunCheckpoints(agent, states),
    )
    try:
        tokens = []
        for _ in range(PROCESS_RUNS):
            result = await Runner.run(agent, "refund")
            (event,) = await mint_pending(service, run_id(), scope=ACME, result=result)
            tokens.append(event.token)
    finally:
        await states.aclose()
        await store.aclose()
    ledger = tmp_path / "refunds.jsonl"
    ledger.touch()
    orders = [tokens if i % 2 == 0 else tokens[::-1] for i in range(PROCESSES)]
    files = []
    for i, order in enumerate(orders):
        path = tmp_path / f"tokens-{i}.json"
        path.write_text(json.dumps(order), encoding="utf-8")
        files.append(path)
    jwks = json.dumps(keys.to_jwks())
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(WORKER),
            engine,
            jwks,
            str(path),
            str(ledger),
            env=worker_env(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for path in files
    ]
    for worker in workers:
        assert worker.stdout is not None
        line = await asyncio.wait_for(worker.stdout.readline(), timeout=60)
        assert line == b"ready\n", (line, await worker.stderr.read() if worker.stderr else b"")
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write(b"go\n")
        await worker.stdin.drain()
    reports = [await asyncio.wait_for(w.communicate(), timeout=120) for w in workers]
    assert [w.returncode for w in workers] == [0] * PROCESSES, [e[-2000:] for _, e in reports]
    outcomes: dict[str, list[str]] = {token: [] for token in tokens}
    for order, (out, _) in zip(orders, reports, strict=True):
        for token, outcome in zip(order, json.loads(out), strict=True):
            outcomes[token].append(outcome)
    for seen in outcomes.values():
        assert seen.count("resumed") == 1, seen
        assert set(seen) <= {"resumed", "replayed", "redemption_in_progress", "stale_token"}
    made = ledger.read_text(encoding="utf-8").splitlines()
    assert len(made) == PROCESS_RUNS
