"""``AgentRunCheckpoints``: the checkpoint reader over an agent's stored run states."""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn

import attrs
from agents import Agent, RunState, ToolApprovalItem
from agents.exceptions import UserError

from pausetoken import Interrupt, hash_payload
from pausetoken.exceptions import (
    CheckpointNotFound,
    ConfigurationError,
    StaleToken,
    UnsupportedPayload,
)
from pausetoken.plugins import PendingInterrupt
from pausetoken_openai_agents._states import RunStates, state_digest

if TYPE_CHECKING:
    from agents.run_context import RunContextWrapper

__all__ = ["TOOL_APPROVAL", "AgentRunCheckpoints", "Decision", "ToolCall"]

# Claims are at most 512 characters long.
_MAX_NAMESPACE: Final = 512


@attrs.frozen
class ToolCall:
    """What an approval shows and what its token binds: one tool call awaiting approval.

    Attributes:
        tool_name: The tool's name, as the run will call it.
        call_id: The model's call id (the token's interrupt and tool call id).
        arguments: The arguments the tool will be called with, parsed from the model's JSON
            (the raw text when it is not JSON a hash can represent exactly).
        arguments_sha256: `hash_payload()` of the exact argument text the tool receives;
            checked again right before the decision is applied.
    """

    tool_name: str
    call_id: str
    arguments: Any = attrs.field(repr=False)
    arguments_sha256: str = attrs.field(repr=False)


@attrs.frozen
class Decision:
    """The answer to a tool approval.

    Attributes:
        approve: ``True`` runs the tool; ``False`` rejects the call.
        message: For a rejection, the exact text the model receives instead of the tool's
            output (the Agents SDK's ``rejection_message``); ``None`` for its default.
    """

    approve: bool
    message: str | None = attrs.field(default=None, repr=False)


#: The kind of pause every tool approval is. `mint_pending()` and `resume()` register it.
TOOL_APPROVAL: Final[Interrupt[ToolCall, Decision]] = Interrupt(
    "openai_agents.tool_approval", payload=ToolCall, response=Decision
)


def tool_call(item: ToolApprovalItem) -> ToolCall:
    """The payload a token binds for one ``ToolApprovalItem``.

    Raises:
        UnsupportedPayload: the item has no call id or tool name to bind.
    """
    call_id, name = item.call_id, item.name
    if not call_id or not name:
        msg = "a tool approval without a call id or tool name cannot be bound to a token"
        raise UnsupportedPayload(msg)
    raw = item.arguments or ""
    return ToolCall(name, call_id, _shown(raw), hash_payload(raw))


def _shown(raw: str) -> Any:
    """The arguments as JSON data for the approver, or the raw text when that is not exact."""
    try:
        parsed = json.loads(raw, parse_constant=_no_constant)
        hash_payload(parsed)
    except (ValueError, UnsupportedPayload):
        return raw
    return parsed


def _no_constant(name: str) -> NoReturn:
    msg = f"{name} is not JSON"
    raise ValueError(msg)


def find_approval(state: RunState[Any, Any], call_id: str) -> ToolApprovalItem | None:
    """The pending approval of ``state`` for ``call_id``, if there is one."""
    for item in state.get_interruptions():
        if item.call_id == call_id:
            return item
    return None


