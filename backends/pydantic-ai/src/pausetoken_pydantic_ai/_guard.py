"""``ApprovedArgs``: the tool runs with the approved arguments, or not at all."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from pydantic_ai.capabilities import AbstractCapability

from pausetoken.exceptions import PayloadMismatch
from pausetoken_pydantic_ai._kinds import args_digest

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import ToolDefinition

__all__ = ["MARKER", "ApprovedArgs"]

#: The key under which `resume()` records, in ``DeferredToolResults.metadata[tool_call_id]``,
#: the tool name and argument digest a redeemed token approved.
MARKER: Final = "pausetoken"


@dataclass
class ApprovedArgs(AbstractCapability[Any]):
    """Re-checks an approved call's arguments right before its tool runs.

    Pydantic AI validates an approved call's arguments again when the run resumes (from the
    message history, or from an edit's ``override_args``), and validation hooks may rewrite
    them. In ``before_tool_execute`` this capability compares the digest of the arguments
    the tool is about to receive with the one the approver approved; on a mismatch it raises
    [`PayloadMismatch`][pausetoken.exceptions.PayloadMismatch] and the tool does not run.

    `resume()` adds one to every run it makes, with the digests of the redeemed decisions.
    Installed on the agent itself (``Agent(..., capabilities=[ApprovedArgs()])``), it also
    refuses any call approved without a redeemed token (``DeferredToolResults`` built by
    hand): such a call carries no approved digest.

    Args:
        approved: Per tool call id, the tool name and argument digest approved; when empty,
            they are read from the call's metadata, where `resume()` records them.
    """

    approved: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
    ) -> dict[str, Any]:
        """Refuse the call unless its arguments are the approved ones.

        Raises:
            PayloadMismatch: the call was approved without a redeemed token, for another
                tool, or the arguments differ from the approved ones.
        """
        del tool_def
        if not ctx.tool_call_approved:
            return args
        expected = self.approved.get(call.tool_call_id) or _recorded(ctx.tool_call_metadata)
        if expected is None:
            msg = "the tool call was approved without a redeemed pausetoken; it does not run"
            raise PayloadMismatch(msg)
        tool_name, digest = expected
        if call.tool_name != tool_name or not hmac.compare_digest(args_digest(args), digest):
            msg = "the tool's arguments are not the approved ones; the tool does not run"
            raise PayloadMismatch(msg)
        return args


def _recorded(metadata: Any) -> tuple[str, str] | None:
    if not isinstance(metadata, Mapping):
        return None
    marker = metadata.get(MARKER)
    if not isinstance(marker, Mapping):
        return None
    tool_name, digest = marker.get("tool_name"), marker.get("args_digest")
    if isinstance(tool_name, str) and isinstance(digest, str):
        return tool_name, digest
    return None
