"""Pause keys and claim requests shared by the SQLAlchemy store tests."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from pausetoken.plugins import ClaimRequest

SCOPE = hashlib.sha256(b"scope").hexdigest()
ANSWER = hashlib.sha256(b"answer").hexdigest()
LEASE = timedelta(seconds=30)
TTL = timedelta(hours=1)


def new_pause_key() -> str:
    """A fresh pause key, written as the service writes them (43 base64url characters)."""
    return secrets.token_urlsafe(32)


def claim_request(
    pause_key: str,
    *,
    now: datetime,
    lease_id: str | None = None,
    answer: str = ANSWER,
    expires_at: datetime | None = None,
    lease: timedelta = LEASE,
) -> ClaimRequest:
    """A claim of ``pause_key`` at ``now`` with a fresh lease of :data:`LEASE`."""
    return ClaimRequest(
        pause_key=pause_key,
        scope_hash=SCOPE,
        name="approval",
        response_hash=answer,
        expires_at=expires_at or now + TTL,
        lease_id=lease_id or new_pause_key(),
        lease_until=now + lease,
        now=now,
    )
