# pyright: strict, reportMissingTypeStubs=false
"""User code of the Pydantic AI integration the type checkers must understand.

The typing session runs ``mypy --strict`` and pyright in strict mode on this file: each
``assert_type`` states a type that user code relies on. Nothing here runs in the test
suite (the functions are never called); the behaviour is tested in
``tests/backends/pydantic_ai``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_type

from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import DeferredToolRequests

from pausetoken import Interrupt, InterruptEvent, PauseTokens, Redemption, Scope
from pausetoken.plugins import CheckpointReader, PendingInterrupt
from pausetoken_pydantic_ai import (
    TOOL_APPROVAL,
    ApprovedArgs,
    ConversationCheckpoints,
    Resumed,
    ToolApproval,
    args_digest,
    mint_approvals,
    register,
    resume,
)

if TYPE_CHECKING:
    from pydantic_ai import Agent


async def approvals(tokens: PauseTokens, agent: Agent[None, Any], token: str) -> None:
    registered = register(tokens)
    assert_type(registered, Interrupt[ToolApproval, dict[str, Any]])
    assert_type(TOOL_APPROVAL, Interrupt[ToolApproval, dict[str, Any]])
    events = await mint_approvals(tokens, "c1", scope=Scope("acme"))
    assert_type(events, list[InterruptEvent[ToolApproval]])
    shown = events[0].payload
    assert_type(shown.tool_name, str)
    assert_type(shown.args, dict[str, Any])
    resumed = await resume(tokens, agent, [(token, {"type": "approve"})], scope=Scope("acme"))
    assert_type(resumed, Resumed)
    assert_type(resumed.result, AgentRunResult[Any] | None)
    assert_type(resumed.requests, DeferredToolRequests | None)
    assert_type(resumed.replayed, bool)
    async with tokens.redeem(
        token, {"type": "approve"}, scope=Scope("acme"), expect=TOOL_APPROVAL
    ) as redemption:
        assert_type(redemption, Redemption[ToolApproval, dict[str, Any]])
    assert_type(args_digest({"order": "a"}), str)


async def reader() -> None:
    checkpoints: CheckpointReader = ConversationCheckpoints(
        InMemoryConversationStore(), namespace="refunds"
    )
    pending = await checkpoints.pending(thread_id="c1", checkpoint_id="e1", interrupt_id="t1")
    assert_type(pending, PendingInterrupt)
    guard = ApprovedArgs({"t1": ("refund", "0" * 64)})
    assert_type(guard.approved["t1"], tuple[str, str])
