"""AgentRunCheckpoints passes the checkpoint reader kit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from agents import Runner
from openai_agents_support import Refunds, refund_agent, run_id

from pausetoken.testing import PausedRun, ReaderConformance
from pausetoken_openai_agents import (
    TOOL_APPROVAL,
    AgentRunCheckpoints,
    Decision,
    MemoryRunStates,
    state_digest,
)
from pausetoken_openai_agents._reader import tool_call

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class TestAgentRunCheckpoints(ReaderConformance):
    @pytest.fixture
    async def reader(self) -> AsyncIterator[AgentRunCheckpoints]:
        reader = AgentRunCheckpoints(refund_agent(Refunds()), MemoryRunStates())
        yield reader
        await reader.aclose()

    async def pause(self, reader: Any) -> PausedRun:
        run = run_id()
        result = await Runner.run(reader.agent, "refund")
        text = result.to_state().to_string()
        assert await reader.states.save(run, text, replaces=None)
        (item,) = result.to_state().get_interruptions()
        call = tool_call(item)
        return PausedRun(
            TOOL_APPROVAL,
            call,
            Decision(approve=True),
            thread_id=run,
            interrupt_id=call.call_id,
            checkpoint_id=state_digest(text),
            tool_call_id=call.call_id,
        )

    async def move_on(self, reader: Any, paused: PausedRun) -> None:
        text, state = await reader.restore(paused.thread_id)
        state.approve(state.get_interruptions()[0])
        result = await Runner.run(reader.agent, state)
        moved = result.to_state().to_string()
        assert await reader.states.save(paused.thread_id, moved, replaces=state_digest(text))
