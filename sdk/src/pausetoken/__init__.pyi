# The public names of pausetoken, and where each one lives: written once, here.
#
# Type checkers read this stub; at run time pausetoken/__init__.py reads it too, to import a
# name's module when the name is first used (the layout of SPEC 1's lazy_loader stubs). Each
# import re-exports its name (`X as X`).

from pausetoken._claims import Claims as Claims
from pausetoken._claims import InterruptEvent as InterruptEvent
from pausetoken._claims import Redemption as Redemption
from pausetoken._claims import Scope as Scope
from pausetoken._claims import hash_scope as hash_scope
from pausetoken._events import AuditEvent as AuditEvent
from pausetoken._events import EventKind as EventKind
from pausetoken._events import LoggingObserver as LoggingObserver
from pausetoken._events import Observer as Observer
from pausetoken._hashing import canonical_json as canonical_json
from pausetoken._hashing import hash_payload as hash_payload
from pausetoken._interrupt import Interrupt as Interrupt
from pausetoken._keys import KeyRing as KeyRing
from pausetoken._lease import Lease as Lease
from pausetoken._memory_checkpoints import MemoryCheckpoints as MemoryCheckpoints
from pausetoken._memory_store import MemoryStore as MemoryStore
from pausetoken._memory_store import MemoryStoreWarning as MemoryStoreWarning
from pausetoken._policy import TokenPolicy as TokenPolicy
from pausetoken._reader_api import CheckpointReader as CheckpointReader
from pausetoken._reader_api import PendingInterrupt as PendingInterrupt
from pausetoken._registry import BackendInfo as BackendInfo
from pausetoken._registry import available_backends as available_backends
from pausetoken._registry import open_store as open_store
from pausetoken._registry import register_store as register_store
from pausetoken._registry import reset_registry as reset_registry
from pausetoken._service import PauseTokens as PauseTokens
from pausetoken._service import TokenStatus as TokenStatus
from pausetoken._settings import Settings as Settings
from pausetoken._signer_api import Signer as Signer
from pausetoken._signers import JoseSigner as JoseSigner
from pausetoken._signers import SealedSigner as SealedSigner
from pausetoken._store_api import TokenStore as TokenStore
from pausetoken._structure import make_converter as make_converter
from pausetoken._urls import redact_url as redact_url
from pausetoken._verify import decode_unverified as decode_unverified
from pausetoken._verify import verify_token as verify_token

#: This distribution's version, as installed.
__version__: str
