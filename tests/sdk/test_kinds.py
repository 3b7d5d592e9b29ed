"""The ready-made kinds on a service: registered by one call, answers refused before any claim."""

from __future__ import annotations

import warnings

import pytest

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    TokenStatus,
    kinds,
)
from pausetoken.exceptions import ConfigurationError, InvalidResponse
from pausetoken.kinds import (
    APPROVAL,
    QUESTION,
    Action,
    Answer,
    Answers,
    Approval,
    Option,
    Question,
    Questions,
)
from scaffolding import ACME


@pytest.fixture
def tokens() -> PauseTokens:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        store = MemoryStore()
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=MemoryCheckpoints()
    )
    kinds.register(service)
    return service


def test_one_call_registers_every_kind(tokens: PauseTokens) -> None:
    assert kinds.ALL == (QUESTION, APPROVAL)
    assert [tokens.interrupt(kind.name) for kind in kinds.ALL] == [QUESTION, APPROVAL]
    kinds.register(tokens)  # again: the same kinds, nothing to refuse


def test_registering_clashes_with_another_interrupt_of_the_same_name() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        store = MemoryStore()
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=MemoryCheckpoints()
    )
    service.register(Interrupt("pausetoken.approval", payload=dict, response=dict))
    with pytest.raises(ConfigurationError, match="already registered"):
        kinds.register(service)


async def test_a_broken_answer_to_questions_burns_nothing_and_a_good_one_redeems(
    tokens: PauseTokens,
) -> None:
    asked = Questions([Question("Ship today?", [Option("Yes"), Option("No")])])
    event = await tokens.mint(QUESTION, asked, scope=ACME, thread_id="t", run_id="r")
    assert event.payload.questions[0].id == "q1"

    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(
            event.token, {"answers": [{"question_id": "q1", "selected": ["Maybe"]}]}, scope=ACME
        )
    assert caught.value.field == "$.answers[0].selected[0]"
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE

    done = await tokens.consume(
        event.token,
        {"answers": [{"question_id": "q1", "selected": ["Yes"]}]},
        scope=ACME,
        expect=QUESTION,
    )
    assert done.response == Answers([Answer("q1", ["Yes"])])
    assert done.payload == asked


async def test_a_decision_the_approval_does_not_allow_burns_nothing(tokens: PauseTokens) -> None:
    refund = Approval(Action("refund", {"order": "o-1"}), ("approve", "reject"))
    event = await tokens.mint(APPROVAL, refund, scope=ACME, thread_id="t", run_id="r")

    edit = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "o-2"}}}
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(event.token, edit, scope=ACME)
    assert caught.value.field == "$.type"
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE

    done = await tokens.consume(
        event.token, {"type": "reject", "message": "no"}, scope=ACME, expect=APPROVAL
    )
    assert done.response == {"type": "reject", "message": "no"}
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.REDEEMED
