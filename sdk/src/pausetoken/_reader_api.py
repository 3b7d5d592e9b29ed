"""The checkpoint reader protocol: is the pause a token names still the current one?"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol, runtime_checkable

import attrs

from pausetoken._hashing import hash_payload

__all__ = ["CHECKPOINTS_API_VERSION", "CheckpointReader", "PendingInterrupt"]

#: The reader protocol version a plugin declares it implements (``api_version``).
CHECKPOINTS_API_VERSION = 1


_DECODER = json.JSONDecoder()


def _loads(payload: bytes) -> Any:
    """``json.loads(payload)``, faster for what canonical JSON is: UTF-8 without whitespace.

    `json.loads` looks for whitespace before and after the value with a regular expression
    and guesses the encoding; for text that starts with the value and ends with it, the
    value decoded from the start is the same.
    """
    try:
        text = payload.decode("utf-8")
        value, end = _DECODER.raw_decode(text)
    except ValueError:
        pass
    else:
        if end == len(text):
            return value
    # Anything else as json.loads reads it, errors included.
    return json.loads(payload)


@attrs.frozen
class PendingInterrupt:
    """A pause as the runtime stored it.

    Attributes:
        thread_id: The run's thread.
        checkpoint_id: The checkpoint the thread is paused at.
        interrupt_id: The interrupt's id within that checkpoint.
        value: The payload the runtime stored for it (hashed to bind the token).
    """

    thread_id: str
    checkpoint_id: str
    interrupt_id: str
    value: Any = attrs.field(repr=False)
    # (the value, its hash) when the reader handed over the value's canonical JSON.
    _hashed: tuple[Any, str] | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @classmethod
    def from_canonical_json(
        cls, thread_id: str, checkpoint_id: str, interrupt_id: str, payload: bytes
    ) -> PendingInterrupt:
        """A pause whose payload the runtime keeps as canonical JSON (`canonical_json()`'s bytes).

        The value is decoded from ``payload`` afresh and its hash taken from those same bytes,
        so redeeming does not encode the payload again. Bytes that are not canonical JSON
        hash differently from the payload the token was minted for: the redemption is then
        refused (``payload_mismatch``), never let through. A copy made with
        ``attrs.evolve()`` hashes its value anew; the value must not be changed in place.
        """
        pending = cls(thread_id, checkpoint_id, interrupt_id, _loads(payload))
        object.__setattr__(pending, "_hashed", (pending.value, hashlib.sha256(payload).hexdigest()))
        return pending

    @property
    def value_hash(self) -> str:
        """sha256 hex of the value's canonical JSON: what a token's ``request_hash`` binds.

        Raises:
            UnsupportedPayload: the value cannot be represented exactly as JSON.
        """
        hashed = self._hashed
        if hashed is not None and hashed[0] is self.value:
            return hashed[1]
        return hash_payload(self.value)


@runtime_checkable
class CheckpointReader(Protocol):
    """Reads a runtime's checkpoints so stale or foreign answers are refused.

    Implementations raise [`CheckpointNotFound`][pausetoken.exceptions.CheckpointNotFound] when the
    thread or checkpoint does not exist, [`CheckpointLost`][pausetoken.exceptions.CheckpointLost]
    when it was lost because the runtime does not persist state, and
    [`StaleToken`][pausetoken.exceptions.StaleToken] when the thread moved on or the interrupt is
    no longer pending.

    A reader may also have a ``namespace`` attribute (a string naming the runtime it
    reads, such as one LangGraph graph): tokens then carry it in their ``ns`` claim and in
    their pause key, and a service whose reader has another namespace refuses them with
    ``InvalidToken`` (``token_namespace_mismatch``).
    """

    async def bind(
        self,
        *,
        thread_id: str,
        payload: Any,
        interrupt_id: str | None = None,
        checkpoint_id: str | None = None,
    ) -> PendingInterrupt:
        """At mint time: the pause a new token binds to.

        Readers of runtimes that store interrupts (LangGraph) look the interrupt up in the
        current checkpoint and return the value the runtime stored; readers for runtimes
        that hand pausetoken the payload record it.
        """
        ...

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        """At redeem time: confirm the checkpoint is current and the interrupt pending."""
        ...

    async def aclose(self) -> None:
        """Release what the reader opened (never what it was handed)."""
        ...
