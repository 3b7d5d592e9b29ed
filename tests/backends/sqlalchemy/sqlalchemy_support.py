"""Claim requests shared by the SQLAlchemy store tests."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from pausetoken import ClaimRequest
from pausetoken._claims import new_jti

SCOPE = hashlib.sha256(b"scope").hexdigest()
ANSWER = hashlib.sha256(b"answer").hexdigest()
LEASE = timedelta(seconds=30)


def claim_request(
    jti: str, *, now: datetime, lease_id: str | None = None, answer: str = ANSWER
) -> ClaimRequest:
    """A claim of ``jti`` at ``now`` with a fresh lease of :data:`LEASE`."""
    return ClaimRequest(
        jti=jti,
        scope_hash=SCOPE,
        name="approval",
        response_hash=answer,
        expires_at=now + timedelta(hours=1),
        lease_id=lease_id or new_jti(),
        lease_until=now + LEASE,
        now=now,
    )
