"""LangGraphCheckpoints and ask(): what is pending, what is bound, what is refused."""

from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from langgraph_support import APPROVAL, Effects, Graphs, Refund, State, thread

from pausetoken import (
    JoseSigner,
    KeyRing,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    hash_payload,
)
from pausetoken._registry import load_checkpoints
from pausetoken.exceptions import (
    CheckpointLost,
    CheckpointNotFound,
    ConfigurationError,
    InvalidResponse,
    PayloadMismatch,
    StaleToken,
    UnknownInterrupt,
)
from pausetoken.testing import strategies as pst
from pausetoken_langgraph import (
    LangGraphCheckpoints,
    ask,
    envelope,
    mint_pending,
    pending_interrupts,
    resume,
    unwrap,
)
from scaffolding import ACME

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

APPROVE = {"approved": True}


async def _agrees_with_langgraph(graph: Any, config: dict[str, Any]) -> list[str]:
    reader = LangGraphCheckpoints(graph)
    thread_id = config["configurable"]["thread_id"]
    head = await reader.head(thread_id)
    ours = list(pending_interrupts(head.pending_writes))
    theirs = [i.id for i in (await graph.aget_state(config)).interrupts]
    assert ours == theirs
    await _redeem_time_reads_agree(reader, head)
    return ours


async def _redeem_time_reads_agree(reader: LangGraphCheckpoints, head: Any) -> None:
    """``pending`` (one statement on AsyncSqliteSaver) answers what the full head says."""
    thread_id = head.config["configurable"]["thread_id"]
    head_id = head.config["configurable"]["checkpoint_id"]
    pending = pending_interrupts(head.pending_writes)
    recorded = {
        item.id
        for _, channel, value in head.pending_writes
        if channel == "__interrupt__"
        for item in value
    }
    for interrupt_id in sorted(recorded | {"0" * 32}):
        if interrupt_id in pending:
            found = await reader.pending(
                thread_id=thread_id, checkpoint_id=head_id, interrupt_id=interrupt_id
            )
            assert (found.checkpoint_id, found.interrupt_id) == (head_id, interrupt_id)
            assert found.value == unwrap(pending[interrupt_id].value)[1]
        else:  # answered, or never asked
            with pytest.raises(StaleToken):
                await reader.pending(
                    thread_id=thread_id, checkpoint_id=head_id, interrupt_id=interrupt_id
                )
    if head.parent_config is not None:
        parent_id = head.parent_config["configurable"]["checkpoint_id"]
        for interrupt_id in recorded:
            with pytest.raises(StaleToken):
                await reader.pending(
                    thread_id=thread_id, checkpoint_id=parent_id, interrupt_id=interrupt_id
                )


async def test_pending_interrupts_agree_with_aget_state_as_answers_arrive(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens]
) -> None:
    for build in (graphs.parallel, graphs.sequential, graphs.nested):
        graph = build()
        tokens = make_tokens(graph)
        config = thread()
        await graph.ainvoke({"log": []}, config)
        while pending := await _agrees_with_langgraph(graph, config):
            event = next(e for e in await mint_pending(tokens, graph, config, scope=ACME))
            assert event.interrupt_id in pending
            await resume(tokens, graph, event.token, APPROVE, scope=ACME)
        await _agrees_with_langgraph(graph, config)


async def test_a_graph_without_a_checkpointer_is_a_configuration_error() -> None:
    builder = StateGraph(State)
    builder.add_node("noop", lambda state: {"log": []})
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    with pytest.raises(ConfigurationError) as refused:
        LangGraphCheckpoints(builder.compile())
    assert refused.value.code == "langgraph_no_checkpointer"


