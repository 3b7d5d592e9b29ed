# pyright: strict, reportMissingTypeStubs=false
"""User code of the MCP integration the type checkers must understand.

The typing session runs ``mypy --strict`` and pyright in strict mode on this file: each
``assert_type`` states a type that user code relies on. Nothing here runs in the test
suite (the functions are never called); the behaviour is tested in ``tests/backends/mcp``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_type

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateCodec, RequestStateSecurity
from mcp_types import InputRequiredResult

from pausetoken import JoseSigner, KeyRing, MemoryStore, PauseTokens, Scope
from pausetoken_mcp import (
    Approved,
    CallRecord,
    MemoryToolCalls,
    PauseTokenStateCodec,
    Pending,
    Rejected,
    SQLToolCalls,
    ToolApprovals,
    ToolCallCheckpoints,
    ToolCalls,
    ToolRun,
    as_tool_errors,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pausetoken.asgi import ResumeRequest, ResumeResult


def codec_is_a_request_state_codec() -> RequestStateSecurity:
    codec: RequestStateCodec = PauseTokenStateCodec(KeyRing.generate("dir"))
    assert_type(PauseTokenStateCodec(KeyRing.generate("dir")).seal(b"{}"), str)
    assert_type(PauseTokenStateCodec(KeyRing.generate("dir")).unseal(""), bytes)
    return RequestStateSecurity(codec=codec)


def records_are_tool_calls() -> tuple[ToolCalls, ToolCalls]:
    return MemoryToolCalls(), SQLToolCalls("sqlite+aiosqlite:///calls.db")


async def a_guarded_tool(ctx: Context[Any, Any]) -> str | InputRequiredResult:
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=MemoryStore(),
        checkpoints=ToolCallCheckpoints(MemoryToolCalls()),
    )
    approvals = ToolApprovals(service, approval_url="https://app.example/approve")
    page: Callable[[ResumeRequest], Awaitable[ResumeResult]] = approvals.answer_from_page
    del page
    with as_tool_errors():
        step = await approvals.gate(
            ctx.request_state,
            ctx.input_responses,
            "refund",
            {"order": "o-1"},
            scope=Scope("acme"),
            approver="alice",
        )
        assert_type(step, Pending | Rejected | Approved)
        if isinstance(step, Pending):
            return assert_type(step.result, InputRequiredResult)
        if isinstance(step, Rejected):
            return assert_type(step.message, str)
        async with step.redeem() as run:
            assert_type(run, ToolRun)
            paid = await run.run(pay())
            assert_type(paid, int)
    return "refunded"


async def pay() -> int:
    return 1


async def a_record(calls: ToolCalls) -> CallRecord | None:
    return await calls.load("c-1")


def a_server() -> MCPServer:
    return MCPServer("refunds", request_state_security=codec_is_a_request_state_codec())
