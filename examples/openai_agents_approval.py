"""A refund approval on the OpenAI Agents SDK, decided exactly once.

An agent's ``refund`` tool needs approval (``function_tool(needs_approval=True)``). The run
pauses; ``mint_pending`` keeps its ``RunState`` server-side (a SQLite table) and mints one
token per tool approval; the approver's decision comes back with the token and ``resume``
applies it to the stored state and resumes the run, once. Tokens are redeemed in the SQLite
token store; both live in one file in ``--dir`` (a temporary directory without it).

A fake model stands in for OpenAI's: it asks for the refund, then reports the tool's output.
Nothing goes to the network and no API key is needed. From a checkout:

    uv run --no-project --with "./sdk[cli]" --with "./backends/sqlalchemy[sqlite]" \\
        --with "./backends/openai-agents[sqlite]" python examples/openai_agents_approval.py

The exit status is 0 only if every step behaved as expected.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from typing_extensions import override

from pausetoken import JoseSigner, KeyRing, PauseTokens, Scope, open_store
from pausetoken.exceptions import AlreadyRedeemed, ScopeMismatch
from pausetoken_openai_agents import (
    AgentRunCheckpoints,
    Decision,
    SQLRunStates,
    mint_pending,
    resume,
    state_digest,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agents import AgentOutputSchemaBase, Handoff, ModelSettings, Tool, TResponseInputItem
    from agents.items import TResponseStreamEvent
    from agents.models.interface import ModelTracing
    from openai.types.responses.response_prompt_param import ResponsePromptParam

ACME = Scope("acme")
PAID: list[str] = []


class FakeModel(Model):
    """Asks for one refund, then answers with the tool's output (no network)."""

    @override
    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
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
        for item in items:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = [assistant_message(str(item.get("output")))]
                return ModelResponse(output=output, usage=Usage(), response_id=None)
        arguments = {"order_id": "order-42", "amount_cents": 1999}
        call = function_call("refund", arguments, call_id="call-refund-1")
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
        msg = "this example does not stream"
        raise NotImplementedError(msg)


@function_tool(needs_approval=True)
def refund(order_id: str, amount_cents: int) -> str:
    """Refund an order (the side effect that must happen once).

    Args:
        order_id: The order.
        amount_cents: How much to refund.
    """
    PAID.append(order_id)
    return f"refunded {amount_cents} cents on {order_id}"


def agent() -> Agent[Any]:
    """The agent, built again by every worker (as another process would)."""
    return Agent(name="refunds", model=FakeModel(), tools=[refund])


class Steps:
    """Prints PASS or FAIL for each step and remembers whether one failed."""

    failed = False

    def check(self, ok: bool, what: str) -> None:  # noqa: FBT001 - a printed assertion
        print(("PASS: " if ok else "FAIL: ") + what)
        self.failed |= not ok


async def main(directory: Path) -> int:
    set_tracing_disabled(disabled=True)  # tracing would export to OpenAI's servers
    url = f"sqlite+aiosqlite:///{directory / 'pausetoken.db'}"
    keys = KeyRing.generate()
    store, states = open_store(url), SQLRunStates(url)
    steps = Steps()

    def worker() -> PauseTokens:
        # One service per worker; all share the key set, the token store and the run states.
        checkpoints = AgentRunCheckpoints(agent(), states)
        return PauseTokens(signer=JoseSigner(keys), store=store, checkpoints=checkpoints)

    try:
        first, second = worker(), worker()
        result = await Runner.run(agent(), "Please refund order-42.")
        (event,) = await mint_pending(first, "run-42", scope=ACME, result=result)
        steps.check(
            event.payload.tool_name == "refund" and not PAID,
            f"paused before the tool ran; token for {event.payload.tool_name} "
            f"{event.payload.arguments} (call {event.payload.call_id})",
        )
        try:
            await resume(first, event.token, Decision(approve=True), scope=Scope("globex"))
        except ScopeMismatch as exc:
            steps.check(not PAID, f"another tenant's attempt refused ({exc.code})")
        else:
            steps.check(False, "another tenant's attempt was accepted")  # noqa: FBT003
        done = await resume(second, event.token, Decision(approve=True), scope=ACME)
        steps.check(
            PAID == ["order-42"] and not done.replayed,
            f"approved on another worker; the run finished: {done.output!r}",
        )
        again = await resume(first, event.token, Decision(approve=True), scope=ACME)
        steps.check(again.replayed and PAID == ["order-42"], "a retry is answered as a replay")
        stored = await states.load("run-42")
        steps.check(
            stored is not None and state_digest(stored) != first.verify(event.token).checkpoint_id,
            "the stored run state moved on: tokens bound to the old one are stale",
        )
        try:
            await resume(first, event.token, Decision(approve=False), scope=ACME)
        except AlreadyRedeemed as exc:
            steps.check(PAID == ["order-42"], f"another decision afterwards refused ({exc.code})")
        else:
            steps.check(False, "another decision was accepted afterwards")  # noqa: FBT003
    finally:
        await store.aclose()
        await states.aclose()
    print("FAIL: a step went wrong" if steps.failed else "PASS: every step as expected")
    return 1 if steps.failed else 0


def cli() -> int:
    """Parse the arguments and run the example."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="where the SQLite file goes (default: temp)")
    arguments = parser.parse_args()
    if arguments.dir is not None:
        arguments.dir.mkdir(parents=True, exist_ok=True)
        return asyncio.run(main(arguments.dir))
    with tempfile.TemporaryDirectory() as directory:
        return asyncio.run(main(Path(directory)))


if __name__ == "__main__":
    sys.exit(cli())
