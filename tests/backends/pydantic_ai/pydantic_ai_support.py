"""What the Pydantic AI integration tests share: an agent whose tools count their runs."""

from __future__ import annotations

from typing import Any

import attrs
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests


@attrs.define
class Ledger:
    """Every tool body that ran, with the arguments it ran with."""

    refunds: list[tuple[str, int]] = attrs.Factory(list)
    emails: list[str] = attrs.Factory(list)


def build_agent(ledger: Ledger, *, emails: bool = False) -> Agent[None, Any]:
    """An agent on TestModel that calls `refund` (and `email`), each needing approval."""
    tools = ["refund", "email"] if emails else ["refund"]
    agent: Agent[None, Any] = Agent(
        TestModel(call_tools=tools), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def refund(order: str, amount: int) -> str:
        """Refund an order."""
        ledger.refunds.append((order, amount))
        return f"refunded {amount}"

    if emails:

        @agent.tool_plain(requires_approval=True)
        def email(to: str) -> str:
            """Send an email."""
            ledger.emails.append(to)
            return "sent"

    return agent
