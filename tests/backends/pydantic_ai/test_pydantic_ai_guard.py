"""ApprovedArgs: executed arguments always equal approved ones, checked before the tool runs."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.conversation import Conversation
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai_support import Ledger

from pausetoken.exceptions import PayloadMismatch
from pausetoken_pydantic_ai import MARKER, ApprovedArgs, args_digest, mint_approvals, resume
from scaffolding import ACME

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from pydantic_ai import RunContext
    from pydantic_ai.conversation_store import InMemoryConversationStore
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import ToolDefinition

    from pausetoken import PauseTokens


@dataclass
class Stamp(AbstractCapability[Any]):
    """A validation hook whose output is not determined by its input: it stamps a counter."""

    counter: Iterator[int] = field(default_factory=itertools.count)

    async def after_tool_validate(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
    ) -> dict[str, Any]:
        return {**args, "amount": next(self.counter)}


def refund_agent(ledger: Ledger, *capabilities: AbstractCapability[Any]) -> Agent[None, Any]:
    agent: Agent[None, Any] = Agent(
        TestModel(call_tools=["refund"]),
        output_type=[str, DeferredToolRequests],
        capabilities=list(capabilities),
    )

    @agent.tool_plain(requires_approval=True)
    def refund(order: str, amount: int) -> str:
        ledger.refunds.append((order, amount))
        return "refunded"

    return agent


async def test_arguments_a_hook_rewrites_on_resume_are_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens], conversations: InMemoryConversationStore
) -> None:
    ledger = Ledger()
    agent = refund_agent(ledger, Stamp())
    tokens = make_tokens()
    result = await agent.run("refund", conversation=Conversation(conversation_id="c1"))
    await conversations.save(result)
    (event,) = await mint_approvals(tokens, "c1", scope=ACME)
    assert event.payload.args == {"order": "a", "amount": 0}
    with pytest.raises(PayloadMismatch):
        await resume(tokens, agent, [(event.token, {"type": "approve"})], scope=ACME)
    assert ledger.refunds == []


async def test_an_approval_built_by_hand_is_refused_by_the_agent_guard(
    conversations: InMemoryConversationStore,
) -> None:
    ledger = Ledger()
    agent = refund_agent(ledger, ApprovedArgs())
    result = await agent.run("refund", conversation=Conversation(conversation_id="c1"))
    assert isinstance(result.output, DeferredToolRequests)
    call = result.output.approvals[0]
    with pytest.raises(PayloadMismatch):
        await agent.run(
            conversation=result.conversation,
            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
        )
    assert ledger.refunds == []


async def test_the_agent_guard_lets_through_the_approval_resume_records() -> None:
    ledger = Ledger()
    agent = refund_agent(ledger, ApprovedArgs())
    result = await agent.run("refund", conversation=Conversation(conversation_id="c1"))
    assert isinstance(result.output, DeferredToolRequests)
    call = result.output.approvals[0]
    digest = args_digest(result.output.validated_args[call.tool_call_id])
    marker = {MARKER: {"tool_name": "refund", "args_digest": digest}}
    await agent.run(
        conversation=result.conversation,
        deferred_tool_results=DeferredToolResults(
            approvals={call.tool_call_id: True}, metadata={call.tool_call_id: marker}
        ),
    )
    assert ledger.refunds == [("a", 0)]


async def test_approved_arguments_for_another_tool_are_refused() -> None:
    ledger = Ledger()
    agent = refund_agent(ledger)
    result = await agent.run("refund", conversation=Conversation(conversation_id="c1"))
    assert isinstance(result.output, DeferredToolRequests)
    call = result.output.approvals[0]
    digest = args_digest(result.output.validated_args[call.tool_call_id])
    with pytest.raises(PayloadMismatch):
        await agent.run(
            conversation=result.conversation,
            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
            capabilities=[ApprovedArgs({call.tool_call_id: ("email", digest)})],
        )
    assert ledger.refunds == []


def test_the_digest_is_that_of_the_json_form() -> None:
    assert args_digest({"blob": b"\x00\xff"}) == args_digest({"blob": "AP8="})
    assert args_digest({"a": 1, "b": 2}) == args_digest({"b": 2, "a": 1})
    assert args_digest({"a": 1}) != args_digest({"a": 2})
