"""pausetoken: signed, single-use resume tokens for human-in-the-loop pauses.

Mint a token when a run pauses to ask a person something; redeem the answer exactly once.
Everything public is re-exported here; the modules behind it are private.
"""

from __future__ import annotations

import logging

from pausetoken._claims import Claims, InterruptEvent, Redemption, Scope
from pausetoken._hashing import canonical_json, hash_payload, hash_scope
from pausetoken._interrupt import Interrupt
from pausetoken._keys import KeyRing
from pausetoken._lease import Lease
from pausetoken._memory_checkpoints import MemoryCheckpoints
from pausetoken._memory_store import MemoryStore, MemoryStoreWarning
from pausetoken._reader_api import CheckpointReader, PendingInterrupt
from pausetoken._registry import (
    BackendInfo,
    available_backends,
    open_store,
    redact_url,
    register_store,
    reset_registry,
)
from pausetoken._service import PauseTokens, TokenStatus
from pausetoken._settings import Settings
from pausetoken._signer_api import Signer
from pausetoken._signers import JoseSigner, SealedSigner
from pausetoken._store_api import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
    TokenStore,
)
from pausetoken._verify import TokenPolicy, decode_unverified, verify_token

__all__ = [
    "BackendInfo",
    "CheckpointReader",
    "ClaimOutcome",
    "ClaimRequest",
    "ClaimResult",
    "Claims",
    "Interrupt",
    "InterruptEvent",
    "JoseSigner",
    "KeyRing",
    "Lease",
    "MemoryCheckpoints",
    "MemoryStore",
    "MemoryStoreWarning",
    "PauseRecord",
    "PauseState",
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
    "available_backends",
    "canonical_json",
    "decode_unverified",
    "hash_payload",
    "hash_scope",
    "open_store",
    "redact_url",
    "register_store",
    "reset_registry",
    "verify_token",
]

# A library configures no logging; applications choose where pausetoken's events go.
logging.getLogger("pausetoken").addHandler(logging.NullHandler())
