"""Through an in-process MCP client: refusals reach the client before the tool runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_support import ARGS, first_round, page_answer
from mcp_types import CallToolResult, ElicitResult, InputRequiredResult, TextContent

from pausetoken import KeyRing, Scope
from pausetoken_mcp import (
    ELICITATION_KEY,
    Approved,
    PauseTokenStateCodec,
    Pending,
    ToolApprovals,
    as_tool_errors,
)
from scaffolding import ACME, GLOBEX

if TYPE_CHECKING:
    from collections.abc import Callable

ACCEPTED: Any = {ELICITATION_KEY: ElicitResult(action="accept")}


def build_server(
    approvals: ToolApprovals, codec: PauseTokenStateCodec, scope: Scope, ran: list[str]
) -> MCPServer:
    server = MCPServer(
        "refunds", request_state_security=RequestStateSecurity(codec=codec), log_level="ERROR"
    )

    @server.tool()
    async def refund(order: str, amount_cents: int, ctx: Context) -> str | InputRequiredResult:
        args = {"order": order, "amount_cents": amount_cents}

        async def pay() -> None:
            ran.append(order)

        with as_tool_errors():
            step = await approvals.gate(
                ctx.request_state,
                ctx.input_responses,
                "refund",
                args,
                scope=scope,
                approver="alice",
            )
            if isinstance(step, Pending):
                return step.result
            if not isinstance(step, Approved):
                return "rejected"
            async with step.redeem() as run:
                await run.run(pay())
        return "refunded"

    return server


def text(result: object) -> str:
    assert isinstance(result, CallToolResult)
    return " ".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_workers_and_tenants_through_the_client(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    codec = PauseTokenStateCodec(KeyRing.generate("dir"))  # one ring, every worker
    worker, other_worker, ran = make_approvals(), make_approvals(), []
    acme = build_server(worker, codec, ACME, ran)
    acme_again = build_server(other_worker, codec, ACME, ran)
    globex = build_server(make_approvals(), codec, GLOBEX, ran)

    async with Client(acme) as client, Client(acme_again) as second, Client(globex) as other:
        first = await client.session.call_tool("refund", ARGS, allow_input_required=True)
        assert isinstance(first, InputRequiredResult)
        token, state = first_round(Pending(first))
        await worker.answer_from_page(page_answer(token, "approve"))

        async def call(on: Client, arguments: dict[str, Any]) -> object:
            return await on.session.call_tool(
                "refund",
                arguments,
                request_state=state,
                input_responses=ACCEPTED,
                allow_input_required=True,
            )

        with pytest.raises(MCPError):  # the boundary binds the arguments of the round
            await call(client, {**ARGS, "amount_cents": 1})
        assert "[scope_mismatch]" in text(await call(other, ARGS))
        assert ran == []
        assert text(await call(second, ARGS)) == "refunded"  # another worker may run it once
        assert "[already_redeemed]" in text(await call(client, ARGS))
        assert ran == ["order-1"]
