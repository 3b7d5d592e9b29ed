# pyright: strict, reportMissingTypeStubs=false
"""User code of the OpenAI Agents SDK integration the type checkers must understand.

The typing session runs ``mypy --strict`` and pyright in strict mode on this file: each
``assert_type`` states a type that user code relies on. Nothing here runs in the test
suite (the functions are never called); the behaviour is tested in
``tests/backends/openai_agents``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_type

from agents import Agent, Runner, RunResult

from pausetoken import Interrupt, InterruptEvent, PauseTokens, Redemption, Scope
from pausetoken.plugins import CheckpointReader, PendingInterrupt
from pausetoken_openai_agents import (
    TOOL_APPROVAL,
    AgentRunCheckpoints,
    Decision,
    MemoryRunStates,
    Resumed,
    RunStates,
    SQLRunStates,
    ToolCall,
    mint_pending,
    resume,
    state_digest,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


async def approvals(tokens: PauseTokens, agent: Agent[Any], token: str) -> None:
    assert_type(TOOL_APPROVAL, Interrupt[ToolCall, Decision])
    result = await Runner.run(agent, "refund order 42")
    assert_type(result, RunResult)
    events = await mint_pending(tokens, "run-42", scope=Scope("acme"), result=result)
    assert_type(events, list[InterruptEvent[ToolCall]])
    shown = events[0].payload
    assert_type(shown.tool_name, str)
    assert_type(shown.call_id, str)
    assert_type(shown.arguments_sha256, str)
    resumed = await resume(tokens, token, Decision(approve=True), scope=Scope("acme"))
    assert_type(resumed, Resumed)
    assert_type(resumed.replayed, bool)
    assert_type(resumed.approvals, tuple[ToolCall, ...])
    await resume(tokens, token, {"approve": False, "message": "no"}, scope=Scope("acme"))
    async with tokens.redeem(
        token, Decision(approve=True), scope=Scope("acme"), expect=TOOL_APPROVAL
    ) as redemption:
        assert_type(redemption, Redemption[ToolCall, Decision])
        assert_type(redemption.response.approve, bool)
        assert_type(redemption.response.message, str | None)


async def stores(agent: Agent[Any], engine: AsyncEngine) -> None:
    states: RunStates = MemoryRunStates()
    sql: RunStates = SQLRunStates(engine)
    reader: CheckpointReader = AgentRunCheckpoints(agent, states)
    found = await reader.pending(thread_id="run-42", checkpoint_id="0" * 64, interrupt_id="c1")
    assert_type(found, PendingInterrupt)
    assert_type(await sql.load("run-42"), str | None)
    assert_type(await sql.save("run-42", "{}", replaces=None), bool)
    assert_type(state_digest("{}"), str)
