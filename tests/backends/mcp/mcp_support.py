"""What the MCP integration tests share: the arguments, the first round, the page's answer."""

from __future__ import annotations

from typing import Any

from mcp_types import ElicitRequestURLParams, InputRequiredResult

from pausetoken.asgi import Caller, ResumeRequest
from pausetoken_mcp import ELICITATION_KEY, Pending
from scaffolding import ACME

ARGS: dict[str, Any] = {"order": "order-1", "amount_cents": 1250}


def first_round(step: object) -> tuple[str, str]:
    """The approval token (from the link) and the request state of a first round."""
    assert isinstance(step, Pending)
    result: InputRequiredResult = step.result
    assert result.input_requests is not None
    assert result.request_state is not None
    link = result.input_requests[ELICITATION_KEY].params
    assert isinstance(link, ElicitRequestURLParams)
    return link.url.split("#token=", 1)[1], result.request_state


def page_answer(token: str, decision: str, principal: str = "alice") -> ResumeRequest:
    """What the approval page hands `answer_from_page` for an authenticated person."""
    return ResumeRequest(token, {"type": decision}, Caller(ACME, principal=principal))
