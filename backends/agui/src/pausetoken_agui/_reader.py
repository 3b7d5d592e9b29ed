"""``ThreadCheckpoints``: the checkpoint reader over an AG-UI agent's thread states."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn

from pausetoken.exceptions import (
    CheckpointLost,
    CheckpointNotFound,
    ConfigurationError,
    StaleToken,
)
from pausetoken.plugins import PendingInterrupt
from pausetoken_agui._threads import MemoryThreadStates

if TYPE_CHECKING:
    from pausetoken_agui._threads import ThreadState, ThreadStates

__all__ = ["ThreadCheckpoints"]

# Claims are at most 512 characters long.
_MAX_NAMESPACE: Final = 512


class ThreadCheckpoints:
    """Reads an AG-UI agent's thread states to refuse stale, foreign or tampered answers.

    A token binds the thread id, the thread's checkpoint when the run paused, the AG-UI
    interrupt id and the hash of the payload shown. Redeeming it requires that the thread
    is still at that checkpoint and the interrupt still pending there, with the payload
    unchanged. A resumed run moves the thread to a new checkpoint before the agent runs
    (the fence in [`resume()`][pausetoken_agui.AgUi.resume]), so a worker that takes over
    a claim whose commit went unconfirmed is refused (``StaleToken``) before the agent
    runs again.

    The reader only reads ``states``.

    Args:
        states: Where the application keeps its threads' states.
        namespace: What names this agent in its tokens and store rows: a service reading
            another namespace refuses them (``token_namespace_mismatch``).
        persistent: Whether the states survive a restart (default: everything but
            `MemoryThreadStates`); an unknown thread is then ``CheckpointNotFound`` (404),
            otherwise ``CheckpointLost`` (424).

    Examples:
        >>> checkpoints = ThreadCheckpoints(MemoryThreadStates(), namespace="refunds")
        >>> checkpoints.namespace, checkpoints.persistent
        ('agui:refunds', False)
    """

    #: The checkpoint reader API this class implements, as a literal (see
    #: `pausetoken.plugins`).
    api_version: ClassVar[int] = 1

    def __init__(
        self,
        states: ThreadStates,
        *,
        namespace: str = "agent",
        persistent: bool | None = None,
    ) -> None:
        """Create the reader; see the class docstring for the arguments."""
        if not namespace:
            msg = "the namespace must not be empty"
            raise ConfigurationError(msg)
        self.states = states
        #: The agent's name in its tokens' ``ns`` claim and pause keys.
        self.namespace = f"agui:{namespace}"[:_MAX_NAMESPACE]
        self.persistent = (
            not isinstance(states, MemoryThreadStates) if persistent is None else persistent
        )

    @classmethod
    def from_url(cls, url: str, /, **options: Any) -> NoReturn:
        """Refuse to be built from settings: the reader needs the application's thread states.

        Raises:
            ConfigurationError: always; build the reader in code instead.
        """
        del url, options
        msg = (
            "the agui checkpoint reader needs the thread state store: build it in code and "
            "pass it as PauseTokens(..., checkpoints=ThreadCheckpoints(states))"
        )
        raise ConfigurationError(msg)

    async def state(self, thread_id: str) -> ThreadState:
        """The thread's state.

        Raises:
            CheckpointNotFound: the (persistent) store does not know the thread.
            CheckpointLost: the in-memory store does not know the thread.
        """
        state = await self.states.load(thread_id)
        if state is not None:
            return state
        if self.persistent:
            msg = "the thread state store does not know the token's thread"
            raise CheckpointNotFound(msg)
        msg = (
            "the in-memory thread state store does not know the token's thread: it paused in "
            "another process or was lost when this one restarted"
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
        """At mint time: the interrupt in the thread's stored state.

        Raises:
            ConfigurationError: no ``interrupt_id`` was given.
            CheckpointNotFound, CheckpointLost: the thread is unknown.
            StaleToken: the thread is not at ``checkpoint_id`` or does not wait on the
                interrupt.
        """
        del payload
        if interrupt_id is None:
            msg = "an AG-UI interrupt is bound to its id: pass it (or use AgUi.pause)"
            raise ConfigurationError(msg)
        state = await self.state(thread_id)
        if checkpoint_id is not None and checkpoint_id != state.checkpoint_id:
            msg = "the thread has moved on from the given checkpoint"
            raise StaleToken(msg)
        return self._pending_in(state, thread_id, interrupt_id)

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        """At redeem time: the thread is still at the token's checkpoint, the interrupt pending.

        Raises:
            CheckpointNotFound, CheckpointLost: the thread is unknown.
            StaleToken: the thread moved on, or the interrupt was answered.
        """
        state = await self.state(thread_id)
        if state.checkpoint_id != checkpoint_id:
            msg = "the thread has moved on from the checkpoint the token was minted at"
            raise StaleToken(msg)
        return self._pending_in(state, thread_id, interrupt_id)

    @staticmethod
    def _pending_in(state: ThreadState, thread_id: str, interrupt_id: str) -> PendingInterrupt:
        waiting = state.find(interrupt_id)
        if waiting is None:
            msg = "the thread does not wait on this interrupt"
            raise StaleToken(msg)
        return PendingInterrupt(thread_id, state.checkpoint_id, interrupt_id, waiting.value)

    async def aclose(self) -> None:
        """Nothing to release: the thread state store belongs to the application."""
