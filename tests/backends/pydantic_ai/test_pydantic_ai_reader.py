"""ConversationCheckpoints: the reader over Pydantic AI's conversation store."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai_support import Ledger, build_agent

from pausetoken.exceptions import (
    CheckpointLost,
    CheckpointNotFound,
    ConfigurationError,
    StaleToken,
)
from pausetoken.plugins import CheckpointReader, ReaderFactory
from pausetoken_pydantic_ai import ConversationCheckpoints

if TYPE_CHECKING:
    from pydantic_ai import Agent


@pytest.fixture
def refunds() -> Agent[None, Any]:
    return build_agent(Ledger())


async def saved_pause(agent: Agent[None, Any], store: InMemoryConversationStore) -> str:
    result = await agent.run("refund", conversation=Conversation(conversation_id="c1"))
    await store.save(result)
    return result.output.approvals[0].tool_call_id  # type: ignore[no-any-return]


def test_the_reader_is_registered_and_follows_the_protocol() -> None:
    (found,) = entry_points(group="pausetoken.checkpoints", name="pydantic-ai")
    assert found.load() is ConversationCheckpoints
    factory: ReaderFactory = ConversationCheckpoints
    reader: CheckpointReader = ConversationCheckpoints(InMemoryConversationStore())
    assert isinstance(factory, ReaderFactory)
    assert isinstance(reader, CheckpointReader)
    with pytest.raises(ConfigurationError):
        ConversationCheckpoints.from_url("pydantic-ai://")


async def test_bind_then_pending_return_the_same_value(refunds: Agent[None, Any]) -> None:
    store = InMemoryConversationStore()
    reader = ConversationCheckpoints(store)
    call_id = await saved_pause(refunds, store)
    bound = await reader.bind(thread_id="c1", payload=None, interrupt_id=call_id)
    pending = await reader.pending(
        thread_id="c1", checkpoint_id=bound.checkpoint_id, interrupt_id=call_id
    )
    assert pending == bound
    assert bound.value["args"] == {"order": "a", "amount": 0}


async def test_a_conversation_that_moved_on_is_stale(refunds: Agent[None, Any]) -> None:
    store = InMemoryConversationStore()
    reader = ConversationCheckpoints(store)
    call_id = await saved_pause(refunds, store)
    bound = await reader.bind(thread_id="c1", payload=None, interrupt_id=call_id)
    conversation = await store.load("c1")
    assert conversation is not None
    result = await refunds.run(
        conversation=conversation,
        deferred_tool_results=conversation.deferred_tool_requests.build_results(approve_all=True),  # type: ignore[union-attr]
    )
    await store.save(result)
    with pytest.raises(StaleToken):
        await reader.pending(
            thread_id="c1", checkpoint_id=bound.checkpoint_id, interrupt_id=call_id
        )
    with pytest.raises(StaleToken):
        await reader.bind(thread_id="c1", payload=None, interrupt_id=call_id)


async def test_an_unknown_call_or_checkpoint_is_stale(refunds: Agent[None, Any]) -> None:
    store = InMemoryConversationStore()
    reader = ConversationCheckpoints(store)
    call_id = await saved_pause(refunds, store)
    with pytest.raises(StaleToken):
        await reader.bind(thread_id="c1", payload=None, interrupt_id="another-call")
    with pytest.raises(StaleToken):
        await reader.pending(thread_id="c1", checkpoint_id="another", interrupt_id=call_id)


async def test_an_unknown_conversation_is_lost_in_memory_and_not_found_when_persistent() -> None:
    store = InMemoryConversationStore()
    with pytest.raises(CheckpointLost):
        await ConversationCheckpoints(store).pending(
            thread_id="nope", checkpoint_id="x", interrupt_id="y"
        )
    with pytest.raises(CheckpointNotFound):
        await ConversationCheckpoints(store, persistent=True).pending(
            thread_id="nope", checkpoint_id="x", interrupt_id="y"
        )


async def test_bind_refuses_a_missing_call_id() -> None:
    with pytest.raises(ConfigurationError):
        await ConversationCheckpoints(InMemoryConversationStore()).bind(
            thread_id="c1", payload=None
        )