class AgentRunCheckpoints:
    """Reads an agent's run states (kept server-side) to refuse stale or tampered answers.

    A token binds the run id (its thread), the `state_digest()` of the stored
    ``RunState`` text (its checkpoint), the tool call id (its interrupt) and the hash of
    the `ToolCall` the stored state holds. Redeeming it requires that the stored state is
    still that exact text and that the call still awaits approval in it: once a run moved
    on (a decision was applied and the state saved again), every token bound to the old
    state is refused.

    The reader only reads ``states``; `resume()` writes the new state after the run
    returned, replacing the old one only if it is still the one the token names.

    Args:
        agent: The starting agent of the runs (``RunState.from_string`` needs it).
        states: Where the application keeps the runs' states.
        namespace: What names this agent in tokens and store rows (default:
            ``"openai-agents:" + agent.name``). A service reading another agent refuses
            the tokens (``token_namespace_mismatch``).
        context: Passed to ``RunState.from_string`` as ``context_override`` (for a context
            that does not serialize as a mapping).

    Examples:
        >>> from agents import Agent
        >>> from pausetoken_openai_agents import MemoryRunStates
        >>> checkpoints = AgentRunCheckpoints(Agent(name="refunds"), MemoryRunStates())
        >>> checkpoints.namespace
        'openai-agents:refunds'
    """

    #: The checkpoint reader API this class implements, as a literal (see
    #: `pausetoken.plugins`).
    api_version: ClassVar[int] = 1

    def __init__(
        self,
        agent: Agent[Any],
        states: RunStates,
        *,
        namespace: str | None = None,
        context: Any = None,
    ) -> None:
        """Create the reader; see the class docstring for the arguments."""
        self.agent: Agent[Any] = agent
        self.states = states
        self.namespace = (
            namespace if namespace is not None else f"openai-agents:{agent.name}"[:_MAX_NAMESPACE]
        )
        self.context: Any = context

    @classmethod
    def from_url(cls, url: str, **options: Any) -> NoReturn:
        """Refuse to be built from settings: the reader needs the agent and its state store.

        Raises:
            ConfigurationError: always; build the reader in code instead.
        """
        del url, options
        msg = (
            "the openai-agents checkpoint reader needs the agent and the run state store: "
            "build it in code and pass it as "
            "PauseTokens(..., checkpoints=AgentRunCheckpoints(agent, states))"
        )
        raise ConfigurationError(msg)

    async def restore(
        self, run_id: str, *, context: Any = None
    ) -> tuple[str, RunState[Any, Agent[Any]]]:
        """The stored text of a run's state and the ``RunState`` it restores to.

        Raises:
            CheckpointNotFound: no state is stored for the run, or it does not restore.
        """
        text = await self.states.load(run_id)
        if text is None:
            msg = "no run state is stored for the token's run"
            raise CheckpointNotFound(msg)
        return text, await self.restore_text(text, context=context)

    async def restore_text(self, text: str, *, context: Any = None) -> RunState[Any, Agent[Any]]:
        """The ``RunState`` a stored text restores to.

        Raises:
            CheckpointNotFound: the text does not restore for this agent.
        """
        override: RunContextWrapper[Any] | Any = context if context is not None else self.context
        try:
            state = await RunState.from_string(self.agent, text, context_override=override)
        except UserError as exc:
            # Its message may quote the state: the type only.
            msg = f"the stored run state does not restore for this agent ({type(exc).__name__})"
            raise CheckpointNotFound(msg) from exc
        return state

    async def bind(
        self,
        *,
        thread_id: str,
        payload: Any,
        interrupt_id: str | None = None,
        checkpoint_id: str | None = None,
    ) -> PendingInterrupt:
        """At mint time: the approval ``interrupt_id`` (a call id) in the stored state.

        Raises:
            ConfigurationError: no ``interrupt_id`` (the tool call id) was given.
            CheckpointNotFound: no state is stored for the run.
            StaleToken: the stored state is not ``checkpoint_id`` (its digest), or the call
                does not await approval in it.
        """
        del payload
        if interrupt_id is None:
            msg = "a tool approval is bound to its call id: pass it (or use mint_pending)"
            raise ConfigurationError(msg)
        text, state = await self.restore(thread_id)
        return self._pending_in(text, state, thread_id, checkpoint_id, interrupt_id)

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        """At redeem time: the stored state is the token's and the call still awaits approval.

        Raises:
            CheckpointNotFound: no state is stored for the run.
            StaleToken: the run moved on (another state is stored) or the call was decided.
        """
        text = await self.states.load(thread_id)
        if text is None:
            msg = "no run state is stored for the token's run"
            raise CheckpointNotFound(msg)
        # Compared before the state is restored: a moved-on run costs one read.
        if not hmac.compare_digest(state_digest(text), checkpoint_id):
            msg = "the run has moved on from the state the token was minted for"
            raise StaleToken(msg)
        state = await self.restore_text(text)
        return self._pending_in(text, state, thread_id, checkpoint_id, interrupt_id)

    def _pending_in(
        self,
        text: str,
        state: RunState[Any, Any],
        thread_id: str,
        checkpoint_id: str | None,
        interrupt_id: str,
    ) -> PendingInterrupt:
        digest = state_digest(text)
        if checkpoint_id is not None and not hmac.compare_digest(digest, checkpoint_id):
            msg = "the run has moved on from the given state"
            raise StaleToken(msg)
        item = find_approval(state, interrupt_id)
        if item is None:
            msg = "the tool call does not await approval in the run's stored state"
            raise StaleToken(msg)
        value = TOOL_APPROVAL.to_json(tool_call(item))
        return PendingInterrupt(thread_id, digest, interrupt_id, value)

    async def aclose(self) -> None:
        """Nothing to release: the agent and the state store belong to the application."""
