"""What the MCP integration tests share: a hand-moved clock and the page's answer."""

from __future__ import annotations

import time
from typing import Any

import attrs
from mcp_types import ElicitRequestURLParams, InputRequiredResult

from pausetoken import Scope
from pausetoken.asgi import Caller, ResumeRequest
from pausetoken_mcp import ELICITATION_KEY, Pending

ACME = Scope("acme")
GLOBEX = Scope("globex")
ARGS: dict[str, Any] = {"order": "order-1", "amount_cents": 1250}


@attrs.define
class Clock:
    """A clock the tests move by hand (starts at the real time: tokens carry real iat)."""

    now: float = attrs.field(factory=time.time)

    def __call__(self) -> float:
        return self.now


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
