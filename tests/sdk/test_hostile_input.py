"""Bad input at the service's edges: the precise typed error, and nothing submitted echoed.

Every refusal is asserted by its exact ``code``, and every error's message, detail, repr,
problem details and the log records around it are searched for the submitted values.
"""

from __future__ import annotations

import enum
import json
import logging
import uuid  # noqa: TC003 - cattrs resolves the annotation at run time
from datetime import timedelta
from typing import Any, Literal

import attrs
import pydantic
import pytest

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    PauseTokens,
    Settings,
)
from pausetoken.exceptions import (
    ConfigurationError,
    InvalidMintRequest,
    InvalidResponse,
    PauseTokenError,
    PrincipalMismatch,
    TokenExpired,
    UnsupportedPayload,
)
from scaffolding import ACME, Clock, Opaque

pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")

SECRET = "SSN-078-05-1120"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Choice:
    pick: Literal[1, 2]
    level: Level = Level.LOW
    notes: dict[str, int] = attrs.field(factory=dict)
    ratio: float = 0.5


class PydanticAnswer(pydantic.BaseModel):
    approved: bool
    amount_cents: int


@attrs.frozen
class WithUuid:
    ref: uuid.UUID


def refuse_everything(response: Any, payload: Any) -> None:
    msg = f"refused because {SECRET}"
    raise RuntimeError(msg)


CHOICE = Interrupt("choice", payload=dict, response=Choice)
PYDANTIC = Interrupt("pydantic", payload=dict, response=PydanticAnswer)
GUARDED = Interrupt("guarded", payload=dict, response=dict, validate=refuse_everything)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def checkpoints() -> MemoryCheckpoints:
    return MemoryCheckpoints()


@pytest.fixture
def tokens(clock: Clock, checkpoints: MemoryCheckpoints) -> PauseTokens:
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=MemoryStore(),
        checkpoints=checkpoints,
        clock=clock,
    )
    for interrupt in (CHOICE, PYDANTIC, GUARDED):
        service.register(interrupt)
    return service


async def mint(tokens: PauseTokens, name: str, **options: Any) -> str:
    event = await tokens.mint(
        name,
        {"shown": "x"},
        scope=options.pop("scope", ACME),
        thread_id=options.pop("thread_id", "thread-1"),
        run_id="run-1",
        **options,
    )
    return event.token


def assert_nothing_echoed(
    error: PauseTokenError, caplog: pytest.LogCaptureFixture, *secrets: str
) -> None:
    shown = [
        str(error),
        error.detail,
        repr(error),
        json.dumps(error.to_problem()),
        *(record.getMessage() for record in caplog.records),
        *(repr(record.__dict__) for record in caplog.records),
    ]
    for secret in secrets:
        for text in shown:
            assert secret not in text


# -- 4. policy bounds ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "setting"),
    [
        ({"leeway": timedelta(minutes=6)}, "leeway"),
        ({"max_lifetime": timedelta(days=31), "ttl": timedelta(days=1)}, "max_lifetime"),
        ({"ttl": timedelta(seconds=30)}, "ttl"),
        ({"ttl": timedelta(seconds=10)}, "ttl"),
        ({"ttl": timedelta(days=8)}, "ttl"),
        ({"lease": timedelta(milliseconds=999)}, "lease"),
    ],
)
def test_durations_outside_their_range_are_refused_at_start_up(
    changes: dict[str, timedelta], setting: str, checkpoints: MemoryCheckpoints
) -> None:
    with pytest.raises(ConfigurationError, match=f"^\\[settings_invalid\\] {setting} "):
        Settings(store_url="memory://", keys=KeyRing.generate(), **changes)
    with pytest.raises(ConfigurationError, match=f"^\\[policy_invalid\\] {setting} "):
        PauseTokens(
            signer=JoseSigner(KeyRing.generate()),
            store=MemoryStore(),
            checkpoints=checkpoints,
            **changes,
        )


def test_durations_at_the_edges_of_their_range_are_accepted() -> None:
    settings = Settings(
        store_url="memory://",
        keys=KeyRing.generate(),
        leeway=timedelta(minutes=5),
        max_lifetime=timedelta(days=30),
        ttl=timedelta(days=30),
        lease=timedelta(seconds=1),
    )
    assert settings.max_lifetime == timedelta(days=30)


