"""The approval kind: approve, edit, reject or respond to an action, in LangChain's shape."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, NoReturn

import attrs

from pausetoken._interrupt import Interrupt
from pausetoken.exceptions import InvalidResponse

__all__ = [
    "APPROVAL",
    "DECISION_TYPES",
    "Action",
    "Approval",
    "DecisionType",
    "check_decision",
    "check_decisions",
]

DecisionType = Literal["approve", "edit", "reject", "respond"]

DECISION_TYPES: Final[tuple[DecisionType, ...]] = ("approve", "edit", "reject", "respond")
"""Every decision a person can make about an action, in LangChain's spelling."""

# The members each decision may have besides "type", and which of them it must have.
_MEMBERS: Final[Mapping[str, frozenset[str]]] = {
    "approve": frozenset(),
    "edit": frozenset({"edited_action"}),
    "reject": frozenset({"message"}),
    "respond": frozenset({"message"}),
}
_REQUIRED: Final[Mapping[str, frozenset[str]]] = {
    "approve": frozenset(),
    "edit": frozenset({"edited_action"}),
    "reject": frozenset(),
    "respond": frozenset({"message"}),
}
_EDITED_MEMBERS: Final = frozenset({"name", "args"})


def _nonblank(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        msg = f"{attribute.name} must be a non-blank string"
        raise ValueError(msg)


def _decision_types(
    _instance: object, _attribute: attrs.Attribute[Any], value: tuple[str, ...]
) -> None:
    if not value:
        msg = "allowed_decisions must name at least one decision"
        raise ValueError(msg)
    if any(kind not in DECISION_TYPES for kind in value):
        msg = f"allowed_decisions are among {', '.join(DECISION_TYPES)}"
        raise ValueError(msg)
    if len(set(value)) != len(value):
        msg = "allowed_decisions names a decision twice"
        raise ValueError(msg)


def _allowed(value: Iterable[DecisionType]) -> tuple[DecisionType, ...]:
    return tuple(value)


def _json_object(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        msg = f"{attribute.name} must be a mapping with string keys"
        raise TypeError(msg)


@attrs.frozen
class Action:
    """What a person is asked to allow: a tool (or operation) name and its arguments.

    Args:
        name: The tool or operation (``"send_email"``).
        args: Its arguments, as JSON values.
    """

    name: str = attrs.field(validator=_nonblank)
    args: dict[str, Any] = attrs.field(factory=dict, validator=_json_object)


@attrs.frozen
class Approval:
    """The payload of the [`APPROVAL`][pausetoken.kinds.APPROVAL] kind: an action to review.

    Args:
        action: The action awaiting a decision.
        allowed_decisions: The decisions the person may make, among ``approve``, ``edit``,
            ``reject`` and ``respond`` (all four by default).
        description: What to tell the person about it.

    Raises:
        ValueError: ``allowed_decisions`` is empty, repeats a decision or names an unknown one.

    Examples:
        >>> Approval(Action("refund", {"order": "o-1"}), ("approve", "reject")).allowed_decisions
        ('approve', 'reject')
    """

    action: Action
    allowed_decisions: tuple[DecisionType, ...] = attrs.field(
        default=DECISION_TYPES, converter=_allowed, validator=_decision_types
    )
    description: str = ""


def _refuse(field: str, rule: str) -> NoReturn:
    msg = f"the decision at {field} {rule}"
    raise InvalidResponse(msg, field=field)


def _message(decision: Mapping[str, Any], field: str) -> dict[str, Any]:
    if "message" not in decision:
        return {}
    message = decision["message"]
    if not isinstance(message, str):
        _refuse(f"{field}.message", "has a message that is not a string")
    return {"message": message}


def _edited_action(decision: Mapping[str, Any], action: Action, field: str) -> dict[str, Any]:
    where = f"{field}.edited_action"
    edited = decision["edited_action"]
    if not isinstance(edited, Mapping):
        _refuse(where, "must be an object with name and args")
    if edited.keys() != _EDITED_MEMBERS:
        _refuse(where, "must have exactly the members name and args")
    if not isinstance(edited["name"], str) or edited["name"] != action.name:
        # The tool is the one the person was shown; an edit changes its arguments only.
        _refuse(f"{where}.name", "must keep the action's name (an edit changes args only)")
    args = edited["args"]
    if not isinstance(args, Mapping) or not all(isinstance(key, str) for key in args):
        _refuse(f"{where}.args", "must be an object with string keys")
    return {"edited_action": {"name": action.name, "args": dict(args)}}


def check_decision(decision: object, approval: Approval, *, field: str = "$") -> dict[str, Any]:
    """Check one decision about an action, in LangChain's decision shape.

    The shapes are those of LangChain's ``HumanInTheLoopMiddleware``:
    ``{"type": "approve"}``, ``{"type": "edit", "edited_action": {"name": ..., "args": {...}}}``,
    ``{"type": "reject", "message": ...}`` (message optional) and
    ``{"type": "respond", "message": ...}``. The rules are the middleware's and a little
    stricter: the type is one the approval allows, an edit keeps the action's name, messages
    are strings, and no member outside the shape is accepted.

    Args:
        decision: The answer as plain JSON data.
        approval: The action it decides about and the decisions allowed.
        field: The path of the decision within the whole answer, for errors.

    Returns:
        The decision as a new plain ``dict`` in LangChain's shape.

    Raises:
        InvalidResponse: the decision breaks a rule; ``field`` is the path of the offending
            member and the message names the rule, never the submitted text.

    Examples:
        >>> refund = Approval(Action("refund", {"order": "o-1"}), ("approve", "reject"))
        >>> check_decision({"type": "reject", "message": "not this one"}, refund)
        {'type': 'reject', 'message': 'not this one'}
        >>> try:
        ...     check_decision({"type": "edit"}, refund)
        ... except InvalidResponse as exc:
        ...     print(exc.code, exc.field)
        invalid_response $.type
    """
    if not isinstance(decision, Mapping):
        _refuse(field, "must be an object with a type")
    kind = decision.get("type")
    if not isinstance(kind, str) or kind not in DECISION_TYPES:
        _refuse(f"{field}.type", f"must be one of {', '.join(DECISION_TYPES)}")
    if kind not in approval.allowed_decisions:
        allowed = ", ".join(approval.allowed_decisions)
        _refuse(f"{field}.type", f"is not allowed for this action (allowed: {allowed})")
    members = decision.keys() - {"type"}
    if not members <= _MEMBERS[kind]:
        _refuse(field, f"has members a {kind} decision does not take")
    if not _REQUIRED[kind] <= members:
        missing = ", ".join(sorted(_REQUIRED[kind] - members))
        _refuse(field, f"lacks what a {kind} decision needs: {missing}")
    checked: dict[str, Any] = {"type": kind}
    if kind == "edit":
        checked |= _edited_action(decision, approval.action, field)
    else:
        checked |= _message(decision, field)
    return checked


def check_decisions(
    decisions: object, approvals: Sequence[Approval], *, field: str = "$.decisions"
) -> list[dict[str, Any]]:
    """Check one decision per action, matched by position (LangChain's batched answer).

    Args:
        decisions: The list of decisions as plain JSON data.
        approvals: The actions, in the order the decisions answer them.
        field: The path of the list within the whole answer, for errors.

    Returns:
        The decisions, each checked by `check_decision()`, as new plain dicts.

    Raises:
        InvalidResponse: ``decisions`` is not a list of as many decisions as there are
            actions, or a decision breaks a rule (``field`` names which, ``$.decisions[1].type``).

    Examples:
        >>> actions = [Approval(Action("send_email")), Approval(Action("refund"), ("approve",))]
        >>> try:
        ...     check_decisions([{"type": "respond", "message": "sent it myself"}], actions)
        ... except InvalidResponse as exc:
        ...     print(exc.detail)
        expected 2 decisions (one per action, in order), got 1
    """
    if isinstance(decisions, str | bytes | Mapping) or not isinstance(decisions, Sequence):
        msg = "the decisions must be a list (one per action, in order)"
        raise InvalidResponse(msg, field=field)
    if len(decisions) != len(approvals):
        msg = (
            f"expected {len(approvals)} decision{'s' if len(approvals) != 1 else ''} "
            f"(one per action, in order), got {len(decisions)}"
        )
        raise InvalidResponse(msg, field=field)
    return [
        check_decision(decision, approval, field=f"{field}[{index}]")
        for index, (decision, approval) in enumerate(zip(decisions, approvals, strict=True))
    ]


def _validate(response: dict[str, Any], payload: Approval) -> None:
    check_decision(response, payload)


APPROVAL: Final[Interrupt[Approval, dict[str, Any]]] = Interrupt(
    "pausetoken.approval", payload=Approval, response=dict, validate=_validate
)
"""The approval kind: payload [`Approval`][pausetoken.kinds.Approval], answer one decision in
LangChain's shape (a plain ``dict``), checked by `check_decision()` before anything is claimed.
"""