def _one_node_graph(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("noop", lambda state: {"log": []})
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    return builder.compile(checkpointer=saver)


def test_a_synchronous_checkpointer_is_a_configuration_error() -> None:
    import sqlite3
    from contextlib import closing

    from langgraph.checkpoint.sqlite import SqliteSaver

    with closing(sqlite3.connect(":memory:", check_same_thread=False)) as conn:
        graph = _one_node_graph(SqliteSaver(conn))
        with pytest.raises(ConfigurationError) as refused:
            LangGraphCheckpoints(graph)
    assert refused.value.code == "langgraph_sync_checkpointer"
    assert "SqliteSaver is synchronous" in refused.value.detail
    assert "aput_writes" in refused.value.detail


async def test_a_checkpointer_whose_async_read_is_missing_is_a_configuration_error() -> None:
    class HalfAsyncSaver(InMemorySaver):
        async def aget_tuple(self, config: Any) -> Any:
            raise NotImplementedError

    reader = LangGraphCheckpoints(_one_node_graph(HalfAsyncSaver()))
    with pytest.raises(ConfigurationError) as refused:
        await reader.head("thread-1")
    assert refused.value.code == "langgraph_sync_checkpointer"
    assert isinstance(refused.value.__cause__, NotImplementedError)


async def test_async_checkpointers_and_in_memory_saver_are_accepted(saver: Any) -> None:
    reader = LangGraphCheckpoints(_one_node_graph(saver))
    assert reader.saver is saver


def test_the_registry_entry_point_says_to_build_the_reader_in_code() -> None:
    reader = load_checkpoints("langgraph")
    assert reader is LangGraphCheckpoints
    with pytest.raises(ConfigurationError) as refused:
        reader.from_url("langgraph")
    assert refused.value.code == "langgraph_needs_graph"
    assert "LangGraphCheckpoints(graph)" in refused.value.detail


async def test_an_unknown_thread_is_lost_in_memory_and_not_found_elsewhere(
    graphs: Graphs,
) -> None:
    graph = graphs.single()
    reader = LangGraphCheckpoints(graph)
    expected = CheckpointLost if isinstance(graphs.saver, InMemorySaver) else CheckpointNotFound
    with pytest.raises(expected):
        await reader.pending(thread_id="nobody", checkpoint_id="c", interrupt_id="i")
    assert LangGraphCheckpoints(graph, persistent=True).persistent
    with pytest.raises(CheckpointNotFound):
        await LangGraphCheckpoints(graph, persistent=True).head("nobody")


async def test_bind_needs_the_interrupt_id_and_the_head_checkpoint(graphs: Graphs) -> None:
    graph = graphs.single()
    reader = LangGraphCheckpoints(graph)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    thread_id = config["configurable"]["thread_id"]
    [pause] = paused["__interrupt__"]

    with pytest.raises(ConfigurationError):
        await reader.bind(thread_id=thread_id, payload=None)
    with pytest.raises(StaleToken):
        await reader.bind(
            thread_id=thread_id, payload=None, interrupt_id=pause.id, checkpoint_id="old"
        )
    with pytest.raises(StaleToken):
        await reader.bind(thread_id=thread_id, payload=None, interrupt_id="0" * 32)
    bound = await reader.bind(thread_id=thread_id, payload=None, interrupt_id=pause.id)
    assert bound.value == {"order_id": "order-refund", "amount_cents": 1999}
    assert (
        bound.checkpoint_id
        == (await graph.aget_state(config)).config["configurable"]["checkpoint_id"]
    )


async def test_mint_refuses_a_payload_other_than_the_one_langgraph_stored(graphs: Graphs) -> None:
    graph = graphs.single()
    tokens = _tokens(graph)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    [pause] = paused["__interrupt__"]
    with pytest.raises(PayloadMismatch):
        await tokens.mint(
            "approval",
            Refund("order-other", 1),
            scope=ACME,
            thread_id=config["configurable"]["thread_id"],
            run_id="run",
            interrupt_id=pause.id,
        )


def _tokens(graph: Any) -> PauseTokens:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        tokens = PauseTokens(
            signer=JoseSigner(KeyRing.generate()),
            store=MemoryStore(),
            checkpoints=LangGraphCheckpoints(graph),
        )
    tokens.register(APPROVAL)
    return tokens


def _mixed_graph(saver: Any) -> Any:
    def raw(state: State) -> dict[str, Any]:
        interrupt({"question": "not from ask"})
        return {"log": ["raw"]}

    def asked(state: State) -> dict[str, Any]:
        ask("approval", Refund("order-mixed", 5))
        return {"log": ["asked"]}

    builder = StateGraph(State)
    builder.add_node("raw", raw)
    builder.add_node("asked", asked)
    for name in ("raw", "asked"):
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder.compile(checkpointer=saver)


async def test_foreign_interrupts_are_refused_unless_skipping_is_asked_for(
    graphs: Graphs,
) -> None:
    graph = _mixed_graph(graphs.saver)
    tokens = _tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)

    with pytest.raises(UnknownInterrupt) as refused:
        await mint_pending(tokens, graph, config, scope=ACME)
    assert refused.value.code == "foreign_interrupt"
    events = await mint_pending(tokens, graph, config, scope=ACME, foreign="skip")
    assert [event.payload for event in events] == [Refund("order-mixed", 5)]


