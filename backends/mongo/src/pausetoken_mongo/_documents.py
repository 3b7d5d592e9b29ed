"""How a pause is kept in one MongoDB document, and its times in exact form.

BSON dates hold milliseconds, the store protocol microseconds: times are kept as integer
microseconds since the Unix epoch (``lease_until``, ``expires_at``), and the TTL index
reads a BSON date (``remove_after``) rounded *up* to the millisecond, so the server never
removes a document before its ``expires_at``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from pausetoken.plugins import PauseRecord, PauseState

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "EXPIRES_AT",
    "LEASE_ID",
    "LEASE_UNTIL",
    "REMOVE_AFTER",
    "STATE",
    "claim_fields",
    "from_micros",
    "raise_expiry",
    "record",
    "revoked_document",
    "to_micros",
]

STATE: Final = "state"
LEASE_ID: Final = "lease_id"
LEASE_UNTIL: Final = "lease_until"
EXPIRES_AT: Final = "expires_at"
#: The BSON date the TTL index reads (``expires_at`` rounded up to the millisecond).
REMOVE_AFTER: Final = "remove_after"

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


def to_micros(moment: datetime) -> int:
    """Microseconds since the epoch: exact, and ordered as the times are."""
    return (moment - _EPOCH) // _MICROSECOND


def from_micros(micros: int) -> datetime:
    """The aware UTC time `to_micros()` was given."""
    return _EPOCH + timedelta(microseconds=micros)


def _remove_after(micros: int) -> datetime:
    millis = -(-micros // 1000)  # rounded up: never earlier than expires_at
    return _EPOCH + timedelta(milliseconds=millis)


def raise_expiry(expires_at: datetime) -> dict[str, Any]:
    """The ``$max`` update that raises a document's expiry, never lowering it."""
    micros = to_micros(expires_at)
    return {EXPIRES_AT: micros, REMOVE_AFTER: _remove_after(micros)}


def claim_fields(
    *,
    scope_hash: str,
    name: str,
    response_hash: str,
    lease_id: str,
    lease_until: datetime,
    state: str = PauseState.CLAIMED.value,
) -> dict[str, Any]:
    """The fields a claim writes (a takeover overwrites all of them).

    A consume writes the same fields in ``state`` ``redeemed``: what a claim and its commit
    leave together.
    """
    return {
        STATE: state,
        "scope_hash": scope_hash,
        "name": name,
        "response_hash": response_hash,
        LEASE_ID: lease_id,
        LEASE_UNTIL: to_micros(lease_until),
    }


def revoked_document(
    pause_key: str, scope_hash: str, name: str, expires_at: datetime
) -> dict[str, Any]:
    """A new document for a pause revoked before anyone claimed it."""
    return {
        "_id": pause_key,
        STATE: PauseState.REVOKED.value,
        "scope_hash": scope_hash,
        "name": name,
        **raise_expiry(expires_at),
    }


def record(document: Mapping[str, Any]) -> PauseRecord:
    """The `PauseRecord` a stored document holds."""
    lease_until = document.get(LEASE_UNTIL)
    return PauseRecord(
        pause_key=document["_id"],
        state=PauseState(document[STATE]),
        scope_hash=document["scope_hash"],
        name=document["name"],
        expires_at=from_micros(document[EXPIRES_AT]),
        response_hash=document.get("response_hash"),
        lease_id=document.get(LEASE_ID),
        lease_until=None if lease_until is None else from_micros(lease_until),
    )
