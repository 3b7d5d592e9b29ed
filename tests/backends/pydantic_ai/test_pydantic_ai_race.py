"""Exactly once through the adapter: racing workers, and a takeover after an unconfirmed commit."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai_support import ACME, Ledger, build_agent

from pausetoken import PauseTokens
from pausetoken.exceptions import (
    CommitUnconfirmed,
    PauseTokenError,
    RedemptionInProgress,
    StaleToken,
    StoreUnavailable,
)
from pausetoken_pydantic_ai import mint_approvals, resume

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai.conversation_store import InMemoryConversationStore
    from pydantic_ai_support import Clock

    from pausetoken import TokenStore

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