async def test_mint_pending_refuses_unregistered_names_before_minting_anything() -> None:
    saver = InMemorySaver()

    def node(state: State) -> dict[str, Any]:
        ask("unregistered", {"x": 1})
        return {"log": []}

    builder = StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    graph = builder.compile(checkpointer=saver)
    tokens = _tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    with pytest.raises(UnknownInterrupt):
        await mint_pending(tokens, graph, config, scope=ACME)


async def test_mint_pending_and_resume_need_a_reader_for_the_same_graph(graphs: Graphs) -> None:
    graph = graphs.single()
    tokens = _tokens(_mixed_graph(InMemorySaver()))
    config = thread()
    await graph.ainvoke({"log": []}, config)
    with pytest.raises(ConfigurationError) as refused:
        await mint_pending(tokens, graph, config, scope=ACME)
    assert refused.value.code == "langgraph_reader_mismatch"
    with pytest.raises(ConfigurationError):
        await resume(tokens, graph, "x.y.z", APPROVE, scope=ACME)
    with pytest.raises(ConfigurationError):
        await mint_pending(_tokens(graph), graph, {"configurable": {}}, scope=ACME)
    with pytest.raises(StaleToken):
        await mint_pending(
            _tokens(graph),
            graph,
            {"configurable": {**config["configurable"], "checkpoint_id": "old"}},
            scope=ACME,
        )


async def test_a_run_that_is_not_paused_mints_nothing(graphs: Graphs) -> None:
    graph = graphs.single()
    tokens = _tokens(graph)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    await graph.ainvoke(Command(resume={paused["__interrupt__"][0].id: APPROVE}), config)
    assert await mint_pending(tokens, graph, config, scope=ACME) == []


@given(name=st.text(min_size=1, max_size=10), payload=pst.payloads())
def test_envelopes_unwrap_to_their_name_and_payload(name: str, payload: Any) -> None:
    assert unwrap(envelope(name, payload)) == (name, payload)


@given(value=pst.payloads())
def test_values_that_are_not_envelopes_are_foreign(value: Any) -> None:
    assert unwrap(value) == (None, value)


def test_near_envelopes_are_foreign() -> None:
    for value in (
        {"pausetoken": True, "name": "a", "payload": 1},
        {"pausetoken": 2, "name": "a", "payload": 1},
        {"pausetoken": 1, "name": 3, "payload": 1},
        {"pausetoken": 1, "name": "a", "payload": 1, "extra": 0},
    ):
        assert unwrap(value)[0] is None


async def test_ask_stores_tuples_as_lists_and_the_token_binds_that() -> None:
    saver = InMemorySaver()

    def node(state: State) -> dict[str, Any]:
        ask("approval", {"order_id": "t", "amount_cents": 3, "tags": ("a", "b")})
        return {"log": []}

    builder = StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    graph = builder.compile(checkpointer=saver)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    stored = paused["__interrupt__"][0].value
    assert stored["payload"]["tags"] == ["a", "b"]
    assert hash_payload(stored["payload"]) == hash_payload(
        {"order_id": "t", "amount_cents": 3, "tags": ["a", "b"]}
    )


async def test_ask_refuses_an_answer_that_does_not_fit_its_type() -> None:
    from langgraph_support import Decision

    def node(state: State) -> dict[str, Any]:
        ask("approval", Refund("order-typed", 1), response=Decision)
        return {"log": []}

    builder = StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    pause_id = paused["__interrupt__"][0].id
    with pytest.raises(InvalidResponse):
        await graph.ainvoke(Command(resume={pause_id: {"approved": "yes"}}), config)


