"""AgUi.pause and AgUi.resume: interrupts out with a token, resume entries redeemed once."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from ag_ui.core import RunFinishedSuccessOutcome
from ag_ui.encoder import EventEncoder
from agui_support import (
    APPROVE,
    REFUND,
    Refund,
    RefundAgent,
    answer,
    interrupts,
    resume,
    start,
)

from pausetoken import Interrupt, KeyRing
from pausetoken.exceptions import (
    AlreadyRedeemed,
    InvalidMintRequest,
    InvalidResponse,
    InvalidToken,
    PayloadMismatch,
    PrincipalMismatch,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    TokenExpired,
    UnknownInterrupt,
)
from pausetoken_agui import METADATA_KEY, AgUi, Ask, ProofRefused, Resumable, ThreadState
from scaffolding import ACME, GLOBEX

if TYPE_CHECKING:
    from collections.abc import Callable

    from ag_ui.core import Interrupt as AguiInterrupt

    from pausetoken_agui import SQLThreadStates
    from scaffolding import Clock


async def paused(agui: AgUi, agent: RefundAgent, thread: str) -> AguiInterrupt:
    (interrupt,) = interrupts(await agui.run(start(thread), agent, scope=ACME))
    return interrupt


def token_of(interrupt: AguiInterrupt) -> str:
    assert interrupt.metadata is not None
    token = interrupt.metadata[METADATA_KEY]["token"]
    assert isinstance(token, str)
    return token


# -- what goes out -------------------------------------------------------------------------


async def test_the_interrupt_carries_the_token_its_expiry_and_the_answer_schema(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    finished = await agui.run(start(thread), agent, scope=ACME)
    assert finished.result == "waiting"
    (interrupt,) = interrupts(finished)
    assert interrupt.id == "refund-1"
    assert interrupt.message == "Refund this order?"
    assert interrupt.metadata is not None
    assert set(interrupt.metadata) == {METADATA_KEY}
    claims = agui.service.verify(token_of(interrupt))
    assert claims.interrupt_id == "refund-1"
    assert claims.thread_id == thread
    assert claims.name == "agui:refund"
    assert interrupt.expires_at is not None
    expires = datetime.fromisoformat(interrupt.expires_at)
    assert expires.utcoffset() == timedelta(0)
    assert int(expires.timestamp()) == claims.exp
    assert interrupt.response_schema is not None
    assert interrupt.response_schema["properties"] == {
        "approved": {"type": "boolean"},
        "note": {"type": "string"},
    }
    assert interrupt.response_schema["required"] == ["approved"]
    # On the wire: camelCase, and the token only in metadata.
    wire = json.loads(EventEncoder().encode(finished).removeprefix("data: "))
    (sent,) = wire["outcome"]["interrupts"]
    assert {"responseSchema", "expiresAt", "metadata"} <= sent.keys()
    assert json.dumps({k: v for k, v in sent.items() if k != "metadata"}).find("eyJ") == -1


async def test_a_pause_needs_an_ask_and_distinct_ids(agui: AgUi, thread: str) -> None:
    with pytest.raises(InvalidMintRequest):
        await agui.pause(thread, "run-1", [], scope=ACME)
    twice = [Ask(REFUND, Refund("o", 1), id="x"), Ask(REFUND, Refund("p", 2), id="x")]
    with pytest.raises(InvalidMintRequest):
        await agui.pause(thread, "run-1", twice, scope=ACME)


async def test_a_kind_not_given_to_the_adapter_is_refused_at_pause(agui: AgUi, thread: str) -> None:
    other = Resumable(Interrupt("other", payload=dict, response=dict))
    with pytest.raises(UnknownInterrupt):
        await agui.pause(thread, "run-1", [Ask(other, {})], scope=ACME)


# -- answered once -------------------------------------------------------------------------


async def test_an_approved_resume_runs_the_agent_once_and_completes(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    finished = await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert finished.result == {"refunded": True}
    assert isinstance(finished.outcome, RunFinishedSuccessOutcome)
    assert agent.refunds == [("o-1", 500)]


async def test_a_replay_of_the_same_entry_gets_the_stored_outcome_without_running(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    first = await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    again = await agui.run(
        resume(thread, answer(interrupt, {"approved": True, "note": ""}), run_id="run-3"),
        agent,
        scope=ACME,
    )
    assert again.result == first.result
    assert again.metadata == {METADATA_KEY: {"replayed": True}}
    assert agent.runs == ["run-2"]
    assert agent.refunds == [("o-1", 500)]


async def test_another_payload_for_an_answered_interrupt_is_a_conflict(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    with pytest.raises(AlreadyRedeemed):
        await agui.run(resume(thread, answer(interrupt, {"approved": False})), agent, scope=ACME)
    with pytest.raises(AlreadyRedeemed):
        await agui.run(resume(thread, answer(interrupt, status="cancelled")), agent, scope=ACME)
    assert agent.runs == ["run-2"]


async def test_a_cancelled_entry_is_answered_once_and_then_conflicts_with_a_resolution(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    cancelled = answer(interrupt, status="cancelled")
    finished = await agui.run(resume(thread, cancelled), agent, scope=ACME)
    assert finished.result == {"refunded": False, "cancelled": True}
    replay = await agui.run(resume(thread, cancelled), agent, scope=ACME)
    assert replay.result == finished.result
    with pytest.raises(AlreadyRedeemed):
        await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert agent.refunds == []
    assert agent.runs == ["run-2"]


async def test_a_cancellation_with_a_payload_is_refused_and_the_token_stays_good(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    with pytest.raises(InvalidResponse) as refused:
        await agui.run(
            resume(thread, answer(interrupt, APPROVE, status="cancelled")), agent, scope=ACME
        )
    assert refused.value.field == "$.payload"
    await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert agent.refunds == [("o-1", 500)]


async def test_an_answer_that_does_not_fit_is_refused_and_the_token_stays_good(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    with pytest.raises(InvalidResponse) as refused:
        await agui.run(resume(thread, answer(interrupt, {"approved": "yes"})), agent, scope=ACME)
    assert refused.value.field == "$.approved"
    assert "yes" not in str(refused.value)
    await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert agent.runs == ["run-2"]


async def test_the_kinds_validator_refuses_before_the_agent_runs(agui: AgUi, thread: str) -> None:
    agent = RefundAgent(refund=Refund("o-0", 0))
    interrupt = await paused(agui, agent, thread)
    with pytest.raises(InvalidResponse):
        await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert agent.runs == []


async def test_a_failed_run_releases_the_answer_and_restores_the_thread(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    agent.fail = True
    with pytest.raises(RuntimeError):
        await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert agent.refunds == []
    finished = await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert finished.result == {"refunded": True}
    assert agent.refunds == [("o-1", 500)]


async def test_a_resumed_run_that_asks_again_gets_new_tokens_and_the_old_one_is_spent(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    agent.again = True
    interrupt = await paused(agui, agent, thread)
    first = answer(interrupt, APPROVE)
    (second,) = interrupts(await agui.run(resume(thread, first), agent, scope=ACME))
    assert second.id == "refund-2"
    assert token_of(second) != token_of(interrupt)
    # A replay gets the same outcome, with a fresh token for the pause still pending.
    (replayed,) = interrupts(await agui.run(resume(thread, first), agent, scope=ACME))
    assert replayed.id == "refund-2"
    assert token_of(replayed) != token_of(second)
    agent.again = False
    done = await agui.run(
        resume(thread, answer(replayed, APPROVE), run_id="run-3"), agent, scope=ACME
    )
    assert done.result == {"refunded": True}
    with pytest.raises(AlreadyRedeemed):  # the same pause, whichever of its tokens
        await agui.run(resume(thread, answer(second, {"approved": False})), agent, scope=ACME)
    assert agent.refunds == [("o-1", 500), ("o-2", 300)]
    assert agent.runs == ["run-2", "run-3"]


async def test_a_new_pause_abandons_the_old_one(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    old = await paused(agui, agent, thread)
    await paused(agui, agent, thread)
    with pytest.raises(StaleToken):
        await agui.run(resume(thread, answer(old, APPROVE)), agent, scope=ACME)
    assert agent.runs == []


async def test_the_outcome_of_an_old_answer_is_kept_for_a_while_only(
    agui: AgUi, states: SQLThreadStates, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    entry = answer(interrupt, APPROVE)
    await agui.run(resume(thread, entry), agent, scope=ACME)
    state = await states.load(thread)
    assert state is not None
    forgotten = ThreadState(state.checkpoint_id, state.run_id)
    assert await states.save(thread, forgotten, replaces=state.checkpoint_id)
    with pytest.raises(StaleToken):
        await agui.run(resume(thread, entry), agent, scope=ACME)
    assert agent.runs == ["run-2"]


# -- refused before the agent runs ---------------------------------------------------------


async def test_tampered_arguments_a_replay_another_tenant_and_a_second_worker_are_refused_before_the_agent_runs(  # noqa: E501
    make_agui: Callable[..., AgUi],
    states: SQLThreadStates,
    agent: RefundAgent,
    thread: str,
) -> None:
    agui = make_agui()
    interrupt = await paused(agui, agent, thread)
    entry = answer(interrupt, APPROVE)

    # Tampered arguments: the stored refund was changed after the token was minted.
    state = await states.load(thread)
    assert state is not None
    (waiting,) = state.waiting
    tampered = ThreadState(
        state.checkpoint_id,
        state.run_id,
        waiting=(type(waiting)(**{**_fields(waiting), "value": {"order": "o-1", "cents": 9}}),),
    )
    assert await states.save(thread, tampered, replaces=state.checkpoint_id)
    with pytest.raises(PayloadMismatch):
        await agui.run(resume(thread, entry), agent, scope=ACME)
    assert await states.save(thread, state, replaces=state.checkpoint_id)

    # Another tenant.
    with pytest.raises(ScopeMismatch):
        await agui.run(resume(thread, entry), agent, scope=GLOBEX)

    # A second worker while the first holds the claim.
    agent.gate = asyncio.Event()
    first = asyncio.create_task(agui.run(resume(thread, entry), agent, scope=ACME))
    await agent.started.wait()
    with pytest.raises(RedemptionInProgress):
        await make_agui().run(resume(thread, entry, run_id="run-3"), agent, scope=ACME)
    agent.gate.set()
    await first

    # A replay, and another answer.
    replay = await make_agui().run(resume(thread, entry, run_id="run-4"), agent, scope=ACME)
    assert replay.metadata == {METADATA_KEY: {"replayed": True}}
    with pytest.raises(AlreadyRedeemed):
        await agui.run(resume(thread, answer(interrupt, {"approved": False})), agent, scope=ACME)
    assert agent.runs == ["run-2"]
    assert agent.refunds == [("o-1", 500)]


def _fields(value: Any) -> dict[str, Any]:
    return attrs.asdict(value, recurse=False)


async def test_a_forged_token_is_refused(agui: AgUi, agent: RefundAgent, thread: str) -> None:
    interrupt = await paused(agui, agent, thread)
    token = token_of(interrupt)
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(InvalidToken):
        await agui.run(
            resume(thread, answer(interrupt, APPROVE, metadata={METADATA_KEY: {"token": forged}})),
            agent,
            scope=ACME,
        )
    other_keys = AgUi(
        type(agui.service)(
            signer=type(agui.service.signer)(KeyRing.generate()),  # type: ignore[call-arg]
            store=agui.service.store,
            checkpoints=agui.reader,
        ),
        [REFUND],
    )
    with pytest.raises(InvalidToken):
        await other_keys.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert agent.runs == []


@pytest.mark.parametrize(
    "metadata",
    [None, {}, {METADATA_KEY: None}, {METADATA_KEY: {}}, {METADATA_KEY: {"token": 7}}],
    ids=["none", "empty", "null", "no-token", "not-a-string"],
)
async def test_an_entry_without_a_proof_is_refused(
    agui: AgUi, agent: RefundAgent, thread: str, metadata: dict[str, Any] | None
) -> None:
    interrupt = await paused(agui, agent, thread)
    entry = answer(interrupt, APPROVE).model_copy(update={"metadata": metadata})
    with pytest.raises(ProofRefused) as refused:
        await agui.run(resume(thread, entry), agent, scope=ACME)
    assert refused.value.code == "agui_proof_missing"
    assert refused.value.http_status == 401
    assert agent.runs == []


async def test_a_proof_moved_to_another_interrupt_is_refused(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    two = [Ask(REFUND, Refund("o-1", 1), id="a"), Ask(REFUND, Refund("o-2", 2), id="b")]
    first, second = interrupts(await agui.pause(thread, "run-1", two, scope=ACME))
    swapped = answer(first, APPROVE, metadata=second.metadata)
    with pytest.raises(ProofRefused) as refused:
        await agui.run(resume(thread, swapped, answer(second, APPROVE)), agent, scope=ACME)
    assert refused.value.code == "agui_interrupt_mismatch"


async def test_a_proof_sent_on_another_thread_is_refused(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    interrupt = await paused(agui, agent, thread)
    with pytest.raises(ProofRefused) as refused:
        await agui.run(resume(thread + "-x", answer(interrupt, APPROVE)), agent, scope=ACME)
    assert refused.value.code == "agui_thread_mismatch"


async def test_every_interrupt_of_the_pause_needs_an_entry_and_one_only(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    two = [Ask(REFUND, Refund("o-1", 1), id="a"), Ask(REFUND, Refund("o-2", 2), id="b")]
    first, _ = interrupts(await agui.pause(thread, "run-1", two, scope=ACME))
    with pytest.raises(InvalidResponse):
        await agui.run(resume(thread, answer(first, APPROVE)), agent, scope=ACME)
    with pytest.raises(InvalidResponse):
        await agui.run(
            resume(thread, answer(first, APPROVE), answer(first, APPROVE)), agent, scope=ACME
        )
    with pytest.raises(InvalidResponse):
        await agui.resume(resume(thread), agent, scope=ACME)
    assert agent.runs == []


async def test_an_expired_token_is_refused(
    agui: AgUi, agent: RefundAgent, thread: str, clock: Clock
) -> None:
    interrupt = await paused(agui, agent, thread)
    clock.now += agui.service.ttl.total_seconds() + agui.service.policy.leeway.total_seconds() + 1
    with pytest.raises(TokenExpired):
        await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    assert agent.runs == []


async def test_a_token_bound_to_a_principal_needs_that_principal(
    agui: AgUi, agent: RefundAgent, thread: str
) -> None:
    ask = Ask(REFUND, Refund("o-1", 5), id="p", principal="alice")
    (interrupt,) = interrupts(await agui.pause(thread, "run-1", [ask], scope=ACME))
    with pytest.raises(PrincipalMismatch):
        await agui.run(resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME)
    done = await agui.run(
        resume(thread, answer(interrupt, APPROVE)), agent, scope=ACME, principal="alice"
    )
    assert done.result == {"refunded": True}
