"""Resumable kinds: the answer's schema, the status and payload a redemption binds, errors."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

import attrs
import pytest
from agui_support import REFUND, Decision, interrupts, start
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pausetoken import Interrupt, JoseSigner, KeyRing, MemoryStore, PauseTokens, Scope, kinds
from pausetoken.exceptions import (
    AlreadyRedeemed,
    ConfigurationError,
    InvalidResponse,
    PauseTokenError,
    RedemptionInProgress,
    ScopeMismatch,
    TokenExpired,
)
from pausetoken.kinds import Action, Approval, Option, Question, Questions
from pausetoken.testing.strategies import json_objects
from pausetoken_agui import (
    METADATA_KEY,
    AgUi,
    Ask,
    MemoryThreadStates,
    Outcome,
    ProofForAnotherInterrupt,
    ProofForAnotherThread,
    ProofRefused,
    Resumable,
    Resumption,
    ThreadCheckpoints,
    run_error,
    type_schema,
)
from scaffolding import ACME

# Services here live in one process: the memory store's warning says nothing new.
pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")


def test_a_kind_is_registered_under_its_prefixed_name() -> None:
    assert REFUND.name == "agui:refund"
    assert REFUND.interrupt.payload is REFUND.kind.payload
    with pytest.raises(ConfigurationError):
        Resumable(Interrupt("x" * 125, payload=dict, response=dict))


def test_the_approval_schema_names_the_decisions_allowed() -> None:
    approvals = Resumable(kinds.APPROVAL)
    payload = Approval(Action("refund", {"order": "o-1"}), ("approve", "edit"))
    schema = approvals.schema_for(payload)
    approve, edit = schema["oneOf"]
    assert approve["properties"]["type"] == {"const": "approve"}
    assert edit["properties"]["edited_action"]["properties"]["name"] == {"const": "refund"}
    assert edit["required"] == ["type", "edited_action"]


def test_the_question_schema_offers_each_questions_options() -> None:
    questions = Questions(
        [
            Question("Ship today?", [Option("Yes"), Option("No")]),
            Question(
                "Carriers?",
                [Option("Post"), Option("Courier")],
                multi_select=True,
                allow_other=True,
            ),
        ]
    )
    schema = Resumable(kinds.QUESTION).schema_for(questions)
    first, second = schema["properties"]["answers"]["prefixItems"]
    assert first["properties"]["question_id"] == {"const": "q1"}
    assert first["properties"]["selected"]["items"] == {"enum": ["Yes", "No"]}
    assert first["properties"]["selected"]["maxItems"] == 1
    assert "other" not in first["properties"]
    assert "maxItems" not in second["properties"]["selected"]
    assert "other" in second["properties"]


@dataclasses.dataclass
class Rating:
    stars: int


def test_schemas_are_written_from_the_response_type() -> None:
    assert type_schema(Decision)["required"] == ["approved"]
    assert type_schema(tuple[int, str]) == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
        "minItems": 2,
    }
    assert type_schema(Literal["a", "b"]) == {"enum": ["a", "b"]}
    assert type_schema(dict[str, int]) == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert type_schema(list[int] | None) == {
        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]
    }
    assert type_schema(Rating)["properties"] == {"stars": {"title": "Stars", "type": "integer"}}


def test_a_type_without_a_schema_needs_one_given() -> None:
    class Opaque:
        pass

    with pytest.raises(ConfigurationError):
        Resumable(Interrupt("opaque", payload=dict, response=Opaque))
    given_schema = {"type": "string"}
    kind = Resumable(
        Interrupt("opaque", payload=dict, response=Opaque), response_schema=given_schema
    )
    assert kind.schema_for({}) == given_schema
    by_payload = Resumable(
        Interrupt("opaque", payload=dict, response=Opaque),
        response_schema=lambda payload: {"title": payload["title"]},
    )
    assert by_payload.schema_for({"title": "T"}) == {"title": "T"}


def test_an_envelope_binds_the_status_and_the_typed_answer() -> None:
    assert REFUND.envelope("resolved", {"approved": True}) == {
        "status": "resolved",
        "payload": {"approved": True, "note": ""},
    }
    assert REFUND.envelope("cancelled", None) == {"status": "cancelled", "payload": None}
    with pytest.raises(InvalidResponse) as refused:
        REFUND.envelope("maybe", None)
    assert refused.value.field == "$.status"


# -- the digest binding, as a property ------------------------------------------------------

NOTE = Resumable(Interrupt("note", payload=dict, response=dict))
ENTRIES = st.tuples(st.sampled_from(["resolved", "cancelled"]), json_objects())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=ENTRIES, second=ENTRIES)
async def test_a_second_entry_is_a_replay_exactly_when_it_is_the_same_status_and_payload(
    first: tuple[str, dict[str, Any]], second: tuple[str, dict[str, Any]]
) -> None:
    states = MemoryThreadStates()
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=MemoryStore(),
        checkpoints=ThreadCheckpoints(states),
    )
    agui = AgUi(service, [NOTE])
    runs: list[Any] = []

    async def agent(resumption: Resumption) -> Outcome:
        (answer,) = resumption.answers
        runs.append(answer.response)
        return Outcome(result={"status": answer.status})

    (interrupt,) = interrupts(await agui.pause("t", "r1", [Ask(NOTE, {"n": 1})], scope=ACME))

    def entry(status: str, payload: dict[str, Any]) -> Any:
        from agui_support import answer, resume

        return resume(
            "t", answer(interrupt, None if status == "cancelled" else payload, status=status)
        )

    await agui.run(entry(*first), agent, scope=ACME)
    same = first[0] == second[0] and (
        first[0] == "cancelled"
        or json.dumps(first[1], sort_keys=True) == json.dumps(second[1], sort_keys=True)
    )
    if same:
        replay = await agui.run(entry(*second), agent, scope=ACME)
        assert replay.metadata == {METADATA_KEY: {"replayed": True}}
    else:
        with pytest.raises(AlreadyRedeemed):
            await agui.run(entry(*second), agent, scope=ACME)
    assert len(runs) == 1
    await service.aclose()


# -- RunError --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        ScopeMismatch(),
        TokenExpired(),
        AlreadyRedeemed(),
        ProofRefused(),
        ProofForAnotherInterrupt(),
        ProofForAnotherThread(),
        InvalidResponse("the answer does not fit", field="$.approved"),
        RedemptionInProgress(retry_after=2.5),
    ],
    ids=lambda error: error.code,
)
def test_every_refusal_maps_to_a_run_error_with_its_code(error: PauseTokenError) -> None:
    event = run_error(error)
    assert event.code == error.code
    assert event.message == error.detail
    assert event.metadata is not None
    details = event.metadata[METADATA_KEY]
    assert details["status"] == error.http_status
    if isinstance(error, InvalidResponse):
        assert details["field"] == "$.approved"
    if isinstance(error, RedemptionInProgress):
        assert details["retryAfter"] == 2.5


async def test_the_stream_ends_a_refused_run_with_a_run_error_and_no_secret() -> None:
    states = MemoryThreadStates()
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=MemoryStore(),
        checkpoints=ThreadCheckpoints(states),
    )
    agui = AgUi(service, [REFUND])
    from agui_support import RefundAgent, answer, resume

    agent = RefundAgent()
    (interrupt,) = interrupts(await agui.run(start("t"), agent, scope=ACME))
    payload = {"approved": True, "note": "secret-note"}
    events = [
        event
        async for event in agui.stream(
            resume("t", answer(interrupt, payload)), agent, scope=Scope("globex")
        )
    ]
    started, error = events
    assert started.type == "RUN_STARTED"
    assert error.type == "RUN_ERROR"
    text = error.model_dump_json(by_alias=True)
    assert '"code":"scope_mismatch"' in text
    assert interrupt.metadata is not None
    assert interrupt.metadata[METADATA_KEY]["token"] not in text
    assert "secret-note" not in text
    assert agent.runs == []
    await service.aclose()


def test_attrs_classes_with_private_fields_are_described_by_their_init_names() -> None:
    @attrs.frozen
    class Private:
        _hidden: int

    assert type_schema(Private)["properties"] == {"hidden": {"type": "integer"}}
