"""ConversationCheckpoints passes the checkpoint reader kit."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai_support import Ledger, build_agent

from pausetoken.testing import PausedRun, ReaderConformance
from pausetoken_pydantic_ai import (
    TOOL_APPROVAL,
    ConversationCheckpoints,
    approval_value,
    register,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pausetoken import PauseTokens

AGENT = build_agent(Ledger())


class TestConversationCheckpoints(ReaderConformance):
    @pytest.fixture
    async def reader(self) -> AsyncIterator[ConversationCheckpoints]:
        reader = ConversationCheckpoints(InMemoryConversationStore())
        yield reader
        await reader.aclose()

    def register(self, service: PauseTokens) -> None:
        register(service)

    async def pause(self, reader: Any) -> PausedRun:
        conversation_id = f"c-{uuid.uuid4().hex}"
        result = await AGENT.run(
            "refund", conversation=Conversation(conversation_id=conversation_id)
        )
        await reader.store.save(result)
        paused = await reader.paused(conversation_id)
        (call,) = paused.requests.approvals
        return PausedRun(
            TOOL_APPROVAL.name,
            approval_value(paused, call.tool_call_id),
            {"type": "approve"},
            thread_id=conversation_id,
            interrupt_id=call.tool_call_id,
            checkpoint_id=paused.response_id,
            tool_call_id=call.tool_call_id,
        )

    async def move_on(self, reader: Any, paused: PausedRun) -> None:
        conversation = await reader.store.load(paused.thread_id)
        requests = conversation.deferred_tool_requests
        result = await AGENT.run(
            conversation=conversation,
            deferred_tool_results=requests.build_results(approve_all=True),
        )
        await reader.store.save(result)
