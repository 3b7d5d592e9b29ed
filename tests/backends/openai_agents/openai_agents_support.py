"""A fake model, a counted tool and helpers shared by the OpenAI Agents SDK tests."""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any

import attrs
from agents import Agent, ModelResponse, Usage, function_tool
from agents.models.interface import Model
from agents.testing import assistant_message, function_call

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agents import AgentOutputSchemaBase, Handoff, ModelSettings, Tool, TResponseInputItem
    from agents.items import TResponseStreamEvent
    from agents.models.interface import ModelTracing
    from openai.types.responses.response_prompt_param import ResponsePromptParam

POSTGRESQL_ENV = "PAUSETOKEN_TEST_POSTGRESQL_URL"
REFUND_ARGUMENTS = {"order_id": "A-1001", "amount_cents": 1999}


class FakeModel(Model):
    """Asks for ``refund`` until the input holds its output, then answers with that output.

    It reads only its input, so a run restored in another process or worker behaves the same.
    """

    def __init__(self, arguments: dict[str, Any] | None = None, *, calls: int = 1) -> None:
        self.arguments = REFUND_ARGUMENTS if arguments is None else arguments
        self.calls = calls
        #: How many of the next calls that see a tool's output fail (a provider outage).
        self.fail_after_output = 0

    async def get_response(  # noqa: PLR0917 - the SDK's Model signature
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],  # noqa: A002 - the SDK's parameter name
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        items = input if isinstance(input, list) else []
        outputs = [
            item
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if outputs and self.fail_after_output:
            self.fail_after_output -= 1
            msg = "model provider unavailable"
            raise RuntimeError(msg)
        if len(outputs) >= self.calls:
            text = "; ".join(str(item.get("output")) for item in outputs)
            return ModelResponse(output=[assistant_message(text)], usage=Usage(), response_id=None)
        call = function_call("refund", self.arguments, call_id=f"call-{len(outputs) + 1}")
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(  # noqa: PLR0917 - the SDK's Model signature
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],  # noqa: A002 - the SDK's parameter name
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        msg = "the fake model does not stream"
        raise NotImplementedError(msg)


@attrs.define
class Refunds:
    """The side effects of the ``refund`` tool, counted."""

    done: list[dict[str, Any]] = attrs.Factory(list)


def refund_agent(
    refunds: Refunds, model: Model | None = None, *, name: str = "refunds"
) -> Agent[Any]:
    """An agent whose ``refund`` tool needs approval and records every call."""

    @function_tool(needs_approval=True)
    def refund(order_id: str, amount_cents: int) -> str:
        """Refund an order.

        Args:
            order_id: The order.
            amount_cents: How much to refund.
        """
        refunds.done.append({"order_id": order_id, "amount_cents": amount_cents})
        return f"refunded {amount_cents} on {order_id}"

    return Agent(name=name, model=model or FakeModel(), tools=[refund])


def run_id() -> str:
    return f"run-{secrets.token_hex(6)}"


def tamper_arguments(state: str, arguments: dict[str, Any]) -> str:
    """The stored state with the pending call's arguments replaced (what an attacker writes)."""
    data = json.loads(state)
    text = json.dumps(arguments, separators=(",", ":"))

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "function_call" and "arguments" in node:
                node["arguments"] = text
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(data)
    return json.dumps(data)
