"""A checkpoint reader for runtimes that hand pausetoken the payload themselves."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from pausetoken._hashing import canonical_json
from pausetoken._reader_api import CHECKPOINTS_API_VERSION, PendingInterrupt
from pausetoken.exceptions import (
    CheckpointLost,
    ConfigurationError,
    PayloadMismatch,
    StaleToken,
)

__all__ = ["MemoryCheckpoints"]


@attrs.define
class _Thread:
    checkpoint_id: str
    #: interrupt id -> the payload as canonical JSON bytes. Bytes, so that nobody holding a
    #: returned value can change what is recorded.
    pending: dict[str, bytes] = attrs.field(factory=dict)


class MemoryCheckpoints:
    """Keeps pauses in this process's memory, keyed by thread, checkpoint and interrupt id.

    For runtimes without a checkpointer pausetoken can read: minting records the payload
    (`bind()`), the runtime tells the reader when a thread moves on (`advance()`) or
    an interrupt was answered (`resolve()`), and redeeming checks the token against what
    was recorded. Nothing survives the process: a token whose thread this reader does not
    know is answered with [`CheckpointLost`][pausetoken.exceptions.CheckpointLost] (424).

    Examples:
        >>> checkpoints = MemoryCheckpoints()
        >>> new_checkpoint = checkpoints.advance("thread-1")
    """

    api_version = CHECKPOINTS_API_VERSION

    def __init__(self) -> None:
        """Create an empty reader."""
        self._threads: dict[str, _Thread] = {}

    @classmethod
    def from_url(cls, url: str, **options: Any) -> MemoryCheckpoints:
        """Build the reader from its registry name (``memory`` or ``memory://``).

        Raises:
            ConfigurationError: for any other URL or for options (it takes none).
        """
        if url not in {"memory", "memory:", "memory://"} or options:
            msg = "the memory checkpoint reader is chosen as 'memory://' and takes no options"
            raise ConfigurationError(msg)
        return cls()

    async def bind(
        self,
        *,
        thread_id: str,
        payload: Any,
        interrupt_id: str | None = None,
        checkpoint_id: str | None = None,
    ) -> PendingInterrupt:
        """Record a pause and return it.

        A ``checkpoint_id`` other than the thread's current one moves the thread on to it
        (older pauses of the thread become stale). Without an ``interrupt_id`` a new one is
        made.

        Raises:
            PayloadMismatch: the interrupt is already recorded with another payload.
        """
        thread = self._threads.get(thread_id)
        if thread is None:
            thread = _Thread(checkpoint_id or uuid.uuid4().hex)
            self._threads[thread_id] = thread
        elif checkpoint_id is not None and checkpoint_id != thread.checkpoint_id:
            thread.checkpoint_id = checkpoint_id
            thread.pending.clear()
        interrupt_id = interrupt_id or uuid.uuid4().hex
        encoded = canonical_json(payload)
        recorded = thread.pending.get(interrupt_id)
        if recorded is not None and recorded != encoded:
            msg = "this interrupt is already recorded with another payload"
            raise PayloadMismatch(msg)
        thread.pending[interrupt_id] = encoded
        return PendingInterrupt(thread_id, thread.checkpoint_id, interrupt_id, payload)

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        """Return the recorded pause if it is still current and unanswered.

        Raises:
            CheckpointLost: the thread is unknown to this (non-persistent) reader.
            StaleToken: the thread moved on or the interrupt was resolved.
        """
        thread = self._threads.get(thread_id)
        if thread is None:
            raise CheckpointLost
        if thread.checkpoint_id != checkpoint_id:
            msg = "the thread has moved on to another checkpoint"
            raise StaleToken(msg)
        if interrupt_id not in thread.pending:
            msg = "the interrupt is no longer pending"
            raise StaleToken(msg)
        encoded = thread.pending[interrupt_id]
        return PendingInterrupt.from_canonical_json(thread_id, checkpoint_id, interrupt_id, encoded)

    def current(self, thread_id: str) -> str | None:
        """The thread's current checkpoint id, or ``None`` if the thread is unknown."""
        thread = self._threads.get(thread_id)
        return None if thread is None else thread.checkpoint_id

    def advance(self, thread_id: str, checkpoint_id: str | None = None) -> str:
        """Move a thread to a new checkpoint; its pending pauses become stale.

        Returns:
            The new checkpoint id.
        """
        new_id = checkpoint_id or uuid.uuid4().hex
        self._threads[thread_id] = _Thread(new_id)
        return new_id

    def resolve(self, thread_id: str, interrupt_id: str) -> None:
        """Mark one interrupt answered; other pauses of the checkpoint stay pending."""
        thread = self._threads.get(thread_id)
        if thread is not None:
            thread.pending.pop(interrupt_id, None)

    async def aclose(self) -> None:
        """Nothing to release; present for the protocol."""
