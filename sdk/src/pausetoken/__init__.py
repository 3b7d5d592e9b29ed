"""pausetoken: signed, single-use resume tokens for human-in-the-loop pauses.

Mint a token when a run pauses to ask a person something; redeem the answer exactly once.
Everything public is re-exported here; the modules behind it are private. Names are
imported on first use, so ``import pausetoken`` stays cheap for a command line or a worker
that only needs part of it.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pausetoken._claims import Claims, InterruptEvent, Redemption, Scope, hash_scope
    from pausetoken._events import AuditEvent, EventKind, LoggingObserver, Observer
    from pausetoken._hashing import canonical_json, hash_payload
    from pausetoken._interrupt import Interrupt
    from pausetoken._keys import KeyRing
    from pausetoken._lease import Lease
    from pausetoken._memory_checkpoints import MemoryCheckpoints
    from pausetoken._memory_store import MemoryStore, MemoryStoreWarning
    from pausetoken._policy import TokenPolicy
    from pausetoken._reader_api import CheckpointReader, PendingInterrupt
    from pausetoken._registry import (
        BackendInfo,
        available_backends,
        open_store,
        register_store,
        reset_registry,
    )
    from pausetoken._service import PauseTokens, TokenStatus
    from pausetoken._settings import Settings
    from pausetoken._signer_api import Signer
    from pausetoken._signers import JoseSigner, SealedSigner
    from pausetoken._store_api import TokenStore
    from pausetoken._structure import make_converter
    from pausetoken._urls import redact_url
    from pausetoken._verify import decode_unverified, verify_token

#: This distribution's version.
__version__: Final = "0.1.0.dev0"

# Where each public name lives; the module is imported when the name is first used.
_HOMES: Final = {
    "AuditEvent": "pausetoken._events",
    "BackendInfo": "pausetoken._registry",
    "CheckpointReader": "pausetoken._reader_api",
    "EventKind": "pausetoken._events",
    "Claims": "pausetoken._claims",
    "Interrupt": "pausetoken._interrupt",
    "InterruptEvent": "pausetoken._claims",
    "JoseSigner": "pausetoken._signers",
    "KeyRing": "pausetoken._keys",
    "Lease": "pausetoken._lease",
    "LoggingObserver": "pausetoken._events",
    "MemoryCheckpoints": "pausetoken._memory_checkpoints",
    "MemoryStore": "pausetoken._memory_store",
    "MemoryStoreWarning": "pausetoken._memory_store",
    "Observer": "pausetoken._events",
    "PauseTokens": "pausetoken._service",
    "PendingInterrupt": "pausetoken._reader_api",
    "Redemption": "pausetoken._claims",
    "Scope": "pausetoken._claims",
    "SealedSigner": "pausetoken._signers",
    "Settings": "pausetoken._settings",
    "Signer": "pausetoken._signer_api",
    "TokenPolicy": "pausetoken._policy",
    "TokenStatus": "pausetoken._service",
    "TokenStore": "pausetoken._store_api",
    "available_backends": "pausetoken._registry",
    "canonical_json": "pausetoken._hashing",
    "decode_unverified": "pausetoken._verify",
    "hash_payload": "pausetoken._hashing",
    "hash_scope": "pausetoken._claims",
    "make_converter": "pausetoken._structure",
    "open_store": "pausetoken._registry",
    "redact_url": "pausetoken._urls",
    "register_store": "pausetoken._registry",
    "reset_registry": "pausetoken._registry",
    "verify_token": "pausetoken._verify",
}

__all__ = [
    "AuditEvent",
    "BackendInfo",
    "CheckpointReader",
    "Claims",
    "EventKind",
    "Interrupt",
    "InterruptEvent",
    "JoseSigner",
    "KeyRing",
    "Lease",
    "LoggingObserver",
    "MemoryCheckpoints",
    "MemoryStore",
    "MemoryStoreWarning",
    "Observer",
    "PauseTokens",
    "PendingInterrupt",
    "Redemption",
    "Scope",
    "SealedSigner",
    "Settings",
    "Signer",
    "TokenPolicy",
    "TokenStatus",
    "TokenStore",
    "__version__",
    "available_backends",
    "canonical_json",
    "decode_unverified",
    "hash_payload",
    "hash_scope",
    "make_converter",
    "open_store",
    "redact_url",
    "register_store",
    "reset_registry",
    "verify_token",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        msg = f"module 'pausetoken' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


# A library configures no logging; applications choose where pausetoken's events go.
logging.getLogger("pausetoken").addHandler(logging.NullHandler())
