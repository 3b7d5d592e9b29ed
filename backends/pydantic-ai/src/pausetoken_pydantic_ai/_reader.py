"""``ConversationCheckpoints``: a checkpoint reader over Pydantic AI's conversation store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn

import attrs
from pydantic_ai.conversation_store import (
    ConversationRecord,
    ConversationStore,
    InMemoryConversationStore,
)
from pydantic_ai.messages import ModelResponse

from pausetoken.exceptions import (
    CheckpointLost,
    CheckpointNotFound,
    ConfigurationError,
    StaleToken,
    UnsupportedPayload,
)
from pausetoken.plugins import PendingInterrupt

if TYPE_CHECKING:
    from pydantic_ai.tools import DeferredToolRequests

__all__ = ["ConversationCheckpoints", "Paused", "approval_value"]

# Claims are at most 512 characters long.
_MAX_NAMESPACE: Final = 512
# How far back from the head a paused run's response may lie: the requests a pause writes
# after it (the results of the step's other calls), a handful in practice.
_MAX_WALK: Final = 64


@attrs.frozen
class Paused:
    """A conversation paused for deferred tool calls, as its store holds it.

    Attributes:
        record: The conversation's record (with the ``DeferredToolRequests``).
        response_id: The stored entry of the model response that made the calls.
        response: That response: the calls as the resumed run will read them.
    """

    record: ConversationRecord = attrs.field(repr=False)
    response_id: str
    response: ModelResponse = attrs.field(repr=False)

    @property
    def requests(self) -> DeferredToolRequests:
        """The tool calls the conversation waits on."""
        requests = self.record.deferred_tool_requests
        assert requests is not None  # noqa: S101 - paused() returns only records that wait
        return requests


def approval_value(paused: Paused, tool_call_id: str) -> dict[str, Any]:
    """The payload a token binds for one approval of a paused run, as JSON data.

    The tool's name, the call's id, the arguments the tool will receive
    (``validated_args``, what the approver must see) and the arguments the model sent as
    the stored response holds them (what the resumed run validates again), so a change to
    either after minting is refused before anything is claimed.

    Raises:
        StaleToken: the conversation holds no approval with this id (it was answered).
        UnsupportedPayload: Pydantic AI recorded no validated arguments for the call
            (a run that ended in ``run_stream()`` does not validate deferred calls).
    """
    requests = paused.requests
    if not any(c.tool_call_id == tool_call_id for c in requests.approvals):
        msg = "the tool call no longer waits for approval"
        raise StaleToken(msg)
    call = next((c for c in paused.response.tool_calls if c.tool_call_id == tool_call_id), None)
    if call is None:
        msg = "the paused response has no tool call with this id"
        raise StaleToken(msg)
    args = requests.validated_args.get(tool_call_id)
    if args is None:
        msg = (
            "Pydantic AI recorded no validated arguments for this call (run_stream() does "
            "not validate deferred calls): run the agent with run() or iter()"
        )
        raise UnsupportedPayload(msg)
    return {
        "tool_name": call.tool_name,
        "tool_call_id": tool_call_id,
        "args": dict(args),
        "requested_args": call.args_as_dict(),
    }


class ConversationCheckpoints:
    """Reads paused runs from a Pydantic AI ``ConversationStore`` to refuse stale answers.

    A paused run is a conversation whose record carries the ``DeferredToolRequests`` it waits
    on. A token binds the conversation (its ``thread_id``), the stored entry of the model
    response that made the calls (its ``checkpoint_id``), the tool call id (its
    ``interrupt_id``) and the hash of the call's tool name, id and validated arguments.
    Redeeming it requires that this response is still the conversation's last one and that
    the call still waits for approval: once a resumed run saved its results, the call is
    answered, so a second worker taking over a claim whose commit went unconfirmed is
    refused (``StaleToken``) before any tool runs.

    The reader only reads (``read_record`` and ``read_entry``, the store's own
    primitives); it never writes into the store.

    Args:
        store: Where the application saves its conversations (``await store.save(result)``
            after every run).
        namespace: What names this agent in its tokens and store rows: a service reading
            another namespace refuses them (``token_namespace_mismatch``).
        persistent: Whether the store keeps conversations across processes (default:
            everything but ``InMemoryConversationStore``); an unknown conversation is then
            ``CheckpointNotFound`` (404), otherwise ``CheckpointLost`` (424).

    Examples:
        >>> from pydantic_ai.conversation_store import InMemoryConversationStore
        >>> checkpoints = ConversationCheckpoints(InMemoryConversationStore(), namespace="refunds")
        >>> checkpoints.namespace, checkpoints.persistent
        ('pydantic-ai:refunds', False)
    """

    #: The checkpoint reader API this class implements, as a literal (see
    #: `pausetoken.plugins`).
    api_version: ClassVar[int] = 1

    def __init__(
        self,
        store: ConversationStore,
        *,
        namespace: str = "agent",
        persistent: bool | None = None,
    ) -> None:
        """Create the reader; see the class docstring for the arguments."""
        if not namespace:
            msg = "the namespace must not be empty"
            raise ConfigurationError(msg)
        self.store = store
        #: The agent's name in its tokens' ``ns`` claim and pause keys.
        self.namespace = f"pydantic-ai:{namespace}"[:_MAX_NAMESPACE]
        self.persistent = (
            not isinstance(store, InMemoryConversationStore) if persistent is None else persistent
        )

    @classmethod
    def from_url(cls, url: str, /, **options: Any) -> NoReturn:
        """Refuse to be built from settings: the reader needs the application's store.

        Raises:
            ConfigurationError: always; build the reader in code instead.
        """
        del url, options
        msg = (
            "the pydantic-ai checkpoint reader needs the conversation store: build it in code "
            "and pass it as PauseTokens(..., checkpoints=ConversationCheckpoints(store))"
        )
        raise ConfigurationError(msg)

    async def paused(self, conversation_id: str) -> Paused:
        """The paused conversation: its record and the response it paused at.

        Raises:
            CheckpointNotFound: the (persistent) store does not know the conversation.
            CheckpointLost: the in-memory store does not know the conversation.
            StaleToken: the conversation does not wait on tool calls.
        """
        record = await self.store.read_record(conversation_id)
        if record is None:
            self._unknown()
        if record.deferred_tool_requests is None or record.head_id is None:
            msg = "the conversation does not wait on deferred tool calls"
            raise StaleToken(msg)
        entry_id: str | None = record.head_id
        for _ in range(_MAX_WALK):
            if entry_id is None:
                break
            entry = await self.store.read_entry(entry_id)
            if isinstance(entry.message, ModelResponse):
                return Paused(record, entry.id, entry.message)
            entry_id = entry.parent_id
        msg = "the conversation's history does not end at a paused model response"
        raise StaleToken(msg)

    def _unknown(self) -> NoReturn:
        if self.persistent:
            msg = "the conversation store does not know the token's conversation"
            raise CheckpointNotFound(msg)
        msg = (
            "the in-memory conversation store does not know the token's conversation: it was "
            "saved in another process or lost when this one restarted"
        )
        raise CheckpointLost(msg)

    async def bind(
        self,
        *,
        thread_id: str,
        payload: Any,
        interrupt_id: str | None = None,
        checkpoint_id: str | None = None,
    ) -> PendingInterrupt:
        """At mint time: find the approval in the conversation's stored pause.

        Args:
            thread_id: The conversation id.
            payload: The payload given to ``mint`` (compared by the service with the
                stored value this returns).
            interrupt_id: The tool call id.
            checkpoint_id: The response entry the caller saw paused; it must still be the
                conversation's last response.

        Returns:
            The pause, with the value built from the stored ``DeferredToolRequests``.

        Raises:
            ConfigurationError: no ``interrupt_id`` (the tool call id) was given.
            CheckpointNotFound, CheckpointLost: the conversation is unknown.
            StaleToken: the conversation moved on, or the call does not wait for approval.
            UnsupportedPayload: no validated arguments were recorded for the call.
        """
        del payload
        if interrupt_id is None:
            msg = "a deferred tool approval is bound to its tool call id: pass it"
            raise ConfigurationError(msg)
        paused = await self.paused(thread_id)
        if checkpoint_id is not None and checkpoint_id != paused.response_id:
            msg = "the conversation has moved on from the given response"
            raise StaleToken(msg)
        value = approval_value(paused, interrupt_id)
        return PendingInterrupt(thread_id, paused.response_id, interrupt_id, value)

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        """At redeem time: the token's response is the last one and its call still waits.

        Raises:
            CheckpointNotFound, CheckpointLost: the conversation is unknown.
            StaleToken: the conversation moved on, or the call was answered.
        """
        paused = await self.paused(thread_id)
        if paused.response_id != checkpoint_id:
            msg = "the conversation has moved on to another model response"
            raise StaleToken(msg)
        value = approval_value(paused, interrupt_id)
        return PendingInterrupt(thread_id, checkpoint_id, interrupt_id, value)

    async def aclose(self) -> None:
        """Nothing to release: the conversation store belongs to the application."""
