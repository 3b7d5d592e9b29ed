"""MCP integration for pausetoken (mcp >= 2.3, protocol 2026-07-28).

`PauseTokenStateCodec` protects MCP's ``requestState`` with a pausetoken key ring (sealed
JWE by default, rotation by ``kid``). `ToolApprovals` is the single-use guard a tool
handler awaits before its side effect: the first round returns a URL-mode elicitation
pointing at pausetoken's approval page (the link is bound to its approver, who signs in
there); once the approver answered, the handler redeems the call exactly once across
workers. `ToolCallCheckpoints` reads the server's record of tool calls (`ToolCalls`:
`MemoryToolCalls`, `SQLToolCalls`) so that a call whose tool started never runs again.
"""

from __future__ import annotations

from pausetoken_mcp._calls import (
    CallRecord,
    CallState,
    MemoryToolCalls,
    SQLToolCalls,
    ToolCalls,
)
from pausetoken_mcp._codec import DEFAULT_MAX_STATE_BYTES, PauseTokenStateCodec
from pausetoken_mcp._guard import (
    ELICITATION_KEY,
    Approved,
    Pending,
    Rejected,
    ToolApprovals,
    ToolRun,
    as_tool_errors,
)
from pausetoken_mcp._kinds import (
    DECISIONS,
    TOOL_APPROVAL,
    TOOL_RUN,
    approval_payload,
    call_digest,
    register,
)
from pausetoken_mcp._reader import APPROVAL_ID, RUN_ID, ToolCallCheckpoints

__all__ = [
    "APPROVAL_ID",
    "DECISIONS",
    "DEFAULT_MAX_STATE_BYTES",
    "ELICITATION_KEY",
    "RUN_ID",
    "TOOL_APPROVAL",
    "TOOL_RUN",
    "Approved",
    "CallRecord",
    "CallState",
    "MemoryToolCalls",
    "PauseTokenStateCodec",
    "Pending",
    "Rejected",
    "SQLToolCalls",
    "ToolApprovals",
    "ToolCallCheckpoints",
    "ToolCalls",
    "ToolRun",
    "approval_payload",
    "as_tool_errors",
    "call_digest",
    "register",
]
