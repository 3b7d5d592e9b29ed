"""AgentRunCheckpoints, the run state stores, and what the Agents SDK does alone."""

from __future__ import annotations

import threading
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

import pytest
from agents import Agent, Runner, RunState, ToolApprovalItem
from agents.testing import function_call
from openai_agents_support import REFUND_ARGUMENTS, Refunds, refund_agent, run_id

from pausetoken import hash_payload
from pausetoken.exceptions import (
    CheckpointNotFound,
    ConfigurationError,
    StaleToken,
    StoreUnavailable,
)
from pausetoken.plugins import CheckpointReader, ReaderFactory
from pausetoken_openai_agents import (
    AgentRunCheckpoints,
    Decision,
    MemoryRunStates,
    Resumed,
    RunStates,
    SQLRunStates,
    ToolCall,
    state_digest,
)
from pausetoken_openai_agents._reader import tool_call
from scaffolding import threads_ended

if TYPE_CHECKING:
    from pathlib import Path


async def test_the_sdk_alone_runs_a_stored_state_twice(refunds: Refunds) -> None:
    # What the adapter exists for: nothing in the SDK makes a decision single-use.
    agent = refund_agent(refunds)
    paused = await Runner.run(agent, "refund")
    stored = paused.to_state().to_string()
    for _ in range(2):
        state = await RunState.from_string(agent, stored)
        state.approve(state.get_interruptions()[0])
        await Runner.run(agent, state)
    assert refunds.done == [REFUND_ARGUMENTS, REFUND_ARGUMENTS]


def test_the_reader_is_registered_as_a_checkpoints_entry_point() -> None:
    (found,) = entry_points(group="pausetoken.checkpoints", name="openai-agents")
    factory = found.load()
    assert factory is AgentRunCheckpoints
    assert isinstance(factory, ReaderFactory)
    assert factory.api_version == 1


def test_the_reader_cannot_be_built_from_settings() -> None:
    with pytest.raises(ConfigurationError):
        AgentRunCheckpoints.from_url("openai-agents://")


def test_the_reader_follows_the_protocol(refunds: Refunds) -> None:
    reader = AgentRunCheckpoints(refund_agent(refunds), MemoryRunStates())
    assert isinstance(reader, CheckpointReader)
    assert reader.namespace == "openai-agents:refunds"
    named = AgentRunCheckpoints(refund_agent(refunds), MemoryRunStates(), namespace="billing")
    assert named.namespace == "billing"


async def test_an_unknown_run_is_not_found(refunds: Refunds) -> None:
    reader = AgentRunCheckpoints(refund_agent(refunds), MemoryRunStates())
    with pytest.raises(CheckpointNotFound):
        await reader.pending(thread_id="nowhere", checkpoint_id="0" * 64, interrupt_id="call-1")


async def test_a_state_that_does_not_restore_is_not_found(refunds: Refunds) -> None:
    states = MemoryRunStates()
    await states.save("run", '{"$schemaVersion": "0.0"}', replaces=None)
    reader = AgentRunCheckpoints(refund_agent(refunds), states)
    with pytest.raises(CheckpointNotFound) as refused:
        await reader.bind(thread_id="run", payload=None, interrupt_id="call-1")
    assert "schemaVersion" not in str(refused.value)


async def test_binding_needs_the_call_id(refunds: Refunds) -> None:
    reader = AgentRunCheckpoints(refund_agent(refunds), MemoryRunStates())
    with pytest.raises(ConfigurationError):
        await reader.bind(thread_id="run", payload=None)


async def test_a_decided_call_is_stale(refunds: Refunds) -> None:
    agent = refund_agent(refunds)
    states = MemoryRunStates()
    paused = await Runner.run(agent, "refund")
    text = paused.to_state().to_string()
    await states.save("run", text, replaces=None)
    reader = AgentRunCheckpoints(agent, states)
    found = await reader.pending(
        thread_id="run", checkpoint_id=state_digest(text), interrupt_id="call-1"
    )
    assert found.value["arguments"] == REFUND_ARGUMENTS
    with pytest.raises(StaleToken):
        await reader.pending(
            thread_id="run", checkpoint_id=state_digest(text), interrupt_id="call-9"
        )
    with pytest.raises(StaleToken):
        await reader.pending(thread_id="run", checkpoint_id="0" * 64, interrupt_id="call-1")


async def test_arguments_bind_their_exact_text() -> None:
    agent = Agent[Any](name="refunds")

    def item(arguments: str) -> ToolApprovalItem:
        raw = function_call("refund", arguments, call_id="call-1")
        return ToolApprovalItem(agent=agent, raw_item=raw)  # type: ignore[arg-type]

    compact, spaced = tool_call(item('{"a":1,"b":2}')), tool_call(item('{"b": 2, "a": 1}'))
    assert compact.arguments == spaced.arguments == {"a": 1, "b": 2}
    assert compact.arguments_sha256 == hash_payload('{"a":1,"b":2}')
    assert compact.arguments_sha256 != spaced.arguments_sha256
    assert tool_call(item("not json")).arguments == "not json"
    assert tool_call(item('{"a": NaN}')).arguments == '{"a": NaN}'


def test_reprs_show_no_arguments_or_messages() -> None:
    call = ToolCall("refund", "call-1", {"card": "4111"}, "f" * 64)
    assert "4111" not in repr(call)
    assert "secret" not in repr(Decision(approve=False, message="secret"))
    assert "4111" not in repr(Resumed("4111 paid", replayed=False, approvals=(call,)))


@pytest.fixture(params=["memory", "sql"])
async def any_states(request: pytest.FixtureRequest, engine: str) -> Any:
    if request.param == "memory":
        yield MemoryRunStates()
        return
    opened = SQLRunStates(engine)
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_a_state_is_replaced_only_over_the_expected_one(any_states: RunStates) -> None:
    run = run_id()
    assert await any_states.load(run) is None
    assert await any_states.save(run, "first", replaces="0" * 64) is False
    assert await any_states.save(run, "first", replaces=None)
    assert await any_states.save(run, "other", replaces=None) is False
    assert await any_states.save(run, "second", replaces=state_digest("other")) is False
    assert await any_states.save(run, "second", replaces=state_digest("first"))
    assert await any_states.load(run) == "second"
    assert await any_states.save(run, "third", replaces=state_digest("first")) is False


async def test_a_refused_postgresql_connection_is_store_unavailable() -> None:
    # Nothing listens on port 1: asyncpg raises OSError past SQLAlchemy at once.
    states = SQLRunStates("postgresql+asyncpg://postgres@127.0.0.1:1/none")
    try:
        with pytest.raises(StoreUnavailable) as refused:
            await states.save("run", "secret state", replaces=None)
        assert "secret state" not in str(refused.value)
        with pytest.raises(StoreUnavailable):
            await states.load("run")
    finally:
        await states.aclose()


async def test_an_unreachable_database_is_store_unavailable(tmp_path: Path) -> None:
    threads = set(threading.enumerate())
    states = SQLRunStates(f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'runs.db'}")
    try:
        with pytest.raises(StoreUnavailable) as refused:
            await states.save("run", "secret state", replaces=None)
        assert "secret state" not in str(refused.value)
    finally:
        await states.aclose()
        await threads_ended(threads)