async def test_on_async_sqlite_saver_the_redemption_check_is_one_statement(
    tmp_path: Path,
) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        graph = Graphs(saver, Effects()).parallel()
        config = thread()
        await graph.ainvoke({"log": []}, config)
        reader = LangGraphCheckpoints(graph)
        head = await reader.head(config["configurable"]["thread_id"])
        [first, _] = pending_interrupts(head.pending_writes)
        statements: list[str] = []
        await saver.conn.set_trace_callback(statements.append)
        try:
            found = await reader.pending(
                thread_id=config["configurable"]["thread_id"],
                checkpoint_id=head.config["configurable"]["checkpoint_id"],
                interrupt_id=first,
            )
        finally:
            await saver.conn.set_trace_callback(None)
    assert found.interrupt_id == first
    assert len(statements) == 1, statements


@pytest.mark.parametrize("saver", ["postgresql"], indirect=True)
async def test_on_async_postgres_saver_the_redemption_check_reads_no_full_checkpoint(
    saver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = Graphs(saver, Effects()).parallel()
    config = thread()
    await graph.ainvoke({"log": []}, config)
    reader = LangGraphCheckpoints(graph)
    head = await reader.head(config["configurable"]["thread_id"])
    [first, second] = pending_interrupts(head.pending_writes)

    async def full_read(*args: object) -> object:
        raise AssertionError("the redemption check read the whole checkpoint")

    monkeypatch.setattr(saver, "aget_tuple", full_read)
    found = await reader.pending(
        thread_id=config["configurable"]["thread_id"],
        checkpoint_id=head.config["configurable"]["checkpoint_id"],
        interrupt_id=first,
    )
    assert (found.interrupt_id, found.value) == (first, unwrap(head_value(head, first))[1])
    with pytest.raises(StaleToken):
        await reader.pending(
            thread_id=config["configurable"]["thread_id"],
            checkpoint_id=head.parent_config["configurable"]["checkpoint_id"],
            interrupt_id=second,
        )
    with pytest.raises(CheckpointNotFound):
        await reader.pending(thread_id="no-such-thread", checkpoint_id="x", interrupt_id=first)


@pytest.mark.parametrize("how", ["pool", "pipeline"])
async def test_on_a_postgres_pool_or_pipeline_the_redemption_check_agrees_with_the_head(
    how: str,
) -> None:
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph_support import postgresql_schema
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    options = {"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0}
    async with contextlib.AsyncExitStack() as stack:
        conninfo = await stack.enter_async_context(postgresql_schema())
        if how == "pool":
            pool = AsyncConnectionPool(conninfo, kwargs=options, open=False, min_size=1, max_size=2)
            await pool.open()
            stack.push_async_callback(pool.close)
            saver = AsyncPostgresSaver(pool)
        else:
            conn = await psycopg.AsyncConnection.connect(conninfo, **options)
            stack.push_async_callback(conn.close)
            await AsyncPostgresSaver(conn).setup()  # not allowed in a pipeline
            pipe = await stack.enter_async_context(conn.pipeline())
            saver = AsyncPostgresSaver(conn, pipe=pipe)
        await saver.setup()
        graph = Graphs(saver, Effects()).parallel()
        config = thread()
        await graph.ainvoke({"log": []}, config)
        reader = LangGraphCheckpoints(graph)
        head = await reader.head(config["configurable"]["thread_id"])
        await _redeem_time_reads_agree(reader, head)


def head_value(head: Any, interrupt_id: str) -> Any:
    """The value LangGraph stored for ``interrupt_id`` in ``head``'s pending writes."""
    return pending_interrupts(head.pending_writes)[interrupt_id].value


async def test_ask_with_the_registered_interrupt_takes_its_name_and_response_type() -> None:
    from langgraph_support import APPROVAL, Decision

    seen: list[Decision] = []

    def node(state: State) -> dict[str, Any]:
        seen.append(ask(APPROVAL, Refund("order-typed", 1)))
        return {"log": []}

    builder = StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    [pause] = paused["__interrupt__"]
    assert pause.value["name"] == "approval"
    await graph.ainvoke(Command(resume={pause.id: {"approved": True}}), config)
    assert seen == [Decision(approved=True)]


def test_ask_refuses_an_interrupt_and_a_response_type_together() -> None:
    from langgraph_support import APPROVAL, Decision

    with pytest.raises(TypeError, match="response"):
        ask(APPROVAL, Refund("order-typed", 1), response=Decision)  # type: ignore[call-overload]


def test_ask_refuses_a_name_no_interrupt_could_be_registered_under() -> None:
    with pytest.raises(ValueError, match="interrupt name"):
        ask("not a name!", {}, response=bool)
