"""LangChain's HumanInTheLoopMiddleware on a real create_agent graph, in both interrupt modes.

The chat model is langchain_core's fake one, scripted to call tools: no network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from langgraph_support import State, thread

from pausetoken import TokenStatus, hash_payload
from pausetoken.exceptions import AlreadyRedeemed, InvalidResponse, UnknownInterrupt
from pausetoken_langgraph import (
    LANGCHAIN_BATCHED,
    LANGCHAIN_PER_CALL,
    mint_pending,
    register_langchain,
    resume,
)
from scaffolding import ACME

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_core.language_models import LanguageModelInput
    from langchain_core.runnables import Runnable
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel

    from pausetoken import InterruptEvent, PauseTokens

Mode = Literal["batched", "per_call"]
MODES: tuple[Mode, ...] = ("batched", "per_call")

GO = {"messages": [{"role": "user", "content": "go"}]}
EMAIL_CALL = {
    "name": "send_email",
    "args": {"to": "ann@example.com", "body": "hi"},
    "id": "call_1",
    "type": "tool_call",
}
REFUND_CALL = {"name": "refund", "args": {"order": "o-1"}, "id": "call_2", "type": "tool_call"}


class ToolCallingModel(GenericFakeChatModel):
    """The fake chat model, which ignores the tools it is given."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self


class Agent:
    """A create_agent graph whose model asks for the given tool calls, then says done."""

    def __init__(
        self,
        saver: BaseCheckpointSaver[Any],
        mode: Mode,
        calls: list[Any],
        interrupt_on: dict[str, Any] | None = None,
    ) -> None:
        self.done: list[tuple[str, dict[str, Any]]] = []

        @tool
        def send_email(to: str, body: str) -> str:
            """Send an email."""
            self.done.append(("send_email", {"to": to, "body": body}))
            return "sent"

        @tool
        def refund(order: str) -> str:
            """Refund an order."""
            self.done.append(("refund", {"order": order}))
            return "refunded"

        model = ToolCallingModel(
            messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="done")])
        )
        gate = HumanInTheLoopMiddleware(
            interrupt_on
            or {"send_email": True, "refund": {"allowed_decisions": ["approve", "reject"]}},
            interrupt_mode=mode,
        )
        self.graph: Pregel[Any, Any, Any, Any] = create_agent(
            model, tools=[send_email, refund], middleware=[gate], checkpointer=saver
        )

    def tool_messages(self, output: Any) -> list[tuple[str, str]]:
        return [
            (str(m.content), str(m.status))
            for m in output["messages"]
            if isinstance(m, ToolMessage)
        ]


@pytest.fixture
def agents(saver: BaseCheckpointSaver[Any]) -> Callable[..., Agent]:
    def make(mode: Mode, calls: list[Any] | None = None) -> Agent:
        return Agent(saver, mode, calls if calls is not None else [EMAIL_CALL])

    return make


async def paused(
    agent: Agent, make_tokens: Callable[..., PauseTokens]
) -> tuple[PauseTokens, dict[str, Any], list[InterruptEvent[Any]]]:
    tokens = make_tokens(agent.graph)
    register_langchain(tokens)
    config = thread()
    await agent.graph.ainvoke(GO, config)
    events = await mint_pending(tokens, agent.graph, config, scope=ACME)
    return tokens, config, events


def answer(mode: Mode, *decisions: dict[str, Any]) -> list[dict[str, Any]]:
    """The answers to send: one for the batched review, one per token in per-call mode."""
    return [{"decisions": list(decisions)}] if mode == "batched" else list(decisions)


