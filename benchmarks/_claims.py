"""A claim request for a new pause, as the service builds one for a token's claims."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pausetoken.plugins import ClaimRequest

if TYPE_CHECKING:
    from pausetoken import Claims


def fresh_claim(claims: Claims) -> ClaimRequest:
    """A claim of an unclaimed pause (random key and lease) with ``claims``' hashes and name."""
    now = datetime.now(UTC)
    return ClaimRequest(
        pause_key=secrets.token_urlsafe(32),
        scope_hash=claims.scope_hash,
        name=claims.name,
        response_hash=claims.request_hash,
        expires_at=now + timedelta(hours=1),
        lease_id=secrets.token_urlsafe(16),
        lease_until=now + timedelta(seconds=60),
        now=now,
    )
