"""What the AG-UI integration tests share: a refund agent that counts its runs, and inputs."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
from ag_ui.core import Interrupt as AguiInterrupt
from ag_ui.core import ResumeEntry, RunAgentInput, RunFinishedEvent, RunFinishedInterruptOutcome

from pausetoken import Interrupt
from pausetoken_agui import Ask, Outcome, Resumable, Resumption


@attrs.frozen
class Refund:
    order: str
    cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


def _no_zero_refunds(decision: Decision, refund: Refund) -> None:
    if decision.approved and refund.cents <= 0:
        msg = "nothing to refund"
        raise ValueError(msg)


REFUND = Resumable(
    Interrupt("refund", payload=Refund, response=Decision, validate=_no_zero_refunds)
)


@attrs.define
class RefundAgent:
    """Asks to approve a refund, then refunds it once approved: every body run is counted.

    ``gate`` makes a resumed run wait until it is set (to hold a claim while another worker
    tries); ``fail`` makes the next resumed run raise; ``again`` makes a resumed run ask
    for another refund.
    """

    refund: Refund = Refund("o-1", 500)
    runs: list[str] = attrs.Factory(list)
    refunds: list[tuple[str, int]] = attrs.Factory(list)
    gate: asyncio.Event | None = None
    started: asyncio.Event = attrs.Factory(asyncio.Event)
    fail: bool = False
    again: bool = False

    async def __call__(self, resumption: Resumption) -> Outcome:
        if not resumption.answers:
            return Outcome(
                result="waiting",
                asks=[Ask(REFUND, self.refund, message="Refund this order?", id="refund-1")],
            )
        self.runs.append(resumption.input.run_id)
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            self.fail = False
            msg = "the payment provider is down"
            raise RuntimeError(msg)
        answer = resumption.answer(REFUND)
        if answer.status == "cancelled":
            return Outcome(result={"refunded": False, "cancelled": True})
        assert answer.response is not None
        if answer.response.approved:
            resumption.ensure_held()
            self.refunds.append((answer.payload.order, answer.payload.cents))
        if self.again:
            return Outcome(
                result={"refunded": answer.response.approved},
                asks=[Ask(REFUND, Refund("o-2", 300), id="refund-2")],
            )
        return Outcome(result={"refunded": answer.response.approved})


def start(thread_id: str, run_id: str = "run-1") -> RunAgentInput:
    """A run that resumes nothing."""
    return RunAgentInput(thread_id=thread_id, run_id=run_id, messages=[])


def interrupts(finished: RunFinishedEvent) -> list[AguiInterrupt]:
    """The interrupts a run ended with."""
    outcome = finished.outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    return list(outcome.interrupts)


def answer(
    interrupt: AguiInterrupt,
    payload: Any = None,
    *,
    status: str = "resolved",
    metadata: dict[str, Any] | None = None,
) -> ResumeEntry:
    """The resume entry a client sends back: the interrupt's metadata returned unchanged."""
    return ResumeEntry.model_validate(
        {
            "interruptId": interrupt.id,
            "status": status,
            "payload": payload,
            "metadata": interrupt.metadata if metadata is None else metadata,
        }
    )


def resume(thread_id: str, *entries: ResumeEntry, run_id: str = "run-2") -> RunAgentInput:
    """A run that answers interrupts."""
    return RunAgentInput(thread_id=thread_id, run_id=run_id, messages=[], resume=list(entries))


APPROVE = {"approved": True}
