"""OpenAI Agents SDK integration for pausetoken.

When ``Runner.run`` returns with ``interruptions`` (tools created with
``needs_approval``), `mint_pending()` stores the run's ``RunState`` server-side (in the
application's `RunStates`) and mints one token per ``ToolApprovalItem``, bound to the call
id, the tool's name, the digest of its arguments and the digest of the stored state.
`resume()` redeems a token, applies ``approve``/``reject`` to the stored state and resumes
the run with ``Runner.run``, exactly once. `AgentRunCheckpoints` is the checkpoint reader
the service uses for all of this.
"""

from __future__ import annotations

from pausetoken_openai_agents._reader import TOOL_APPROVAL, AgentRunCheckpoints, Decision, ToolCall
from pausetoken_openai_agents._resume import Resumed, mint_pending, resume
from pausetoken_openai_agents._states import (
    MemoryRunStates,
    RunStates,
    SQLRunStates,
    state_digest,
)

__all__ = [
    "TOOL_APPROVAL",
    "AgentRunCheckpoints",
    "Decision",
    "MemoryRunStates",
    "Resumed",
    "RunStates",
    "SQLRunStates",
    "ToolCall",
    "mint_pending",
    "resume",
    "state_digest",
]
