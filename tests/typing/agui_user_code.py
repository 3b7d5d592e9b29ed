# pyright: strict, reportMissingTypeStubs=false
"""User code of the AG-UI integration the type checkers must understand.

The typing session runs ``mypy --strict`` and pyright in strict mode on this file: each
``assert_type`` states a type that user code relies on. Nothing here runs in the test
suite (the functions are never called); the behaviour is tested in ``tests/backends/agui``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, assert_type

import attrs
from ag_ui.core import BaseEvent, ResumeEntry, RunAgentInput, RunErrorEvent, RunFinishedEvent
from ag_ui.core import Interrupt as AguiInterrupt

from pausetoken import Interrupt, InterruptEvent, PauseTokens, Scope, kinds
from pausetoken.exceptions import InvalidToken, PauseTokenError
from pausetoken.kinds import Approval
from pausetoken.plugins import CheckpointReader, PendingInterrupt
from pausetoken_agui import (
    AgUi,
    Answer,
    Ask,
    MemoryThreadStates,
    Outcome,
    ProofForAnotherInterrupt,
    ProofRefused,
    Resumable,
    Resumption,
    SQLThreadStates,
    ThreadCheckpoints,
    ThreadState,
    ThreadStates,
    proof_of,
    run_error,
    to_interrupt,
)


@attrs.frozen
class Refund:
    order: str
    cents: int


@attrs.frozen
class Decision:
    approved: bool


REFUND = Resumable(Interrupt("refund", payload=Refund, response=Decision))
APPROVAL = Resumable(kinds.APPROVAL)


def kinds_are_typed() -> None:
    assert_type(REFUND, Resumable[Refund, Decision])
    assert_type(REFUND.interrupt, Interrupt[Refund, dict[str, Any]])
    assert_type(REFUND.schema_for(Refund("o", 1)), dict[str, Any])
    assert_type(APPROVAL, Resumable[Approval, dict[str, Any]])
    assert_type(Ask(REFUND, Refund("o", 1)), Ask[Refund])


async def agent(run: Resumption) -> Outcome:
    answer = run.answer(REFUND)
    assert_type(answer, Answer[Refund, Decision])
    assert_type(answer.payload, Refund)
    assert_type(answer.response, Decision | None)
    run.ensure_held()
    return Outcome(result={"paid": answer.response is not None and answer.response.approved})


def readers(states: MemoryThreadStates, sql: SQLThreadStates) -> None:
    reader: CheckpointReader = ThreadCheckpoints(states, namespace="refunds")
    other: ThreadStates = sql
    assert_type(ThreadCheckpoints(other).states, ThreadStates)
    del reader


async def states_are_typed(states: ThreadStates) -> None:
    state = await states.load("t")
    assert_type(state, ThreadState | None)
    assert_type(await states.save("t", ThreadState("c", "r"), replaces=None), bool)
    pending = await ThreadCheckpoints(states).pending(
        thread_id="t", checkpoint_id="c", interrupt_id="i"
    )
    assert_type(pending, PendingInterrupt)


async def serve(service: PauseTokens, run_input: RunAgentInput, scope: Scope) -> None:
    agui = AgUi(service, [REFUND, APPROVAL])
    assert_type(await agui.run(run_input, agent, scope=scope), RunFinishedEvent)
    assert_type(await agui.resume(run_input, agent, scope=scope), RunFinishedEvent)
    paused = await agui.pause("t", "r", [Ask(REFUND, Refund("o", 1))], scope=scope)
    assert_type(paused, RunFinishedEvent)
    stream = agui.stream(run_input, agent, scope=scope)
    assert_type(stream, AsyncIterator[BaseEvent])
    try:
        await agui.run(run_input, agent, scope=scope)
    except PauseTokenError as exc:
        assert_type(run_error(exc), RunErrorEvent)


def proofs(entry: ResumeEntry, event: InterruptEvent[Refund]) -> None:
    assert_type(proof_of(entry), str)
    assert_type(to_interrupt(event, REFUND, reason="approval"), AguiInterrupt)
    refused: InvalidToken = ProofForAnotherInterrupt()
    base: ProofRefused = ProofForAnotherInterrupt()
    del refused, base