async def test_mint_pending_binds_the_batched_review_as_langgraph_stored_it(
    agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents("batched", [EMAIL_CALL, REFUND_CALL])
    tokens, config, [event] = await paused(agent, make_tokens)

    [pause] = (await agent.graph.aget_state(config)).interrupts
    assert event.name == LANGCHAIN_BATCHED.name
    assert event.interrupt_id == pause.id
    assert event.payload == pause.value
    assert [r["name"] for r in event.payload["action_requests"]] == ["send_email", "refund"]
    claims = tokens.verify(event.token)
    assert claims.request_hash == hash_payload(pause.value)
    assert claims.tool_call_id is None


async def test_mint_pending_mints_one_token_per_tool_call_binding_its_id(
    agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents("per_call", [EMAIL_CALL, REFUND_CALL])
    tokens, config, events = await paused(agent, make_tokens)

    pauses = (await agent.graph.aget_state(config)).interrupts
    assert [e.interrupt_id for e in events] == [p.id for p in pauses]
    assert {e.name for e in events} == {LANGCHAIN_PER_CALL.name}
    assert [tokens.verify(e.token).tool_call_id for e in events] == ["call_1", "call_2"]
    by_call = {e.payload["tool_call_id"]: e.payload for e in events}
    # The decisions each tool allows come from the interrupt's response schema, and are bound.
    assert by_call["call_1"]["allowed_decisions"] == ["approve", "edit", "reject", "respond"]
    assert by_call["call_2"]["allowed_decisions"] == ["approve", "reject"]
    for event, pause in zip(events, pauses, strict=True):
        assert {**pause.value, "allowed_decisions": event.payload["allowed_decisions"]} == (
            event.payload
        )
        assert tokens.verify(event.token).request_hash == hash_payload(event.payload)


@pytest.mark.parametrize("mode", MODES)
async def test_without_registration_the_middlewares_pauses_are_foreign(
    mode: Mode, agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents(mode)
    tokens = make_tokens(agent.graph)
    config = thread()
    await agent.graph.ainvoke(GO, config)
    with pytest.raises(UnknownInterrupt, match="register_langchain") as caught:
        await mint_pending(tokens, agent.graph, config, scope=ACME)
    assert caught.value.code == "foreign_interrupt"
    assert await mint_pending(tokens, agent.graph, config, scope=ACME, foreign="skip") == []


EDITED = {"to": "bob@example.com", "body": "hello"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("decision", "done", "message"),
    [
        ({"type": "approve"}, [("send_email", EMAIL_CALL["args"])], ("sent", "success")),
        (
            {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}},
            [("send_email", EDITED)],
            None,
        ),
        ({"type": "reject", "message": "not today"}, [], ("not today", "error")),
        ({"type": "respond", "message": "I called Ann"}, [], ("I called Ann", "success")),
    ],
    ids=["approve", "edit", "reject", "respond"],
)
async def test_each_decision_resumes_the_agent_as_the_middleware_would(
    *,
    mode: Mode,
    decision: dict[str, Any],
    done: list[Any],
    message: tuple[str, str] | None,
    agents: Callable[..., Agent],
    make_tokens: Callable[..., PauseTokens],
) -> None:
    agent = agents(mode)
    tokens, _, [event] = await paused(agent, make_tokens)

    [response] = answer(mode, decision)
    resumed = await resume(tokens, agent.graph, event.token, response, scope=ACME)

    assert (resumed.replayed, resumed.interrupts) == (False, ())
    assert agent.done == done
    [(content, status)] = agent.tool_messages(resumed.output)
    if message is not None:
        assert message[0] in content
        assert status == message[1]
    else:
        assert content.endswith("sent")
    assert resumed.output["messages"][-1].content == "done"
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.REDEEMED


@pytest.mark.parametrize("mode", MODES)
async def test_a_decision_the_tool_does_not_allow_is_refused_and_the_token_stays_good(
    mode: Mode, agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents(mode, [EMAIL_CALL, REFUND_CALL])
    tokens, config, events = await paused(agent, make_tokens)
    edit_refund = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "o-9"}}}
    forbidden = answer(mode, {"type": "approve"}, edit_refund)

    with pytest.raises(InvalidResponse) as caught:
        await resume(tokens, agent.graph, events[-1].token, forbidden[-1], scope=ACME)

    assert caught.value.http_status == 422
    assert caught.value.field == ("$.decisions[1].type" if mode == "batched" else "$.type")
    assert "allowed: approve, reject" in caught.value.detail
    assert await tokens.status(events[-1].token, scope=ACME) is TokenStatus.ACTIVE
    assert len((await agent.graph.aget_state(config)).interrupts) == len(events)
    assert agent.done == []

    for event, response in zip(
        events, answer(mode, {"type": "approve"}, {"type": "reject"}), strict=True
    ):
        resumed = await resume(tokens, agent.graph, event.token, response, scope=ACME)
    assert agent.done == [("send_email", EMAIL_CALL["args"])]
    assert resumed.interrupts == ()


