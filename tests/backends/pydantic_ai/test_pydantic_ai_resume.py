"""mint_approvals() and resume(): one token per approval, refusals before any tool runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai_support import Ledger, build_agent

from pausetoken import KeyRing
from pausetoken.exceptions import (
    InvalidResponse,
    InvalidToken,
    PayloadMismatch,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    TokenExpired,
)
from pausetoken_pydantic_ai import (
    ApprovedArgs,
    ConversationCheckpoints,
    args_digest,
    mint_approvals,
    resume,
)
from scaffolding import ACME, GLOBEX

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai.conversation_store import InMemoryConversationStore

    from pausetoken import InterruptEvent, PauseTokens
    from pausetoken_pydantic_ai import ToolApproval
    from scaffolding import Clock

APPROVE: dict[str, Any] = {"type": "approve"}


async def pause(
    agent: Agent[None, Any], conversations: InMemoryConversationStore, conversation_id: str = "c1"
) -> DeferredToolRequests:
    """Run the agent until it pauses for approval and save the conversation."""
    result = await agent.run(
        "refund order a", conversation=Conversation(conversation_id=conversation_id)
    )
    await conversations.save(result)
    assert isinstance(result.output, DeferredToolRequests)
    return result.output


async def paused_tokens(
    tokens: PauseTokens, agent: Agent[None, Any], conversations: InMemoryConversationStore
) -> list[InterruptEvent[ToolApproval]]:
    await pause(agent, conversations)
    return await mint_approvals(tokens, "c1", scope=ACME)


async def test_one_token_per_approval_binds_the_call_and_its_validated_args(
    make_tokens: Callable[..., PauseTokens], conversations: InMemoryConversationStore
) -> None:
    agent = build_agent(Ledger(), emails=True)
    tokens = make_tokens()
    requests = await pause(agent, conversations)
    events = await mint_approvals(tokens, "c1", scope=ACME)
    assert [e.payload.tool_name for e in events] == ["refund", "email"]
    assert [e.interrupt_id for e in events] == [c.tool_call_id for c in requests.approvals]
    assert events[0].payload.args == requests.validated_args[events[0].interrupt_id]
    claims = tokens.verify(events[0].token)
    assert claims.tool_call_id == events[0].interrupt_id
    assert claims.thread_id == "c1"
    assert events[0].token not in repr(events[0])


async def test_approve_runs_the_tool_once_and_a_retry_is_a_replay(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    resumed = await resume(tokens, agent, [(event.token, APPROVE)], scope=ACME)
    assert not resumed.replayed
    assert resumed.requests is None
    assert ledger.refunds == [("a", 0)]
    again = await resume(tokens, agent, [(event.token, APPROVE)], scope=ACME)
    assert again.replayed
    assert again.result is None
    assert ledger.refunds == [("a", 0)]
    record = await conversations.read_record("c1")
    assert record is not None
    assert record.deferred_tool_requests is None


async def test_a_replay_with_another_decision_is_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    await resume(tokens, agent, [(event.token, APPROVE)], scope=ACME)
    edit = {
        "type": "edit",
        "edited_action": {"name": "refund", "args": {"order": "b", "amount": 5}},
    }
    with pytest.raises(Exception) as refused:
        await resume(tokens, agent, [(event.token, edit)], scope=ACME)
    assert getattr(refused.value, "code", None) == "already_redeemed"
    assert ledger.refunds == [("a", 0)]


async def test_an_edit_runs_the_tool_with_the_edited_arguments(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    edit = {
        "type": "edit",
        "edited_action": {"name": "refund", "args": {"order": "b", "amount": "7"}},
    }
    await resume(tokens, agent, [(event.token, edit)], scope=ACME)
    assert ledger.refunds == [("b", 7)]


async def test_an_edit_that_does_not_fit_the_tool_schema_is_422_and_the_token_stays_good(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    edit = {
        "type": "edit",
        "edited_action": {"name": "refund", "args": {"order": "b", "amount": "many"}},
    }
    with pytest.raises(InvalidResponse) as refused:
        await resume(tokens, agent, [(event.token, edit)], scope=ACME)
    assert refused.value.http_status == 422
    assert refused.value.field == "$.edited_action.args.amount"
    assert "many" not in str(refused.value)
    assert ledger.refunds == []
    await resume(tokens, agent, [(event.token, APPROVE)], scope=ACME)
    assert ledger.refunds == [("a", 0)]


async def test_reject_sends_the_message_to_the_model_and_runs_nothing(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    resumed = await resume(
        tokens, agent, [(event.token, {"type": "reject", "message": "not today"})], scope=ACME
    )
    assert ledger.refunds == []
    assert resumed.result is not None
    assert "not today" in str(resumed.result.output)


async def test_a_token_from_another_tenant_is_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    with pytest.raises(ScopeMismatch):
        await resume(tokens, agent, [(event.token, APPROVE)], scope=GLOBEX)
    assert ledger.refunds == []


async def test_a_forged_or_altered_token_is_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    forger = make_tokens(keyring=KeyRing.generate())
    (forged,) = await mint_approvals(forger, "c1", scope=ACME)
    head, body, signature = event.token.split(".")
    altered = f"{head}.{body}.{signature[::-1]}"
    for token in (forged.token, altered):
        with pytest.raises(InvalidToken):
            await resume(tokens, agent, [(token, APPROVE)], scope=ACME)
    assert ledger.refunds == []


async def test_an_expired_token_is_refused(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
    clock: Clock,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    clock.now += tokens.ttl.total_seconds() + 3600
    with pytest.raises(TokenExpired):
        await resume(tokens, agent, [(event.token, APPROVE)], scope=ACME)
    assert ledger.refunds == []


async def test_arguments_tampered_in_the_stored_history_are_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    record = await conversations.read_record("c1")
    assert record is not None
    entry_id = record.head_id
    while entry_id is not None:  # rewrite the call in the stored response, as an intruder would
        entry = conversations._entries[entry_id]
        if isinstance(entry.message, ModelResponse):
            for part in entry.message.parts:
                if isinstance(part, ToolCallPart):
                    part.args = {"order": "a", "amount": 1_000_000}
            break
        entry_id = entry.parent_id
    with pytest.raises(PayloadMismatch):
        await resume(tokens, agent, [(event.token, APPROVE)], scope=ACME)
    assert ledger.refunds == []


async def test_a_second_worker_is_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens], conversations: InMemoryConversationStore
) -> None:
    first, second = make_tokens(), make_tokens()
    ran: list[str] = []
    refusals: list[str] = []
    agent: Agent[None, Any] = Agent(
        TestModel(call_tools=["refund"]), output_type=[str, DeferredToolRequests]
    )
    tokens: list[str] = []

    @agent.tool_plain(requires_approval=True)
    async def refund(order: str, amount: int) -> str:
        ran.append(order)
        # While the first worker's tool runs, a second worker answers the same approval.
        try:
            await resume(second, agent, [(tokens[0], APPROVE)], scope=ACME)
        except RedemptionInProgress as exc:
            refusals.append(exc.code)
        return f"refunded {amount}"

    (event,) = await paused_tokens(first, agent, conversations)
    tokens.append(event.token)
    await resume(first, agent, [(event.token, APPROVE)], scope=ACME)
    assert ran == ["a"]
    assert refusals == ["redemption_in_progress"]


async def test_a_takeover_after_the_run_moved_on_never_runs_the_tool_again(
    make_tokens: Callable[..., PauseTokens],
    conversations: InMemoryConversationStore,
    agent: Agent[None, Any],
    ledger: Ledger,
) -> None:
    tokens = make_tokens()
    (event,) = await paused_tokens(tokens, agent, conversations)
    # A first worker resumed the run and saved it, but its commit never reached the store:
    # the claim is released (as a lapsed lease would let another worker take it over).
    conversation = await conversations.load("c1")
    assert conversation is not None
    call_id = event.interrupt_id
    digest = args_digest(event.payload.args)
    result = await agent.run(
        conversation=conversation,
        deferred_tool_results=DeferredToolResults(
            approvals={call_id: ToolApproved()},
            metadata={call_id: {"pausetoken": {"tool_name": "refund", "args_digest": digest}}},
        ),
        capabilities=[ApprovedArgs()],
    )
    await conversations.save(result)
    assert ledger.refunds == [("a", 0)]
    with pytest.raises(StaleToken):
        await resume(make_tokens(), agent, [(event.token, APPROVE)], scope=ACME)
    assert ledger.refunds == [("a", 0)]


async def test_every_approval_of_the_pause_needs_an_answer(
    make_tokens: Callable[..., PauseTokens], conversations: InMemoryConversationStore
) -> None:
    ledger = Ledger()
    agent = build_agent(ledger, emails=True)
    tokens = make_tokens()
    await pause(agent, conversations)
    refund, email = await mint_approvals(tokens, "c1", scope=ACME)
    with pytest.raises(InvalidResponse):
        await resume(tokens, agent, [(refund.token, APPROVE)], scope=ACME)
    assert ledger.refunds == []
    await resume(
        tokens, agent, [(refund.token, APPROVE), (email.token, {"type": "reject"})], scope=ACME
    )
    assert ledger.refunds == [("a", 0)]
    assert ledger.emails == []


async def test_a_reader_over_another_store_is_not_accepted_by_resume(
    make_tokens: Callable[..., PauseTokens], conversations: InMemoryConversationStore
) -> None:
    reader = ConversationCheckpoints(conversations, namespace="x")
    assert reader.namespace == "pydantic-ai:x"
    with pytest.raises(Exception) as refused:
        ConversationCheckpoints.from_url("pydantic-ai://")
    assert getattr(refused.value, "code", None) == "configuration_error"
