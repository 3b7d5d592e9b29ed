# pyright: strict, reportMissingTypeStubs=false
"""User code the type checkers must understand as a user would expect.

The typing session runs ``mypy --strict`` and pyright in strict mode on this file: each
``assert_type`` states a type that user code relies on, and fails the session when the type
checker infers another one. Nothing here runs in the test suite (the functions are never
called); the behaviour behind it is tested in ``tests/sdk`` and ``tests/backends``.

pyright takes LangGraph's namespace package for one without types (it reports
``reportMissingTypeStubs`` on ``langgraph.graph``), which a user's own configuration would
silence the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, assert_type

import attrs
from starlette.responses import Response
from starlette.routing import Router

from pausetoken import (
    AuditEvent,
    EventKind,
    Interrupt,
    InterruptEvent,
    LoggingObserver,
    PauseTokens,
    Redemption,
    Scope,
    TokenStatus,
    kinds,
    make_converter,
)
from pausetoken.asgi import Caller, ResumeRequest, ResumeResult, problem_response, resume_router
from pausetoken.exceptions import NotAuthenticated
from pausetoken_langgraph import (
    LANGCHAIN_BATCHED,
    LANGCHAIN_PER_CALL,
    Resumed,
    ask,
    mint_pending,
    register_langchain,
    resume,
)

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from starlette.requests import Request


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


class Question(TypedDict):
    text: str


REFUND = Interrupt("refund", payload=Refund, response=Decision)
assert_type(REFUND, Interrupt[Refund, Decision])

QUESTION = Interrupt("question", payload=Question, response=bool, converter=make_converter())
assert_type(QUESTION, Interrupt[Question, bool])

FORM = Interrupt("form", payload=dict[str, Any], response=list[str])
assert_type(FORM, Interrupt[dict[str, Any], list[str]])


def register(tokens: PauseTokens) -> None:
    assert_type(tokens.register(REFUND), Interrupt[Refund, Decision])


async def mint_and_redeem(tokens: PauseTokens, scope: Scope) -> Decision:
    event = await tokens.mint(REFUND, Refund("o-1", 1999), scope=scope, thread_id="t", run_id="r")
    assert_type(event, InterruptEvent[Refund])
    assert_type(event.payload, Refund)
    assert_type(event.token, str)

    async with tokens.redeem(event.token, {"approved": True}, scope=scope, expect=REFUND) as done:
        assert_type(done, Redemption[Refund, Decision])
        assert_type(done.response, Decision)
        # None for a retry that arrives after the run moved on: the payload is gone then.
        assert_type(done.payload, Refund | None)
        assert_type(done.replayed, bool)
        if done.payload is not None:
            assert_type(done.payload.amount_cents, int)
        return done.response


async def consume(tokens: PauseTokens, token: str, scope: Scope) -> bool:
    done = await tokens.consume(token, {"approved": True}, scope=scope, expect=REFUND)
    assert_type(done, Redemption[Refund, Decision])
    assert_type(done.response.approved, bool)
    return done.response.approved


async def by_name(tokens: PauseTokens, scope: Scope) -> None:
    # A name instead of the interrupt, or no expect=, works as before, untyped.
    payload = {"order_id": "o-1", "amount_cents": 1}
    event = await tokens.mint("refund", payload, scope=scope, thread_id="t", run_id="r")
    assert_type(event, InterruptEvent[Any])
    async with tokens.redeem(event.token, {"approved": True}, scope=scope) as done:
        assert_type(done, Redemption[Any, Any])
    assert_type(await tokens.consume(event.token, {}, scope=scope), Redemption[Any, Any])
    assert_type(await tokens.status(event.token, scope=scope), TokenStatus)


class State(TypedDict):
    order_id: str
    status: str


def approve(state: State) -> State:
    decision = ask(REFUND, Refund(state["order_id"], 1999))
    assert_type(decision, Decision)
    named = ask("refund", Refund(state["order_id"], 1999), response=Decision)
    assert_type(named, Decision)
    raw = ask("refund", {"order_id": state["order_id"]})
    assert_type(raw, Any)
    return {"order_id": state["order_id"], "status": "refunded" if decision.approved else "no"}


async def langgraph(
    service: PauseTokens, graph: CompiledStateGraph[State, None, State, State], scope: Scope
) -> Resumed:
    config = {"configurable": {"thread_id": "order-42"}}
    events = await mint_pending(service, graph, config, scope=scope, expect=REFUND)
    assert_type(events, list[InterruptEvent[Refund]])
    assert_type(events[0].payload, Refund)
    untyped = await mint_pending(service, graph, config, scope=scope)
    assert_type(untyped, list[InterruptEvent[Any]])
    resumed = await resume(
        service, graph, events[0].token, {"approved": True}, scope=scope, expect=REFUND
    )
    assert_type(resumed, Resumed)
    return resumed


async def ready_made_kinds(tokens: PauseTokens, scope: Scope) -> None:
    kinds.register(tokens)
    asked = kinds.Questions([kinds.Question("Ship?", [kinds.Option("Yes"), kinds.Option("No")])])
    event = await tokens.mint(kinds.QUESTION, asked, scope=scope, thread_id="t", run_id="r")
    assert_type(event.payload, kinds.Questions)
    answers = {"answers": [{"question_id": "q1", "selected": ["Yes"]}]}
    done = await tokens.consume(event.token, answers, scope=scope, expect=kinds.QUESTION)
    assert_type(done.response, kinds.Answers)
    assert_type(done.response.answers[0].selected, tuple[str, ...])
    action = kinds.Approval(kinds.Action("refund", {"order_id": "o-1"}), ("approve", "reject"))
    approval = await tokens.mint(kinds.APPROVAL, action, scope=scope, thread_id="t", run_id="r")
    decided = await tokens.consume(
        approval.token, {"type": "approve"}, scope=scope, expect=kinds.APPROVAL
    )
    assert_type(decided.response, dict[str, Any])
    assert_type(kinds.check_decisions([{"type": "approve"}], [action]), list[dict[str, Any]])


async def langchain_agent(
    tokens: PauseTokens, agent: CompiledStateGraph[State, None, State, State], scope: Scope
) -> None:
    register_langchain(tokens)
    config = {"configurable": {"thread_id": "ticket-7"}}
    events = await mint_pending(tokens, agent, config, scope=scope, expect=LANGCHAIN_PER_CALL)
    assert_type(events[0].payload, dict[str, Any])
    decision = {"type": "approve"}
    await resume(tokens, agent, events[0].token, decision, scope=scope, expect=LANGCHAIN_PER_CALL)
    assert_type(LANGCHAIN_BATCHED, Interrupt[dict[str, Any], dict[str, Any]])


# -- HTTP (pausetoken.asgi) ------------------------------------------------------------------


def http_router(tokens: PauseTokens) -> None:
    async def authenticate(request: Request) -> Caller:
        if "authorization" not in request.headers:
            raise NotAuthenticated
        return Caller(Scope("acme"), principal="alice")

    async def resume_run(request: ResumeRequest) -> ResumeResult:
        assert_type(request.token, str)
        assert_type(request.scope, Scope)
        assert_type(request.principal, str | None)
        done = await tokens.consume(request.token, request.answer, scope=request.scope)
        return ResumeResult({"approved": True}, replayed=done.replayed)

    router = resume_router(tokens, authenticate=authenticate, resume=resume_run)
    assert_type(router, Router)
    assert_type(problem_response(NotAuthenticated()), Response)


def audit_observers(tokens: PauseTokens) -> PauseTokens:
    """Any callable taking an event observes; its fields are typed."""
    seen: list[str] = []

    def remember(event: AuditEvent) -> None:
        assert_type(event.kind, EventKind)
        assert_type(event.jti, str | None)
        assert_type(event.count, int | None)
        seen.append(event.outcome)

    return PauseTokens(
        signer=tokens.signer,
        store=tokens.store,
        checkpoints=tokens.checkpoints,
        observers=[remember, LoggingObserver()],
    )