async def test_the_wrong_number_of_decisions_is_refused_and_the_token_stays_good(
    agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents("batched", [EMAIL_CALL, REFUND_CALL])
    tokens, _, [event] = await paused(agent, make_tokens)

    for decisions in ([{"type": "approve"}], [{"type": "approve"}] * 3):
        with pytest.raises(InvalidResponse) as caught:
            await resume(tokens, agent.graph, event.token, {"decisions": decisions}, scope=ACME)
        assert caught.value.field == "$.decisions"
    with pytest.raises(InvalidResponse) as caught:
        await resume(tokens, agent.graph, event.token, [{"type": "approve"}] * 2, scope=ACME)
    with pytest.raises(InvalidResponse) as caught:
        await resume(tokens, agent.graph, event.token, {"type": "approve"}, scope=ACME)
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE

    both = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    resumed = await resume(tokens, agent.graph, event.token, both, scope=ACME)
    # The two approved calls run as parallel tool calls: in either order.
    assert sorted(agent.done) == [("refund", {"order": "o-1"}), ("send_email", EMAIL_CALL["args"])]
    assert resumed.replayed is False


@pytest.mark.parametrize("mode", MODES)
async def test_a_replay_with_another_answer_is_refused_and_the_same_answer_is_a_retry(
    mode: Mode, agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents(mode)
    tokens, _, [event] = await paused(agent, make_tokens)
    [approve] = answer(mode, {"type": "approve"})
    [reject] = answer(mode, {"type": "reject", "message": "changed my mind"})
    await resume(tokens, agent.graph, event.token, approve, scope=ACME)

    with pytest.raises(AlreadyRedeemed) as caught:
        await resume(tokens, agent.graph, event.token, reject, scope=ACME)
    assert caught.value.http_status == 409
    retry = await resume(tokens, agent.graph, event.token, approve, scope=ACME)

    assert (retry.replayed, retry.output, retry.interrupts) == (True, None, ())
    assert agent.done == [("send_email", EMAIL_CALL["args"])]


async def test_an_invalid_batched_answer_never_reaches_langgraph_so_the_thread_is_not_wedged(
    agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    forbidden = {"decisions": [{"type": "respond", "message": "no refunds"}]}
    # Without pausetoken: LangGraph saves the answer before the middleware refuses it, and
    # every later answer is ignored in favour of the saved one.
    bare = agents("batched", [REFUND_CALL])
    config = thread()
    paused_bare = await bare.graph.ainvoke(
        {"messages": [{"role": "user", "content": "go"}]}, config
    )
    [pause] = paused_bare["__interrupt__"]
    with pytest.raises(ValueError, match="not allowed"):
        await bare.graph.ainvoke(Command(resume={pause.id: forbidden}), config)
    with pytest.raises(ValueError, match="not allowed"):
        await bare.graph.ainvoke(
            Command(resume={pause.id: {"decisions": [{"type": "approve"}]}}), config
        )
    assert bare.done == []

    agent = agents("batched", [REFUND_CALL])
    tokens, config, [event] = await paused(agent, make_tokens)
    with pytest.raises(InvalidResponse):
        await resume(tokens, agent.graph, event.token, forbidden, scope=ACME)
    resumed = await resume(
        tokens, agent.graph, event.token, {"decisions": [{"type": "approve"}]}, scope=ACME
    )
    assert agent.done == [("refund", {"order": "o-1"})]
    assert resumed.output["messages"][-1].content == "done"


async def test_per_call_tokens_answer_their_own_tool_call_in_any_order(
    agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents("per_call", [EMAIL_CALL, REFUND_CALL])
    tokens, _, [email, refund] = await paused(agent, make_tokens)

    first = await resume(tokens, agent.graph, refund.token, {"type": "approve"}, scope=ACME)
    assert [p.interrupt_id for p in first.interrupts] == [email.interrupt_id]
    assert [p.name for p in first.interrupts] == [LANGCHAIN_PER_CALL.name]
    assert [p.payload for p in first.interrupts] == [email.payload]
    reject = {"type": "reject", "message": "no email"}
    second = await resume(tokens, agent.graph, email.token, reject, scope=ACME)

    assert second.interrupts == ()
    assert agent.done == [("refund", {"order": "o-1"})]


@pytest.mark.parametrize("mode", MODES)
async def test_edited_args_the_tool_schema_refuses_are_422_before_anything_is_claimed(
    mode: Mode, agents: Callable[..., Agent], make_tokens: Callable[..., PauseTokens]
) -> None:
    agent = agents(mode)
    tokens, config, [event] = await paused(agent, make_tokens)
    # "to" must be a string and "body" is required: the tool's own argument schema.
    wrong_args = {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": 3}}}
    [wrong] = answer(mode, wrong_args)

    with pytest.raises(InvalidResponse) as caught:
        await resume(tokens, agent.graph, event.token, wrong, scope=ACME)

    where = "$.decisions[0]" if mode == "batched" else "$"
    assert caught.value.http_status == 422
    assert caught.value.field == f"{where}.edited_action.args.to"
    assert "send_email" in caught.value.detail
    assert "3" not in caught.value.detail.replace("422", "")  # the answer is never quoted
    # Nothing was claimed or saved: the approver corrects the edit with the same token.
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE
    assert len((await agent.graph.aget_state(config)).interrupts) == 1
    assert agent.done == []
    fixed = {"to": "bob@example.com", "body": "hello"}
    [corrected] = answer(
        mode, {"type": "edit", "edited_action": {"name": "send_email", "args": fixed}}
    )
    resumed = await resume(tokens, agent.graph, event.token, corrected, scope=ACME)
    assert agent.done == [("send_email", fixed)]
    assert resumed.interrupts == ()


async def test_a_tool_that_allows_one_decision_is_bound_with_that_decision_only(
    saver: BaseCheckpointSaver[Any], make_tokens: Callable[..., PauseTokens]
) -> None:
    only_approve = {"refund": {"allowed_decisions": ["approve"]}}
    agent = Agent(saver, "per_call", [REFUND_CALL], interrupt_on=only_approve)
    tokens, _, [event] = await paused(agent, make_tokens)

    assert event.payload["allowed_decisions"] == ["approve"]
    with pytest.raises(InvalidResponse):
        await resume(tokens, agent.graph, event.token, {"type": "reject"}, scope=ACME)
    await resume(tokens, agent.graph, event.token, {"type": "approve"}, scope=ACME)
    assert agent.done == [("refund", {"order": "o-1"})]


NEAR_MISSES = [
    {"action_requests": [], "review_configs": []},
    {"action_requests": [{"name": "refund", "args": {}}], "review_configs": []},
    {
        "action_requests": [{"name": "refund", "args": {}}],
        "review_configs": [{"action_name": "send_email", "allowed_decisions": ["approve"]}],
    },
    {
        "action_requests": [{"name": "refund", "args": {}}],
        "review_configs": [{"action_name": "refund", "allowed_decisions": ["ignore"]}],
    },
    {"type": "tool_approval", "tool_call_id": "call_1", "name": "refund", "args": {}},
    {"type": "tool_approval", "name": "refund", "args": {}, "allowed_decisions": ["approve"]},
    {
        "type": "tool_approval",
        "tool_call_id": "c",
        "name": "refund",
        "args": [],
        "allowed_decisions": ["approve"],
    },
]


@pytest.mark.parametrize(
    "value",
    NEAR_MISSES,
    ids=[
        "no-actions",
        "no-review-for-the-action",
        "review-for-another-action",
        "unknown-decision",
        "per-call-without-allowed-decisions",
        "per-call-without-tool-call-id",
        "per-call-args-not-an-object",
    ],
)
async def test_values_that_only_look_like_the_middlewares_are_foreign(
    value: dict[str, Any], saver: BaseCheckpointSaver[Any], make_tokens: Callable[..., PauseTokens]
) -> None:
    def node(state: State) -> State:
        interrupt(value)
        return state

    graph = (
        StateGraph(State).add_node("ask", node).add_edge(START, "ask").compile(checkpointer=saver)
    )
    tokens = make_tokens(graph)
    register_langchain(tokens)
    config = thread()
    await graph.ainvoke({"log": []}, config)

    with pytest.raises(UnknownInterrupt) as caught:
        await mint_pending(tokens, graph, config, scope=ACME)
    assert caught.value.code == "foreign_interrupt"
