"""Exactly once through the adapter: racing workers, and a takeover after an unconfirmed commit."""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai_support import Ledger, build_agent
from sqlite_conversations import SQLiteConversationStore

from pausetoken import JoseSigner, KeyRing, PauseTokens
from pausetoken.exceptions import (
    CommitUnconfirmed,
    PauseTokenError,
    RedemptionInProgress,
    StaleToken,
    StoreUnavailable,
)
from pausetoken_pydantic_ai import ConversationCheckpoints, mint_approvals, register, resume
from scaffolding import ACME, worker_env

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai.conversation_store import InMemoryConversationStore

    from pausetoken import TokenStore
    from scaffolding import Clock

APPROVE: dict[str, Any] = {"type": "approve"}
WORKERS = 8
CONVERSATIONS = 4


async def test_racing_workers_run_each_approved_tool_exactly_once(
    make_tokens: Callable[..., PauseTokens], conversations: InMemoryConversationStore
) -> None:
    ledger = Ledger()
    agent = build_agent(ledger)
    minting = make_tokens()
    tokens: list[str] = []
    for number in range(CONVERSATIONS):
        result = await agent.run("refund", conversation=Conversation(conversation_id=f"c{number}"))
        await conversations.save(result)
        (event,) = await mint_approvals(minting, f"c{number}", scope=ACME)
        tokens.append(event.token)
    workers = [make_tokens() for _ in range(WORKERS)]
    outcomes: list[str] = []

    async def answer(worker: PauseTokens, token: str) -> None:
        try:
            resumed = await resume(worker, agent, [(token, APPROVE)], scope=ACME)
        except PauseTokenError as exc:
            outcomes.append(exc.code)
        else:
            outcomes.append("replayed" if resumed.replayed else "resumed")

    await asyncio.gather(*(answer(worker, token) for worker in workers for token in tokens))
    assert len(ledger.refunds) == CONVERSATIONS
    assert outcomes.count("resumed") == CONVERSATIONS
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


async def test_a_takeover_after_an_unconfirmed_commit_never_runs_the_tool_twice(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    store: TokenStore,
    clock: Clock,
) -> None:
    ledger = Ledger()
    agent = build_agent(ledger)
    second = make_tokens()
    first = PauseTokens(
        signer=second.signer,
        store=CommitNeverArrives(store, clock, second.lease.total_seconds()),
        checkpoints=second.checkpoints,
        clock=clock,
        lease=second.lease,
    )
    first.register(second.interrupt("pydantic_ai.tool_approval"))
    result = await agent.run("refund", conversation=Conversation(conversation_id="c1"))
    await conversations.save(result)
    (event,) = await mint_approvals(first, "c1", scope=ACME)
    with pytest.raises(CommitUnconfirmed):
        await resume(first, agent, [(event.token, APPROVE)], scope=ACME)
    assert ledger.refunds == [("a", 0)]
    # The first worker's lease has ended: a second worker may claim the pause, and is
    # refused because the run moved on (its result was saved before the commit).
    with pytest.raises(StaleToken):
        await resume(second, agent, [(event.token, APPROVE)], scope=ACME)
    assert ledger.refunds == [("a", 0)]


PROCESSES = 4
PROCESS_CONVERSATIONS = 6
WORKER = Path(__file__).with_name("pydantic_ai_race_worker.py")


@pytest.mark.slow  # starts OS processes
async def test_racing_processes_run_each_approved_tool_exactly_once(
    store: TokenStore, store_url: str, tmp_path: Path
) -> None:
    # Each process has its own interpreter, agent, service and connections; the
    # conversations are in one SQLite file. They all start at once (after every one said
    # it is ready), half of them in the reverse token order.
    keys, namespace = KeyRing.generate(), f"refunds-{secrets.token_hex(4)}"
    conversations = SQLiteConversationStore(tmp_path / "conversations.db")
    minting = PauseTokens(
        signer=JoseSigner(keys),
        store=store,
        checkpoints=ConversationCheckpoints(conversations, namespace=namespace),
    )
    register(minting)
    agent = build_agent(Ledger())
    tokens = []
    for number in range(PROCESS_CONVERSATIONS):
        conversation = Conversation(conversation_id=f"c{number}")
        await conversations.save(await agent.run("refund", conversation=conversation))
        (event,) = await mint_approvals(minting, f"c{number}", scope=ACME)
        tokens.append(event.token)
    ledger = tmp_path / "refunds.jsonl"
    ledger.touch()
    orders = [tokens if i % 2 == 0 else tokens[::-1] for i in range(PROCESSES)]
    workers = []
    for i, order in enumerate(orders):
        path = tmp_path / f"tokens-{i}.json"
        path.write_text(json.dumps(order), encoding="utf-8")
        argv = [store_url, str(tmp_path / "conversations.db"), namespace]
        argv += [json.dumps(keys.to_jwks()), str(path), str(ledger)]
        workers.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(WORKER),
                *argv,
                env=worker_env(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        )
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
    assert len(ledger.read_text(encoding="utf-8").splitlines()) == PROCESS_CONVERSATIONS