# -- 5. mint refuses what could never verify ---------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"principal": ""}, "principal"),
        ({"tool_call_id": ""}, "tool_call_id"),
        ({"thread_id": "t" * 513}, "thread_id"),
        ({"interrupt_id": "i" * 513}, "interrupt_id"),
        ({"session_id": "s" * 513}, "session_id"),
        ({"ttl": timedelta(seconds=20)}, "ttl"),
        ({"scope": None}, "scope"),
    ],
)
async def test_mint_refuses_arguments_that_could_never_verify_before_recording_anything(
    tokens: PauseTokens, checkpoints: MemoryCheckpoints, options: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidMintRequest) as caught:
        await mint(tokens, "choice", **options)
    assert caught.value.code == "mint_request_invalid"
    assert caught.value.detail.startswith(named)
    assert checkpoints.current("thread-1") is None


def test_a_response_type_that_cannot_be_read_from_json_is_refused_at_register(
    tokens: PauseTokens,
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        tokens.register(Interrupt("lookup", payload=dict, response=WithUuid))
    assert caught.value.code == "interrupt_type_unsupported"
    with pytest.raises(ConfigurationError) as caught:
        tokens.register(Interrupt("lookup", payload=WithUuid, response=dict))
    assert caught.value.code == "interrupt_type_unsupported"


async def test_an_expired_token_says_which_setting_sets_its_lifetime(
    tokens: PauseTokens, clock: Clock
) -> None:
    token = await mint(tokens, "choice", ttl=timedelta(minutes=5))
    clock.now += 3600
    with pytest.raises(TokenExpired) as caught:
        await tokens.consume(token, {"pick": 1}, scope=ACME)
    assert "PAUSETOKEN_TTL" in caught.value.detail
    assert "ttl" in caught.value.detail


# -- 6. strict answers --------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        {"pick": True},
        {"pick": 1.0},
        {"pick": "1"},
        {"pick": 1, "level": True},
        {"pick": 1, "level": 1.0},
        {"pick": 1, "level": "LOW"},
    ],
)
async def test_literal_and_enum_answers_accept_only_their_exact_values(
    tokens: PauseTokens, answer: dict[str, Any]
) -> None:
    token = await mint(tokens, "choice")
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(token, answer, scope=ACME)
    assert caught.value.code == "invalid_response"
    assert caught.value.http_status == 422
    done = await tokens.consume(token, {"pick": 1, "level": 2}, scope=ACME)
    assert done.response == Choice(pick=1, level=Level.HIGH)


@pytest.mark.parametrize(
    "answer",
    [
        {"approved": "yes", "amount_cents": 1},
        {"approved": "on", "amount_cents": 1},
        {"approved": "1", "amount_cents": 1},
        {"approved": 1, "amount_cents": 1},
        {"approved": True, "amount_cents": "5000"},
        {"approved": True, "amount_cents": 5000.0},
    ],
)
async def test_pydantic_answers_are_validated_strictly(
    tokens: PauseTokens, answer: dict[str, Any]
) -> None:
    token = await mint(tokens, "pydantic")
    with pytest.raises(InvalidResponse):
        await tokens.consume(token, answer, scope=ACME)
    done = await tokens.consume(token, {"approved": True, "amount_cents": 5000}, scope=ACME)
    assert done.response == PydanticAnswer(approved=True, amount_cents=5000)


async def test_a_non_ascii_principal_can_answer_and_others_are_refused(
    tokens: PauseTokens,
) -> None:
    token = await mint(tokens, "choice", principal="zoë@example.com")
    with pytest.raises(PrincipalMismatch):
        await tokens.consume(token, {"pick": 1}, scope=ACME, principal="zoé@example.com")
    done = await tokens.consume(token, {"pick": 1}, scope=ACME, principal="zoë@example.com")
    assert done.replayed is False


# -- 7. nothing submitted in errors -------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "path"),
    [
        ({"pick": SECRET}, "$.pick"),
        ({"pick": 1, SECRET: 1}, "$"),
        ({"pick": 1, "notes": {SECRET: "x"}}, "$.notes[*]"),
        ({"pick": 1, "level": SECRET}, "$.level"),
    ],
)
async def test_an_invalid_answer_is_described_without_its_values_or_keys(
    tokens: PauseTokens,
    caplog: pytest.LogCaptureFixture,
    answer: dict[str, Any],
    path: str,
) -> None:
    caplog.set_level(logging.DEBUG, logger="pausetoken")
    token = await mint(tokens, "choice")
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(token, answer, scope=ACME)
    assert caught.value.field == path
    assert caught.value.to_problem()["field"] == path
    assert_nothing_echoed(caught.value, caplog, SECRET)


