"""The two kinds of pause behind one tool call: the approval and the run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pausetoken import Interrupt, hash_payload
from pausetoken.kinds import Approval, check_decision

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pausetoken import PauseTokens

__all__ = [
    "DECISIONS",
    "TOOL_APPROVAL",
    "TOOL_RUN",
    "approval_payload",
    "call_digest",
    "register",
]

#: The decisions an approver may make about an MCP tool call. An edit is not offered: the
#: arguments are the client's, sent again on every round, and are bound as they are.
DECISIONS: Final = ("approve", "reject")


def _validate(response: dict[str, Any], payload: Approval) -> None:
    check_decision(response, payload)


TOOL_APPROVAL: Final[Interrupt[Approval, dict[str, Any]]] = Interrupt(
    "mcp.tool_approval", payload=Approval, response=dict, validate=_validate
)
"""The approver's pause: answered on the approval page, by the principal the token names."""

TOOL_RUN: Final[Interrupt[Approval, dict[str, Any]]] = Interrupt(
    "mcp.tool_run", payload=Approval, response=dict, validate=_validate
)
"""The tool's pause: redeemed by the tool handler with the recorded decision, once."""


def approval_payload(
    tool: str, arguments: Mapping[str, Any], *, description: str = ""
) -> dict[str, Any]:
    """The payload both tokens of a tool call bind, as JSON data.

    Its shape is the approval page's (``pausetoken.kinds.Approval``): the tool's name and
    arguments as the action, approve or reject as the allowed decisions.

    Examples:
        >>> approval_payload("refund", {"order": "o-1"})["action"]
        {'name': 'refund', 'args': {'order': 'o-1'}}
    """
    return {
        "action": {"name": tool, "args": dict(arguments)},
        "allowed_decisions": list(DECISIONS),
        "description": description,
    }


def call_digest(tool: str, arguments: Mapping[str, Any]) -> str:
    """sha256 hex of the RFC 8785 JSON of a tool call's name and arguments.

    Examples:
        >>> call_digest("refund", {"b": 1, "a": 2}) == call_digest("refund", {"a": 2, "b": 1})
        True
    """
    return hash_payload({"name": tool, "args": dict(arguments)})


def register(service: PauseTokens) -> None:
    """Register `TOOL_APPROVAL` and `TOOL_RUN` with ``service`` (idempotent)."""
    service.register(TOOL_APPROVAL)
    service.register(TOOL_RUN)
