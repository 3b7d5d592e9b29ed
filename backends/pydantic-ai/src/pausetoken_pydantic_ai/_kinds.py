"""The kind of pause a deferred tool approval is, and the checks of an approver's decision."""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

import attrs
from pydantic import ValidationError

from pausetoken import Interrupt
from pausetoken.exceptions import InvalidResponse
from pausetoken.kinds import Action, Approval, check_decision
from pausetoken.plugins import hash_payload

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from pausetoken import PauseTokens

__all__ = [
    "DECISIONS",
    "TOOL_APPROVAL",
    "ToolApproval",
    "args_digest",
    "checked_args",
    "checking_edits_with",
    "register",
]

#: The decisions an approver may make about a deferred tool call, in LangChain's spelling
#: (the shapes `pausetoken.kinds.check_decision` checks): run it, run it with other
#: arguments, or refuse it with a message for the model.
DECISIONS: Final = ("approve", "edit", "reject")

# The argument validators of the tools being resumed, by tool name; set by resume() around
# redeem(), so an edit is checked against the tool's own schema before anything is claimed.
_VALIDATORS: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "pausetoken_pydantic_ai_validators", default=None
)


@attrs.frozen
class ToolApproval:
    """What an approver is shown for one deferred tool call: the payload a token binds.

    Attributes:
        tool_name: The tool the model called.
        tool_call_id: Pydantic AI's id for the call.
        args: The arguments the tool will receive, as Pydantic AI validated them
            (``DeferredToolRequests.validated_args``), in their JSON form: what to show.
        requested_args: The arguments as the model sent them, from the stored response.
    """

    tool_name: str
    tool_call_id: str
    args: dict[str, Any] = attrs.field(factory=dict, repr=False)
    requested_args: dict[str, Any] = attrs.field(factory=dict, repr=False)


def args_digest(args: Mapping[str, Any]) -> str:
    """The digest of a tool call's arguments: `pausetoken.plugins.hash_payload` of their JSON form.

    Args:
        args: The arguments as Pydantic AI validated them, or their JSON form (both give
            the same digest).

    Returns:
        The sha256 hex digest of the RFC 8785 encoding.

    Raises:
        UnsupportedPayload: an argument has no exact JSON form.
    """
    from pydantic_core import to_jsonable_python  # noqa: PLC0415 - installed with pydantic

    return hash_payload(to_jsonable_python(dict(args), bytes_mode="base64"))


def _validate(response: dict[str, Any], payload: ToolApproval) -> None:
    """The interrupt's validator: the decision's shape, and an edit's arguments."""
    approval = Approval(Action(payload.tool_name, payload.args), DECISIONS)
    decision = check_decision(response, approval)
    if decision["type"] == "edit":
        checked_args(payload.tool_name, decision["edited_action"]["args"])


def checked_args(tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """An edit's arguments validated against the tool's own argument schema, in JSON form.

    The validators are those `checking_edits_with()` made current; without them (a
    redemption outside `resume()`), the arguments are returned as given and checked when
    the run validates them.

    Raises:
        InvalidResponse: the arguments do not fit the tool's schema (``field`` names the
            first offending argument; the message never repeats the submitted values).
    """
    from pydantic_core import to_jsonable_python  # noqa: PLC0415 - installed with pydantic

    validators = _VALIDATORS.get()
    if validators is None:
        return dict(args)
    validator = validators.get(tool_name)
    if validator is None:
        msg = "the tool is not one of the agent's function tools; its edits cannot be checked"
        raise InvalidResponse(msg, field="$.edited_action.name")
    try:
        validated = validator.validate_python(dict(args))
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        field = "$.edited_action.args" + (f".{where}" if where else "")
        msg = f"the edited arguments do not fit the tool's schema ({first['type']} at {field})"
        raise InvalidResponse(msg, field=field) from None
    return dict(to_jsonable_python(validated, bytes_mode="base64"))


@contextmanager
def checking_edits_with(validators: Mapping[str, Any]) -> Iterator[None]:
    """Check edits against these tools' argument validators while the block runs."""
    reset = _VALIDATORS.set(validators)
    try:
        yield
    finally:
        _VALIDATORS.reset(reset)


TOOL_APPROVAL: Final[Interrupt[ToolApproval, dict[str, Any]]] = Interrupt(
    "pydantic_ai.tool_approval", payload=ToolApproval, response=dict, validate=_validate
)
"""A deferred tool call awaiting approval.

Payload [`ToolApproval`][pausetoken_pydantic_ai.ToolApproval]; the answer is one decision
in LangChain's shape: ``{"type": "approve"}``,
``{"type": "edit", "edited_action": {"name": tool_name, "args": {...}}}`` or
``{"type": "reject", "message": "..."}`` (message optional), checked before anything is
claimed.
"""


def register(service: PauseTokens) -> Interrupt[ToolApproval, dict[str, Any]]:
    """Register [`TOOL_APPROVAL`][pausetoken_pydantic_ai.TOOL_APPROVAL] on a service.

    Args:
        service: The [`PauseTokens`][pausetoken.PauseTokens] service.

    Returns:
        The registered interrupt.
    """
    return service.register(TOOL_APPROVAL)
