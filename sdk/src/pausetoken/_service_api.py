"""What the service's parts read of it, and how they call its store and time its rows.

[`PauseTokens`][pausetoken.PauseTokens] is a façade: minting, redeeming and the record
keeping (revoke, status, purge) are done by parts in modules of their own, each reading the
service through `Service` at every use, so a signer, store or clock set on the service later
is the one they use.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypeVar

from pausetoken.exceptions import PauseTokenError, StoreUnavailable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pausetoken._policy import TokenPolicy
    from pausetoken._reader_api import CheckpointReader
    from pausetoken._signer_api import Signer
    from pausetoken._store_api import TokenStore

__all__ = ["Service", "namespace_of", "row_expiry", "skewed", "store_call", "utc"]

_T = TypeVar("_T")


class Service(Protocol):
    """What a part reads from its service: read at each use, never copied."""

    signer: Signer
    store: TokenStore
    checkpoints: CheckpointReader
    policy: TokenPolicy
    ttl: timedelta
    lease: timedelta
    clock: Callable[[], float]


def utc(seconds: float) -> datetime:
    """``seconds`` since the epoch as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC)


def row_expiry(policy: TokenPolicy, now: datetime) -> datetime:
    """How long a store row must live: past every token that could still verify.

    A token for the pause minted up to ``now`` expires by ``now + max_lifetime`` and
    verifies until ``leeway`` after that; stores only ever raise a row's expiry.
    """
    return now + policy.max_lifetime + policy.leeway


def skewed(policy: TokenPolicy, now: datetime) -> datetime:
    """The ``now`` stores compare leases with: this clock less the skew allowance.

    Another worker's lease counts as ended only once it ended ``leeway`` ago by this
    worker's clock, so clocks that disagree by up to ``leeway`` never take a live claim.
    """
    return now - policy.leeway


def namespace_of(checkpoints: CheckpointReader) -> str | None:
    """The runtime namespace the reader serves (a LangGraph graph), bound into tokens."""
    namespace = getattr(checkpoints, "namespace", None)
    return namespace if isinstance(namespace, str) else None


async def store_call(call: Awaitable[_T]) -> _T:
    """Await a store's ``call``; whatever it raises untyped becomes `StoreUnavailable`."""
    try:
        return await call
    except PauseTokenError:
        raise
    except Exception as exc:
        # A store that fails in a way it did not type still fails closed.
        msg = f"the token store failed: {type(exc).__name__}"
        raise StoreUnavailable(msg) from exc
