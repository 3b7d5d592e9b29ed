"""The approval kind and the decision rules LangChain's middleware answers are checked by."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausetoken.exceptions import InvalidResponse, UnsupportedPayload
from pausetoken.kinds import (
    APPROVAL,
    DECISION_TYPES,
    Action,
    Approval,
    check_decision,
    check_decisions,
)
from pausetoken.testing import strategies as pst

SECRET = "s3cr3t-answer-text"
EMAIL = Approval(Action("send_email", {"to": "a@example.com"}), description="Send it?")
REFUND = Approval(Action("refund", {"order": "o-1"}), ("approve", "reject"))


def refusal(decision: Any, approval: Approval = EMAIL) -> InvalidResponse:
    with pytest.raises(InvalidResponse) as caught:
        check_decision(decision, approval)
    error = caught.value
    assert SECRET not in f"{error} {error!r} {error.to_problem()}"
    return error


@pytest.mark.parametrize(
    "decision",
    [
        {"type": "approve"},
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "b@example.com"}}},
        {"type": "reject"},
        {"type": "reject", "message": "not now"},
        {"type": "respond", "message": "I sent it myself"},
    ],
    ids=["approve", "edit", "reject", "reject-with-message", "respond"],
)
def test_each_decision_shape_is_accepted_and_returned_as_a_copy(decision: dict[str, Any]) -> None:
    checked = check_decision(decision, EMAIL)
    assert checked == decision
    assert checked is not decision


@pytest.mark.parametrize(
    ("decision", "field", "rule"),
    [
        ("approve", "$", "must be an object with a type"),
        ({}, "$.type", "must be one of approve, edit, reject, respond"),
        ({"type": SECRET}, "$.type", "must be one of"),
        ({"type": "APPROVE"}, "$.type", "must be one of"),
        ({"type": "approve", "message": SECRET}, "$", "members a approve decision does not take"),
        ({"type": "edit"}, "$", "lacks what a edit decision needs: edited_action"),
        ({"type": "edit", "edited_action": SECRET}, "$.edited_action", "must be an object"),
        (
            {"type": "edit", "edited_action": {"name": "send_email"}},
            "$.edited_action",
            "exactly the members name and args",
        ),
        (
            {"type": "edit", "edited_action": {"name": SECRET, "args": {}}},
            "$.edited_action.name",
            "must keep the action's name",
        ),
        (
            {"type": "edit", "edited_action": {"name": "send_email", "args": [SECRET]}},
            "$.edited_action.args",
            "must be an object with string keys",
        ),
        ({"type": "reject", "message": 3}, "$.message", "not a string"),
        ({"type": "respond"}, "$", "lacks what a respond decision needs: message"),
        ({"type": "respond", "message": None}, "$.message", "not a string"),
    ],
    ids=[
        "not-an-object",
        "no-type",
        "unknown-type",
        "type-in-capitals",
        "approve-with-a-message",
        "edit-without-action",
        "edited-action-not-an-object",
        "edited-action-without-args",
        "edit-renames-the-tool",
        "edited-args-not-an-object",
        "reject-message-not-a-string",
        "respond-without-message",
        "respond-message-null",
    ],
)
def test_each_broken_rule_is_refused_naming_the_field_and_the_rule(
    decision: Any, field: str, rule: str
) -> None:
    error = refusal(decision)
    assert error.field == field
    assert rule in error.detail


@pytest.mark.parametrize("kind", ["edit", "respond"])
def test_a_decision_the_action_does_not_allow_is_refused(kind: str) -> None:
    decision = {"type": kind, "message": "x"} if kind == "respond" else {"type": kind}
    error = refusal(decision, REFUND)
    assert error.field == "$.type"
    assert "not allowed for this action (allowed: approve, reject)" in error.detail


def test_decisions_are_matched_to_actions_by_position() -> None:
    decisions = [{"type": "respond", "message": "done"}, {"type": "approve"}]
    assert check_decisions(decisions, [EMAIL, REFUND]) == decisions
    with pytest.raises(InvalidResponse) as caught:
        check_decisions(list(reversed(decisions)), [EMAIL, REFUND])
    assert caught.value.field == "$.decisions[1].type"


@pytest.mark.parametrize(
    ("decisions", "rule"),
    [
        ([{"type": "approve"}], "expected 2 decisions (one per action, in order), got 1"),
        ([{"type": "approve"}] * 3, "expected 2 decisions (one per action, in order), got 3"),
        ({"decisions": []}, "must be a list"),
        ("approve", "must be a list"),
        (None, "must be a list"),
    ],
    ids=["too-few", "too-many", "an-object", "a-string", "null"],
)
def test_anything_but_one_decision_per_action_is_refused(decisions: Any, rule: str) -> None:
    with pytest.raises(InvalidResponse) as caught:
        check_decisions(decisions, [EMAIL, REFUND])
    assert caught.value.field == "$.decisions"
    assert rule in caught.value.detail


@pytest.mark.parametrize(
    "allowed", [(), ("approve", "approve"), ("approve", "ignore")], ids=["none", "twice", "unknown"]
)
def test_an_approval_allows_one_or_more_distinct_known_decisions(allowed: Any) -> None:
    with pytest.raises(ValueError, match="allowed_decisions"):
        Approval(Action("refund"), allowed)


def test_an_action_has_a_name_and_object_args() -> None:
    with pytest.raises(ValueError, match="name"):
        Action(" ")
    with pytest.raises(TypeError, match="args"):
        Action("refund", ["o-1"])  # type: ignore[arg-type]


def test_the_approval_kind_reads_its_payload_and_checks_its_answer() -> None:
    raw = APPROVAL.to_json(REFUND)
    assert raw == {
        "action": {"name": "refund", "args": {"order": "o-1"}},
        "allowed_decisions": ["approve", "reject"],
        "description": "",
    }
    assert APPROVAL.structure_payload(raw) == REFUND
    raw["allowed_decisions"] = ["approve", "maybe"]
    with pytest.raises(UnsupportedPayload):
        APPROVAL.structure_payload(raw)
    assert APPROVAL.validate is not None
    APPROVAL.validate(APPROVAL.structure_response({"type": "approve"}), REFUND)
    with pytest.raises(InvalidResponse):
        APPROVAL.validate(APPROVAL.structure_response({"type": "edit"}), REFUND)


ALLOWED = st.lists(st.sampled_from(DECISION_TYPES), min_size=1, unique=True)
NAMES = st.text(min_size=1, max_size=12).filter(str.strip)


@st.composite
def approvals(draw: st.DrawFn) -> Approval:
    return Approval(Action(draw(NAMES), draw(pst.json_objects(max_leaves=3))), tuple(draw(ALLOWED)))


@st.composite
def decision_for(draw: st.DrawFn, approval: Approval) -> dict[str, Any]:
    """A decision built under the rules from what the approval allows."""
    kind = draw(st.sampled_from(approval.allowed_decisions))
    if kind == "edit":
        args = draw(pst.json_objects(max_leaves=3))
        return {"type": "edit", "edited_action": {"name": approval.action.name, "args": args}}
    if kind == "respond":
        return {"type": "respond", "message": draw(st.text(max_size=20))}
    if kind == "reject" and draw(st.booleans()):
        return {"type": "reject", "message": draw(st.text(max_size=20))}
    return {"type": kind}


@given(st.data())
def test_any_decisions_built_under_the_rules_are_accepted_unchanged(data: st.DataObject) -> None:
    actions = data.draw(st.lists(approvals(), min_size=1, max_size=4))
    decisions = [data.draw(decision_for(approval)) for approval in actions]
    assert check_decisions(decisions, actions) == decisions


@given(st.data())
def test_a_decision_type_outside_the_allowed_ones_is_always_refused(data: st.DataObject) -> None:
    approval = data.draw(approvals().filter(lambda a: len(a.allowed_decisions) < 4))
    kind = data.draw(
        st.sampled_from([k for k in DECISION_TYPES if k not in approval.allowed_decisions])
    )
    decision = {"type": kind, "message": "m"} if kind in {"reject", "respond"} else {"type": kind}
    with pytest.raises(InvalidResponse):
        check_decision(decision, approval)


@given(st.data())
def test_an_edit_that_renames_the_tool_is_always_refused(data: st.DataObject) -> None:
    approval = data.draw(approvals().filter(lambda a: "edit" in a.allowed_decisions))
    other = data.draw(NAMES.filter(lambda name: name != approval.action.name))
    with pytest.raises(InvalidResponse) as caught:
        check_decision({"type": "edit", "edited_action": {"name": other, "args": {}}}, approval)
    assert caught.value.field == "$.edited_action.name"


@given(approval=approvals(), raw=pst.payloads())
def test_any_json_decision_is_accepted_or_an_invalid_response_never_another_error(
    approval: Approval, raw: Any
) -> None:
    for candidate in (
        raw,
        {"type": "edit", "edited_action": raw},
        {"type": "reject", "message": raw},
    ):
        with contextlib.suppress(InvalidResponse):
            check_decision(candidate, approval)
    with contextlib.suppress(InvalidResponse):
        check_decisions(raw, [approval])
