"""Everything a backend needs from pausetoken, in one public module.

A store, signer or checkpoint reader published as its own distribution imports from here
(and from [`pausetoken.exceptions`][pausetoken.exceptions] for the errors it raises, and
[`pausetoken.testing`][pausetoken.testing] for the conformance kit), never from a private
``pausetoken._*`` module. What is here follows the protocol versions below: a change that
would break a plugin raises the version, and the registry refuses a plugin declaring one
this release does not drive.

Registering a backend is an entry point naming a *factory*, usually the class itself:

* ``pausetoken.stores``: a [`StoreFactory`][pausetoken.plugins.StoreFactory], chosen by a
  URL's scheme family (``redis`` for ``redis://`` and ``rediss://``);
* ``pausetoken.signers``: a [`SignerFactory`][pausetoken.plugins.SignerFactory];
* ``pausetoken.checkpoints``: a [`ReaderFactory`][pausetoken.plugins.ReaderFactory].

The "Writing a plugin" page of the documentation walks through one of each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pausetoken._claims import CLAIMS_VERSION, Claims
from pausetoken._deadlines import Deadline, Deadlines
from pausetoken._group_commit import GroupCommit
from pausetoken._hashing import canonical_json, fingerprint, hash_payload, to_json_value
from pausetoken._install import install_hint
from pausetoken._reader_api import CHECKPOINTS_API_VERSION, CheckpointReader, PendingInterrupt
from pausetoken._signer_api import SIGNERS_API_VERSION, Signer
from pausetoken._store_api import (
    STORE_API_VERSION,
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
    SupportsConsume,
    TokenStore,
)
from pausetoken._structure import make_converter
from pausetoken._urls import redact_url, store_family

if TYPE_CHECKING:
    from pausetoken._keys import KeyRing

__all__ = [
    "CHECKPOINTS_API_VERSION",
    "CLAIMS_VERSION",
    "SIGNERS_API_VERSION",
    "STORE_API_VERSION",
    "CheckpointReader",
    "ClaimOutcome",
    "ClaimRequest",
    "ClaimResult",
    "Claims",
    "Deadline",
    "Deadlines",
    "GroupCommit",
    "PauseRecord",
    "PauseState",
    "PendingInterrupt",
    "ReaderFactory",
    "Signer",
    "SignerFactory",
    "StoreFactory",
    "SupportsConsume",
    "TokenStore",
    "canonical_json",
    "fingerprint",
    "hash_payload",
    "install_hint",
    "make_converter",
    "redact_url",
    "store_family",
    "to_json_value",
]


@runtime_checkable
class StoreFactory(Protocol):
    """What the ``pausetoken.stores`` entry point names: usually the store class.

    Examples:
        A class with a ``from_url`` classmethod is a factory:

        >>> import pausetoken
        >>> isinstance(pausetoken.MemoryStore, StoreFactory)
        True
    """

    #: The store protocol it implements: `STORE_API_VERSION`.
    api_version: int

    def from_url(self, url: str, /, **options: Any) -> TokenStore:
        """Open a store for ``url`` (the whole URL, scheme included).

        Refuse options it does not know with
        [`ConfigurationError`][pausetoken.exceptions.ConfigurationError], and never put
        the URL's password in an error (see `redact_url()`).
        """
        ...


@runtime_checkable
class SignerFactory(Protocol):
    """What the ``pausetoken.signers`` entry point names: usually the signer class."""

    #: The signer protocol it implements: `SIGNERS_API_VERSION`.
    api_version: int

    def from_keys(self, keys: KeyRing, /, **options: Any) -> Signer:
        """Build a signer over ``keys``.

        [`from_settings()`][pausetoken.PauseTokens.from_settings] passes
        ``max_token_bytes`` and the ``signer_options`` setting as keyword arguments.
        """
        ...


@runtime_checkable
class ReaderFactory(Protocol):
    """What the ``pausetoken.checkpoints`` entry point names: usually the reader class."""

    #: The reader protocol it implements: `CHECKPOINTS_API_VERSION`.
    api_version: int

    def from_url(self, url: str, /, **options: Any) -> CheckpointReader:
        """Build a reader from the ``checkpoints`` setting's value."""
        ...
