"""The question kind: payload limits, stamped ids, and every rule an answer must follow."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausetoken.exceptions import InvalidResponse, UnsupportedPayload
from pausetoken.kinds import (
    MAX_OTHER_CHARS,
    QUESTION,
    Answer,
    Answers,
    Option,
    Question,
    Questions,
    check_answers,
)
from pausetoken.testing import strategies as pst

# Text a person might type; the tests look for it in errors, which must never quote it.
SECRET = "s3cr3t-answer-text"

LABELS = st.text(min_size=1, max_size=10).filter(str.strip)
OTHER = st.text(min_size=1, max_size=40).filter(str.strip)


@st.composite
def asked(draw: st.DrawFn) -> Questions:
    """One to four questions with two to four options each, every flag combination."""
    found = []
    for _ in range(draw(st.integers(1, 4))):
        labels = draw(st.lists(LABELS, min_size=2, max_size=4, unique=True))
        found.append(
            Question(
                draw(LABELS),
                [Option(label, draw(st.text(max_size=10))) for label in labels],
                multi_select=draw(st.booleans()),
                allow_other=draw(st.booleans()),
            )
        )
    return Questions(found)


@st.composite
def answer_to(draw: st.DrawFn, question: Question) -> dict[str, Any]:
    """An answer to one question built from its options under its rules."""
    offered = [option.label for option in question.options]
    other = None
    if question.multi_select:
        selected = draw(st.lists(st.sampled_from(offered), unique=True))
        if question.allow_other and (not selected or draw(st.booleans())):
            other = draw(OTHER)
        if not selected and other is None:
            selected = [draw(st.sampled_from(offered))]
    elif question.allow_other and draw(st.booleans()):
        selected, other = [], draw(OTHER)
    else:
        selected = [draw(st.sampled_from(offered))]
    answer: dict[str, Any] = {"question_id": question.id}
    if selected or draw(st.booleans()):
        answer["selected"] = selected
    if other is not None:
        answer["other"] = other
    return answer


@st.composite
def answers_to(draw: st.DrawFn, questions: Questions) -> dict[str, Any]:
    """A valid answer to every question, in any order."""
    each = [draw(answer_to(question)) for question in questions.questions]
    return {"answers": draw(st.permutations(each))}


def answer(questions: Questions, raw: Any) -> Answers:
    """What redeeming does to an answer before anything is claimed: structure, then validate."""
    typed = QUESTION.structure_response(raw)
    check_answers(typed, questions)
    return typed


def refusal(questions: Questions, raw: Any) -> InvalidResponse:
    with pytest.raises(InvalidResponse) as caught:
        answer(questions, raw)
    return caught.value


SHIP = Questions(
    [
        Question("Ship today?", [Option("Yes"), Option("No", "wait for Monday")]),
        Question(
            "Which carriers?",
            [Option("Post"), Option("Courier"), Option("Pickup")],
            multi_select=True,
            allow_other=True,
        ),
    ]
)


def test_question_ids_are_stamped_from_positions_whatever_was_given() -> None:
    given_ids = Questions(
        [
            Question("A?", [Option("1"), Option("2")], id="evil"),
            Question("B?", [Option("1"), Option("2")], id="q1"),
        ]
    )
    assert [q.id for q in given_ids.questions] == ["q1", "q2"]
    raw = QUESTION.to_json(given_ids)
    raw["questions"][0]["id"] = "chosen-by-someone"
    assert QUESTION.structure_payload(raw) == given_ids


@pytest.mark.parametrize(
    "build",
    [
        lambda: Questions([]),
        lambda: Questions([Question("A?", [Option("1"), Option("2")])] * 5),
        lambda: Question("A?", [Option("1")]),
        lambda: Question("A?", [Option(str(n)) for n in range(5)]),
        lambda: Question("A?", [Option("1"), Option("1")]),
        lambda: Question(" ", [Option("1"), Option("2")]),
        lambda: Option(""),
    ],
    ids=[
        "no-question",
        "five-questions",
        "one-option",
        "five-options",
        "repeated-label",
        "blank-question",
        "blank-label",
    ],
)
def test_payloads_outside_the_limits_cannot_be_built(build: Any) -> None:
    with pytest.raises(ValueError, match=r"question|option|label"):
        build()


def test_a_payload_outside_the_limits_is_refused_at_mint_as_unsupported() -> None:
    raw = QUESTION.to_json(SHIP)
    raw["questions"][0]["options"] = raw["questions"][0]["options"][:1]
    with pytest.raises(UnsupportedPayload):
        QUESTION.structure_payload(raw)


def test_an_answer_to_every_question_is_accepted() -> None:
    typed = answer(
        SHIP,
        {
            "answers": [
                {"question_id": "q2", "selected": ["Courier", "Post"], "other": "by bike"},
                {"question_id": "q1", "selected": ["No"]},
            ]
        },
    )
    assert typed == Answers([Answer("q2", ("Courier", "Post"), "by bike"), Answer("q1", ("No",))])


@pytest.mark.parametrize(
    ("answers", "field", "rule"),
    [
        ([{"question_id": "q1", "selected": ["Yes"]}], "$.answers", "'q2' is not answered"),
        (
            [
                {"question_id": "q1", "selected": ["Yes"]},
                {"question_id": "q1", "selected": ["No"]},
                {"question_id": "q2", "selected": ["Post"]},
            ],
            "$.answers[1].question_id",
            "'q1' is answered more than once",
        ),
        (
            [
                {"question_id": "q1", "selected": ["Yes"]},
                {"question_id": SECRET, "selected": ["Post"]},
            ],
            "$.answers[1].question_id",
            "names no question asked",
        ),
        (
            [
                {"question_id": "q1", "selected": [SECRET]},
                {"question_id": "q2", "selected": ["Post"]},
            ],
            "$.answers[0].selected[0]",
            "'q1': not one of the offered labels",
        ),
        (
            [
                {"question_id": "q1", "selected": ["Yes"]},
                {"question_id": "q2", "selected": ["Post", "Post"]},
            ],
            "$.answers[1].selected",
            "'q2': an option is selected more than once",
        ),
        (
            [
                {"question_id": "q1", "selected": ["Yes", "No"]},
                {"question_id": "q2", "selected": ["Post"]},
            ],
            "$.answers[0].selected",
            "'q1' is single-select",
        ),
        (
            [
                {"question_id": "q1", "selected": [], "other": SECRET},
                {"question_id": "q2", "selected": ["Post"]},
            ],
            "$.answers[0].other",
            "'q1' does not allow an answer in other words",
        ),
        (
            [
                {"question_id": "q1", "selected": ["Yes"]},
                {"question_id": "q2", "selected": []},
            ],
            "$.answers[1]",
            "'q2' is not answered: nothing selected",
        ),
        (
            [
                {"question_id": "q1", "selected": ["Yes"]},
                {"question_id": "q2", "other": "   "},
            ],
            "$.answers[1].other",
            "'q2': other words must be 1 to",
        ),
        (
            [
                {"question_id": "q1", "selected": ["Yes"]},
                {"question_id": "q2", "other": SECRET * MAX_OTHER_CHARS},
            ],
            "$.answers[1].other",
            "'q2': other words must be 1 to",
        ),
        (
            [
                {"question_id": "q1", "selected": SECRET},
                {"question_id": "q2", "selected": ["Post"]},
            ],
            "$.answers[0].selected",
            "expected a list of labels",
        ),
    ],
    ids=[
        "unanswered",
        "answered-twice",
        "unknown-question",
        "label-not-offered",
        "label-twice",
        "two-for-single-select",
        "other-not-allowed",
        "nothing-chosen",
        "blank-other",
        "overlong-other",
        "a-string-for-the-labels",
    ],
)
def test_each_broken_rule_is_refused_naming_the_question_and_the_rule(
    answers: list[dict[str, Any]], field: str, rule: str
) -> None:
    error = refusal(SHIP, {"answers": answers})
    assert error.field == field
    assert rule in error.detail
    assert error.http_status == 422
    assert SECRET not in str(error)
    assert SECRET not in repr(error)
    assert SECRET not in str(error.to_problem())


@given(st.data())
def test_any_answer_built_from_the_offered_options_under_the_rules_is_accepted(
    data: st.DataObject,
) -> None:
    questions = data.draw(asked())
    raw = data.draw(answers_to(questions))
    typed = answer(questions, raw)
    assert {a.question_id for a in typed.answers} == {q.id for q in questions.questions}


def _mutations(questions: Questions, raw: dict[str, Any]) -> dict[str, Any]:
    """Ways to break one rule, each applicable to this answer or not (``None``)."""
    answers = raw["answers"]
    by_id = {q.id: q for q in questions.questions}
    first = answers[0]
    question = by_id[first["question_id"]]
    chosen = len(first.get("selected", [])) + ("other" in first)
    labels = [o.label for o in question.options]
    broken: dict[str, Any] = {
        "drop-an-answer": answers[1:],
        "answer-twice": [*answers, first],
        "unknown-question": [*answers, {"question_id": "q9", "selected": labels[:1]}],
        "label-not-offered": [
            {**first, "selected": [*first.get("selected", []), "\x00not-offered"]},
            *answers[1:],
        ],
        "nothing-chosen": [{"question_id": first["question_id"]}, *answers[1:]],
    }
    if first.get("selected"):
        repeated = [*first["selected"], first["selected"][0]]
        broken["label-twice"] = [{**first, "selected": repeated}, *answers[1:]]
    if not question.allow_other:
        broken["other-not-allowed"] = [{**first, "other": "words"}, *answers[1:]]
    else:
        broken["blank-other"] = [{**first, "other": " "}, *answers[1:]]
    if not question.multi_select:
        extra = next(label for label in labels if label not in first.get("selected", []))
        assert chosen == 1
        broken["two-for-single-select"] = [
            {**first, "selected": [*first.get("selected", []), extra]},
            *answers[1:],
        ]
    return {name: {"answers": value} for name, value in broken.items()}


@given(st.data())
def test_any_broken_rule_is_an_invalid_response(data: st.DataObject) -> None:
    questions = data.draw(asked())
    raw = data.draw(answers_to(questions))
    mutations = _mutations(questions, copy.deepcopy(raw))
    name = data.draw(st.sampled_from(sorted(mutations)))
    refusal(questions, mutations[name])


@given(questions=asked(), raw=pst.payloads())
def test_any_json_answer_is_accepted_or_an_invalid_response_never_another_error(
    questions: Questions, raw: Any
) -> None:
    for candidate in (raw, {"answers": raw}, {"answers": [raw]}):
        with contextlib.suppress(InvalidResponse):
            answer(questions, candidate)


@given(st.data())
def test_answers_shaped_right_but_random_are_accepted_or_refused_with_a_field(
    data: st.DataObject,
) -> None:
    questions = data.draw(asked())
    ids = [q.id for q in questions.questions]
    labels = [o.label for q in questions.questions for o in q.options]
    found = data.draw(
        st.lists(
            st.fixed_dictionaries(
                {"question_id": st.sampled_from([*ids, "q0"])},
                optional={
                    "selected": st.lists(st.one_of(LABELS, st.sampled_from(labels))),
                    "other": st.one_of(st.none(), st.text(max_size=3)),
                },
            ),
            max_size=5,
        )
    )
    error = None
    try:
        answer(questions, {"answers": found})
    except InvalidResponse as refused:
        error = refused
    assert error is None or str(error.field).startswith("$.answers")


def test_the_kind_reads_and_writes_its_payload_and_answer_as_plain_json() -> None:
    raw = QUESTION.to_json(SHIP)
    assert raw["questions"][1]["options"][2] == {"label": "Pickup", "description": ""}
    assert QUESTION.structure_payload(raw) == SHIP
    typed = Answers([Answer("q1", ["Yes"])])
    assert QUESTION.structure_response(QUESTION.to_json(typed)) == typed


def test_an_answer_built_in_code_takes_a_list_of_labels_not_one_string() -> None:
    with pytest.raises(TypeError, match="not one string"):
        Answer("q1", "Yes")
