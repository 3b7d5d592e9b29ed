"""Pydantic AI integration for pausetoken.

After a run ended with ``DeferredToolRequests`` and was saved to a ``ConversationStore``,
`mint_approvals()` mints one token per tool call awaiting approval, bound to the
conversation, the model response that made the calls, the call id and the digest of the
validated arguments. `resume()` redeems the approvers' decisions (approve, edit, reject)
exactly once, resumes the run with ``DeferredToolResults`` and re-checks each approved
call's arguments right before its tool runs (`ApprovedArgs`).
`ConversationCheckpoints` is the checkpoint reader the service uses for all of this.
"""

from __future__ import annotations

from pausetoken_pydantic_ai._guard import MARKER, ApprovedArgs
from pausetoken_pydantic_ai._kinds import (
    DECISIONS,
    TOOL_APPROVAL,
    ToolApproval,
    args_digest,
    register,
)
from pausetoken_pydantic_ai._reader import ConversationCheckpoints, approval_value
from pausetoken_pydantic_ai._resume import Resumed, mint_approvals, resume, tool_validators

__all__ = [
    "DECISIONS",
    "MARKER",
    "TOOL_APPROVAL",
    "ApprovedArgs",
    "ConversationCheckpoints",
    "Resumed",
    "ToolApproval",
    "approval_value",
    "args_digest",
    "mint_approvals",
    "register",
    "resume",
    "tool_validators",
]
