# pyright: strict, reportMissingTypeStubs=false, reportUnnecessaryTypeIgnoreComment=true
"""Mistakes in user code that the type checkers must report.

Each mistake carries a ``# type: ignore[...]`` naming mypy's error code. An ignore that is not
needed is itself an error for ``mypy --strict`` (``warn_unused_ignores``) and for pyright
(``reportUnnecessaryTypeIgnoreComment``, turned on above), so the typing session fails when
either checker stops reporting one of these mistakes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from pausetoken import Interrupt, PauseTokens, Redemption, Scope
from pausetoken_langgraph import ask, mint_pending, resume

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


REFUND = Interrupt("refund", payload=Refund, response=Decision)


async def redeem(tokens: PauseTokens, token: str, scope: Scope) -> tuple[str, str]:
    async with tokens.redeem(token, {}, scope=scope, expect=REFUND) as done:
        approved: str = done.response.approved  # type: ignore[assignment]
        # The payload is None for a late retry: it must be checked first.
        return approved, done.payload.order_id  # type: ignore[union-attr]


async def consume(tokens: PauseTokens, token: str, scope: Scope) -> None:
    # expect= takes the interrupt, not its name.
    await tokens.consume(token, {}, scope=scope, expect="refund")  # type: ignore[arg-type]


def policy(tokens: PauseTokens) -> PauseTokens:
    # The policy's keywords are checked: a duration is a timedelta, and a name is spelled right.
    built = PauseTokens(
        signer=tokens.signer,
        store=tokens.store,
        checkpoints=tokens.checkpoints,
        ttl="1h",  # type: ignore[arg-type]
    )
    return PauseTokens(
        signer=built.signer,
        store=built.store,
        checkpoints=built.checkpoints,
        tll=built.ttl,  # type: ignore[call-arg]
    )


async def mint(tokens: PauseTokens, scope: Scope) -> object:
    event = await tokens.mint(REFUND, Refund("o-1", 1), scope=scope, thread_id="t", run_id="r")
    return event.payload.amount  # type: ignore[attr-defined]


def node(state: dict[str, Any]) -> dict[str, Any]:
    # The interrupt brings its response type; a second one is refused.
    decision = ask(REFUND, Refund("o-1", 1), response=Decision)  # type: ignore[call-overload]
    return {"approved": decision.approved}


async def minted_in_langgraph(
    service: PauseTokens, graph: CompiledStateGraph[Any, None, Any, Any], scope: Scope
) -> object:
    config = {"configurable": {"thread_id": "order-42"}}
    events = await mint_pending(service, graph, config, scope=scope, expect=REFUND)
    return events[0].payload.amount  # type: ignore[attr-defined]


async def resumed_in_langgraph(
    service: PauseTokens, graph: CompiledStateGraph[Any, None, Any, Any], scope: Scope
) -> None:
    # The service is `service` now, not `tokens` beside the `token`.
    await resume(tokens=service, graph=graph, token="t", response={}, scope=scope)  # type: ignore[call-arg]


async def a_resume_function_returning_the_redemption(tokens: PauseTokens) -> None:
    from pausetoken.asgi import Caller, ResumeRequest, resume_router

    async def authenticate(request: object) -> Caller:
        return Caller(Scope("acme"))

    async def resume_run(request: ResumeRequest) -> Redemption[Any, Any]:
        return await tokens.consume(request.token, request.answer, scope=request.scope)

    # The router sends a ResumeResult: a redemption is not one.
    resume_router(tokens, authenticate=authenticate, resume=resume_run)  # type: ignore[arg-type]
