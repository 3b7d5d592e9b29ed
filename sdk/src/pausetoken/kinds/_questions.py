"""The question kind: one to four questions, each answered by choosing among its options."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, NoReturn

import attrs

from pausetoken._interrupt import Interrupt
from pausetoken._structure import Mismatch, make_converter
from pausetoken.exceptions import InvalidResponse

if TYPE_CHECKING:
    from collections.abc import Iterable

    import cattrs

__all__ = [
    "MAX_OPTIONS",
    "MAX_OTHER_CHARS",
    "MAX_QUESTIONS",
    "MIN_OPTIONS",
    "QUESTION",
    "Answer",
    "Answers",
    "Option",
    "Question",
    "Questions",
    "check_answers",
]

MAX_QUESTIONS: Final = 4
"""At most this many questions in one pause."""
MIN_OPTIONS: Final = 2
"""Each question offers at least this many options."""
MAX_OPTIONS: Final = 4
"""Each question offers at most this many options."""
MAX_OTHER_CHARS: Final = 2000
"""The longest answer in other words accepted where a question allows one."""


def _nonblank(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        msg = f"{attribute.name} must be a non-blank string"
        raise ValueError(msg)


def _options(value: Iterable[Option]) -> tuple[Option, ...]:
    return tuple(value)


def _labels_given(value: Iterable[str]) -> tuple[str, ...]:
    # A string is an iterable of strings too: "Yes" would become three labels.
    if isinstance(value, str):
        msg = "selected is a list of labels, not one string"
        raise TypeError(msg)
    return tuple(value)


def _answers(value: Iterable[Answer]) -> tuple[Answer, ...]:
    return tuple(value)


@attrs.frozen
class Option:
    """One option a question offers.

    Args:
        label: What the person picks; answers name the option by it.
        description: What choosing it means.
    """

    label: str = attrs.field(validator=_nonblank)
    description: str = ""


def _offered(
    _instance: object, _attribute: attrs.Attribute[Any], value: tuple[Option, ...]
) -> None:
    if not MIN_OPTIONS <= len(value) <= MAX_OPTIONS:
        msg = f"a question offers {MIN_OPTIONS} to {MAX_OPTIONS} options"
        raise ValueError(msg)
    if len({option.label for option in value}) != len(value):
        msg = "the options of a question have distinct labels"
        raise ValueError(msg)


@attrs.frozen
class Question:
    """One question and the options it offers.

    Args:
        question: The question, as the person reads it.
        options: Two to four [`Option`][pausetoken.kinds.Option]s with distinct labels.
        header: A short title to show with it (optional).
        multi_select: The person may choose several options.
        allow_other: The person may answer in their own words instead of (or, with
            ``multi_select``, besides) choosing.
        id: Stamped by [`Questions`][pausetoken.kinds.Questions] from the question's position
            (``"q1"`` to ``"q4"``); a value given is replaced, so answers can only name the
            questions the pause asked.

    Raises:
        ValueError: blank text, fewer than two or more than four options, or repeated labels.
    """

    question: str = attrs.field(validator=_nonblank)
    options: tuple[Option, ...] = attrs.field(converter=_options, validator=_offered)
    header: str = attrs.field(default="", kw_only=True)
    multi_select: bool = attrs.field(default=False, kw_only=True)
    allow_other: bool = attrs.field(default=False, kw_only=True)
    id: str = attrs.field(default="", kw_only=True)


def _stamped(questions: Iterable[Question]) -> tuple[Question, ...]:
    return tuple(
        attrs.evolve(question, id=f"q{position}")
        for position, question in enumerate(questions, start=1)
    )


def _asked(
    _instance: object, _attribute: attrs.Attribute[Any], value: tuple[Question, ...]
) -> None:
    if not 1 <= len(value) <= MAX_QUESTIONS:
        msg = f"a pause asks 1 to {MAX_QUESTIONS} questions"
        raise ValueError(msg)


@attrs.frozen
class Questions:
    """The payload of the [`QUESTION`][pausetoken.kinds.QUESTION] kind: what the person is asked.

    Args:
        questions: One to four [`Question`][pausetoken.kinds.Question]s. Each gets its id
            from its position (``"q1"``, ``"q2"``, ...) whatever id it was given: the ids are
            the server's, never the answerer's.

    Raises:
        ValueError: no question, or more than four.

    Examples:
        >>> asked = Questions([Question("Ship today?", [Option("Yes"), Option("No")])])
        >>> asked.questions[0].id
        'q1'
    """

    questions: tuple[Question, ...] = attrs.field(converter=_stamped, validator=_asked)


@attrs.frozen
class Answer:
    """The answer to one question.

    Args:
        question_id: The id the question was stamped with (``"q1"``).
        selected: The labels of the chosen options.
        other: The person's own words, where the question allows them.
    """

    question_id: str
    selected: tuple[str, ...] = attrs.field(default=(), converter=_labels_given)
    other: str | None = None


@attrs.frozen
class Answers:
    """The answer of the [`QUESTION`][pausetoken.kinds.QUESTION] kind: one per question asked.

    Args:
        answers: One [`Answer`][pausetoken.kinds.Answer] per question, in any order.
    """

    answers: tuple[Answer, ...] = attrs.field(converter=_answers)


def _refuse(field: str, detail: str) -> NoReturn:
    raise InvalidResponse(detail, field=field)


def _check_answer(answer: Answer, question: Question, field: str) -> None:
    """One answer against its question; the messages name the question by its stamped id."""
    named = f"question {question.id!r}"
    offered = {option.label for option in question.options}
    for index, label in enumerate(answer.selected):
        if label not in offered:
            _refuse(f"{field}.selected[{index}]", f"{named}: not one of the offered labels")
    if len(set(answer.selected)) != len(answer.selected):
        _refuse(f"{field}.selected", f"{named}: an option is selected more than once")
    if answer.other is not None:
        if not question.allow_other:
            _refuse(f"{field}.other", f"{named} does not allow an answer in other words")
        if not answer.other.strip() or len(answer.other) > MAX_OTHER_CHARS:
            rule = f"{named}: other words must be 1 to {MAX_OTHER_CHARS} characters, not blank"
            _refuse(f"{field}.other", rule)
    chosen = len(answer.selected) + (answer.other is not None)
    if chosen == 0:
        _refuse(field, f"{named} is not answered: nothing selected and no other words")
    if chosen > 1 and not question.multi_select:
        rule = f"{named} is single-select: choose one option or give other words, not more"
        _refuse(f"{field}.selected", rule)


def check_answers(answers: Answers, questions: Questions) -> None:
    """Check that answers fit the questions asked (the kind's validator).

    The rules: every question asked is answered, once; nothing else is answered; each
    selection is one of the question's offered labels, chosen once; a single-select question
    has exactly one choice (an option, or other words), a multi-select one at least one;
    other words only where the question allows them, 1 to `MAX_OTHER_CHARS` characters.

    Args:
        answers: The structured answer.
        questions: The payload the token was minted for.

    Raises:
        InvalidResponse: a rule is broken; ``field`` is the path of the offending part
            (``$.answers[0].selected[1]``) and the message names the question by its id and
            the rule, never the submitted text.

    Examples:
        >>> asked = Questions([Question("Ship today?", [Option("Yes"), Option("No")])])
        >>> check_answers(Answers([Answer("q1", ["Yes"])]), asked)
        >>> try:
        ...     check_answers(Answers([Answer("q1", ["Yes", "No"])]), asked)
        ... except InvalidResponse as exc:
        ...     print(exc.field)
        $.answers[0].selected
    """
    by_id = {question.id: question for question in questions.questions}
    seen: set[str] = set()
    for index, answer in enumerate(answers.answers):
        field = f"$.answers[{index}]"
        question = by_id.get(answer.question_id)
        if question is None:
            # The id is the answerer's text: the message names the position only.
            _refuse(f"{field}.question_id", f"answer {index} names no question asked")
        if question.id in seen:
            _refuse(f"{field}.question_id", f"question {question.id!r} is answered more than once")
        seen.add(question.id)
        _check_answer(answer, question, field)
    for question in questions.questions:
        if question.id not in seen:
            _refuse("$.answers", f"question {question.id!r} is not answered")


def _labels(value: Any, _cls: Any) -> tuple[str, ...]:
    # cattrs reads any iterable as a sequence, so "AB" would become the labels "A" and "B".
    if not isinstance(value, list | tuple):
        msg = f"expected a list of labels, got {type(value).__name__}"
        raise Mismatch(msg)
    for item in value:
        if not isinstance(item, str):
            msg = f"expected labels (strings), got {type(item).__name__}"
            raise Mismatch(msg)
    return tuple(value)


def _converter() -> cattrs.Converter:
    converter = make_converter()
    converter.register_structure_hook_func(lambda cls: cls == tuple[str, ...], _labels)
    return converter


QUESTION: Final[Interrupt[Questions, Answers]] = Interrupt(
    "pausetoken.question",
    payload=Questions,
    response=Answers,
    validate=check_answers,
    converter=_converter(),
)
"""The question kind: payload [`Questions`][pausetoken.kinds.Questions], answer
[`Answers`][pausetoken.kinds.Answers], checked by `check_answers()` before anything is claimed.
"""