async def test_a_pydantic_error_names_the_model_field_not_the_submitted_key(
    tokens: PauseTokens, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pausetoken")
    token = await mint(tokens, "pydantic")
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(token, {"approved": SECRET, "amount_cents": 1}, scope=ACME)
    assert caught.value.field == "$.approved"
    assert_nothing_echoed(caught.value, caplog, SECRET)


async def test_an_answer_that_cannot_be_hashed_is_an_invalid_response(
    tokens: PauseTokens,
) -> None:
    token = await mint(tokens, "choice")
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(token, {"pick": 1, "ratio": float("nan")}, scope=ACME)
    assert (caught.value.code, caught.value.http_status) == ("invalid_response", 422)


@pytest.mark.parametrize("answer", [Opaque(), [Opaque()], {"nested": Opaque()}])
async def test_an_answer_of_an_unhashable_class_is_an_invalid_response(
    tokens: PauseTokens, answer: object
) -> None:
    token = await mint(tokens, "guarded")
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(token, {"x": answer}, scope=ACME)
    assert caught.value.code == "invalid_response"


@attrs.define
class Holder:
    held: Any


@attrs.define
class OpaqueRecord(metaclass=type(Opaque)):
    held: int = 1


@pytest.mark.parametrize(
    "payload",
    [Opaque(), [Opaque()], {"nested": Opaque()}, Holder(Opaque()), OpaqueRecord()],
    ids=["value", "in-list", "in-dict", "in-record-field", "record"],
)
async def test_a_payload_of_an_unhashable_class_is_unsupported(
    tokens: PauseTokens, payload: object
) -> None:
    with pytest.raises(UnsupportedPayload) as caught:
        await tokens.mint(
            "guarded", {"x": payload}, scope=ACME, thread_id="thread-1", run_id="run-1"
        )
    assert caught.value.code == "unsupported_payload"


async def test_a_validator_that_raises_anything_is_an_invalid_response_naming_its_type(
    tokens: PauseTokens, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pausetoken")
    token = await mint(tokens, "guarded")
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(token, {"answer": SECRET}, scope=ACME)
    assert "RuntimeError" in caught.value.detail
    assert_nothing_echoed(caught.value, caplog, SECRET, "refused because")


@attrs.frozen
class Routing:
    carriers: list[str]
    regions: tuple[str, ...]
    limits: dict[str, int]
    tags: frozenset[str] = frozenset()
    pair: tuple[str, int] = ("a", 1)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("carriers", "post"),  # a string is not a list of its characters
        ("carriers", {"post": 1}),  # a mapping is not the list of its keys
        ("carriers", b"post"),
        ("regions", "eu"),
        ("regions", {"eu": True}),
        ("limits", [["post", 1]]),  # pairs are not a mapping
        ("limits", "x"),
        ("tags", "urgent"),
        ("tags", {"urgent": 1}),
        ("pair", "a1"),
        ("pair", {"a": 1}),
    ],
)
def test_a_collection_is_read_only_from_its_own_json_type(field: str, value: object) -> None:
    interrupt = Interrupt("route", payload=dict, response=Routing)
    answer: dict[str, object] = {
        "carriers": ["post"],
        "regions": ["eu"],
        "limits": {"post": 1},
        "tags": ["urgent"],
        "pair": ["a", 1],
    }
    assert interrupt.structure_response(answer) == Routing(
        ["post"], ("eu",), {"post": 1}, frozenset({"urgent"}), ("a", 1)
    )
    with pytest.raises(InvalidResponse) as caught:
        interrupt.structure_response({**answer, field: value})
    assert caught.value.field == f"$.{field}"
    assert "post" not in caught.value.detail
    assert "urgent" not in caught.value.detail


@pytest.mark.parametrize(
    ("kind", "value"),
    [(list[str], "abc"), (tuple[int, ...], {"1": 2}), (dict[str, str], [("a", "b")])],
)
def test_a_top_level_collection_answer_is_read_only_from_its_own_json_type(
    kind: object, value: object
) -> None:
    interrupt = Interrupt("top", payload=dict, response=kind)
    with pytest.raises(InvalidResponse):
        interrupt.structure_response(value)
