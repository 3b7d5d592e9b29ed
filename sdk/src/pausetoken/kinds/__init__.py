"""Ready-made kinds of pause: questions with options, and approvals of an action.

Two [`Interrupt`][pausetoken.Interrupt]s, registered with one call:

* [`QUESTION`][pausetoken.kinds.QUESTION] asks one to four questions, each offering two to
  four options; the answer picks among them (several where ``multi_select``), or gives
  other words where ``allow_other``. Question ids are stamped from their position.
* [`APPROVAL`][pausetoken.kinds.APPROVAL] asks for a decision about an action (a name and
  arguments): approve, edit, reject or respond, among those allowed. The answer is one
  decision in the shape of LangChain's human-in-the-loop middleware.

Answers are checked by the kind's validator when redeemed, before anything is claimed: a
broken rule is [`InvalidResponse`][pausetoken.exceptions.InvalidResponse] (422) naming the
question or decision and the rule, and the token stays redeemable. `check_decision()` and
`check_decisions()` are the decision rules for any code that handles LangChain decisions.

Examples:
    >>> from pausetoken import kinds
    >>> [kind.name for kind in kinds.ALL]
    ['pausetoken.question', 'pausetoken.approval']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pausetoken.kinds._decisions import (
    APPROVAL,
    DECISION_TYPES,
    Action,
    Approval,
    DecisionType,
    check_decision,
    check_decisions,
)
from pausetoken.kinds._questions import (
    MAX_OPTIONS,
    MAX_OTHER_CHARS,
    MAX_QUESTIONS,
    MIN_OPTIONS,
    QUESTION,
    Answer,
    Answers,
    Option,
    Question,
    Questions,
    check_answers,
)

if TYPE_CHECKING:
    from pausetoken._interrupt import Interrupt
    from pausetoken._service import PauseTokens

__all__ = [
    "ALL",
    "APPROVAL",
    "DECISION_TYPES",
    "MAX_OPTIONS",
    "MAX_OTHER_CHARS",
    "MAX_QUESTIONS",
    "MIN_OPTIONS",
    "QUESTION",
    "Action",
    "Answer",
    "Answers",
    "Approval",
    "DecisionType",
    "Option",
    "Question",
    "Questions",
    "check_answers",
    "check_decision",
    "check_decisions",
    "register",
]

ALL: Final[tuple[Interrupt[Any, Any], ...]] = (QUESTION, APPROVAL)
"""Every ready-made kind, in the order `register()` registers them."""


def register(tokens: PauseTokens) -> None:
    """Register every ready-made kind with a service.

    Args:
        tokens: The [`PauseTokens`][pausetoken.PauseTokens] service.

    Raises:
        ConfigurationError: another interrupt is registered under one of their names.
    """
    for kind in ALL:
        tokens.register(kind)
