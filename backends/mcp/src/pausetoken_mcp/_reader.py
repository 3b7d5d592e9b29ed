"""``ToolCallCheckpoints``: a checkpoint reader over the server's record of tool calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn

from pausetoken.exceptions import CheckpointNotFound, ConfigurationError, StaleToken
from pausetoken.plugins import PendingInterrupt
from pausetoken_mcp._calls import CallRecord, CallState

if TYPE_CHECKING:
    from pausetoken_mcp._calls import ToolCalls

__all__ = ["APPROVAL_ID", "RUN_ID", "ToolCallCheckpoints"]

#: The interrupt id of a call's approval pause (the token in the approval link).
APPROVAL_ID: Final = "approval"
#: The interrupt id of a call's run pause (the token sealed in ``requestState``).
RUN_ID: Final = "run"
# Claims are at most 512 characters long.
_MAX_NAMESPACE: Final = 512
# Which state each pause waits in: the approval while nobody answered, the run once approved.
_WAITS_IN: Final = {APPROVAL_ID: CallState.WAITING, RUN_ID: CallState.APPROVED}


class ToolCallCheckpoints:
    """Tells the service whether a tool call still waits, from the server's `ToolCalls`.

    A tool call awaiting approval is a "thread" of its own (its call id) with two pauses:
    ``approval``, pending while the approver has not answered, and ``run``, pending once
    the approval was recorded and until the tool starts. Both bind the hash of the call's
    payload as recorded (the tool's name and arguments). Once the tool started, the call
    is ``STARTED``: a second worker taking over a claim whose commit went unconfirmed is
    refused (``StaleToken``) before the tool runs again.

    The reader only reads; the guard (`ToolApprovals`) moves calls on.

    Args:
        calls: The record the server's workers share.
        namespace: What names this server in its tokens and store rows: a service reading
            another namespace refuses them (``token_namespace_mismatch``).

    Examples:
        >>> from pausetoken_mcp import MemoryToolCalls
        >>> ToolCallCheckpoints(MemoryToolCalls(), namespace="refunds").namespace
        'mcp:refunds'
    """

    #: The checkpoint reader API this class implements, as a literal.
    api_version: ClassVar[int] = 1

    def __init__(self, calls: ToolCalls, *, namespace: str = "server") -> None:
        """Create the reader; see the class docstring for the arguments."""
        if not namespace:
            msg = "the namespace must not be empty"
            raise ConfigurationError(msg)
        self.calls = calls
        #: The server's name in its tokens' ``ns`` claim and pause keys.
        self.namespace = f"mcp:{namespace}"[:_MAX_NAMESPACE]

    @classmethod
    def from_url(cls, url: str, /, **options: Any) -> NoReturn:
        """Refuse to be built from settings: the reader needs the server's `ToolCalls`.

        Raises:
            ConfigurationError: always; build the reader in code instead.
        """
        del url, options
        msg = (
            "the mcp checkpoint reader needs the server's tool calls: build it in code and "
            "pass it as PauseTokens(..., checkpoints=ToolCallCheckpoints(calls))"
        )
        raise ConfigurationError(msg)

    async def _record(self, call_id: str) -> CallRecord:
        record = await self.calls.load(call_id)
        if record is None:
            msg = "the server has no record of the token's tool call"
            raise CheckpointNotFound(msg)
        return record

    def _pending(self, record: CallRecord, interrupt_id: str) -> PendingInterrupt:
        waits_in = _WAITS_IN.get(interrupt_id)
        if waits_in is None:
            msg = "a tool call has no pause with this id"
            raise StaleToken(msg)
        if record.state is not waits_in:
            msg = (
                "the tool call already ran or is running"
                if record.state is CallState.STARTED
                else "the tool call no longer waits for this answer"
            )
            raise StaleToken(msg)
        return PendingInterrupt(record.call_id, record.call_id, interrupt_id, record.payload)

    async def bind(
        self,
        *,
        thread_id: str,
        payload: Any,
        interrupt_id: str | None = None,
        checkpoint_id: str | None = None,
    ) -> PendingInterrupt:
        """At mint time: the recorded call, which must still wait for its approval.

        Raises:
            ConfigurationError: no ``interrupt_id`` (``approval`` or ``run``) was given.
            CheckpointNotFound: the call is not recorded.
            StaleToken: the call was answered already.
        """
        del payload
        if interrupt_id not in _WAITS_IN:
            msg = "a tool call's pause is 'approval' or 'run': pass it as interrupt_id"
            raise ConfigurationError(msg)
        record = await self._record(thread_id)
        if checkpoint_id is not None and checkpoint_id != record.call_id:
            msg = "the token's checkpoint is not its tool call"
            raise StaleToken(msg)
        if record.state is not CallState.WAITING:
            msg = "the tool call was answered already"
            raise StaleToken(msg)
        return PendingInterrupt(record.call_id, record.call_id, interrupt_id, record.payload)

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        """At redeem time: the call still waits for this pause's answer.

        Raises:
            CheckpointNotFound: the call is not recorded.
            StaleToken: the call moved on (answered, rejected, or the tool started).
        """
        record = await self._record(thread_id)
        if checkpoint_id != record.call_id:
            msg = "the token's checkpoint is not its tool call"
            raise StaleToken(msg)
        return self._pending(record, interrupt_id)

    async def aclose(self) -> None:
        """Nothing to release: the record of tool calls belongs to the application."""
