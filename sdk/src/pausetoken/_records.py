"""A service's tokens outside a redemption: verify one, revoke its pause, say where it stands."""

from __future__ import annotations

import enum
import hmac
from typing import TYPE_CHECKING

from pausetoken._claims import Claims, Scope, hash_scope
from pausetoken._service_api import row_expiry, skewed, store_call, utc
from pausetoken._store_api import PauseState
from pausetoken._verify import verify_token
from pausetoken.exceptions import PauseTokenError, ScopeMismatch, TokenExpired

if TYPE_CHECKING:
    from datetime import datetime

    from pausetoken._reporter import Reporter
    from pausetoken._service_api import Service

__all__ = ["Records", "TokenStatus"]


class TokenStatus(enum.Enum):
    """Where a token stands (see `PauseTokens.status()`)."""

    #: Valid and not yet redeemed.
    ACTIVE = "active"
    #: A redeemer holds a live claim on it.
    IN_PROGRESS = "in_progress"
    #: Redeemed.
    REDEEMED = "redeemed"
    #: Revoked.
    REVOKED = "revoked"
    #: Past its expiry (and not redeemed or revoked in a store that still remembers it).
    EXPIRED = "expired"


_STATUS_OF_STATE = {
    PauseState.CLAIMED: TokenStatus.IN_PROGRESS,
    PauseState.REDEEMED: TokenStatus.REDEEMED,
    PauseState.REVOKED: TokenStatus.REVOKED,
}


class Records:
    """What a service's store records of its pauses, read and changed outside redemptions.

    ``verify()``, ``revoke()``, ``status()`` and ``purge()`` of `PauseTokens`, which
    documents them.
    """

    __slots__ = ("_report", "_service")

    def __init__(self, service: Service, *, report: Reporter) -> None:
        """Keep the records of ``service``, reporting to ``report``."""
        self._service = service
        self._report = report

    def __repr__(self) -> str:
        return "Records()"

    def verify(self, token: str, *, now: float, allow_expired: bool = False) -> Claims:
        """The token's claims; a refusal is reported, then raised."""
        service = self._service
        try:
            return verify_token(
                token,
                signer=service.signer,
                policy=service.policy,
                now=now,
                allow_expired=allow_expired,
            )
        except PauseTokenError as exc:
            self._report.refused(exc, None, at=now)
            raise

    async def revoke(self, token: str, scope: Scope) -> TokenStatus:
        """Revoke the pause ``token`` answers unless it was answered; the status afterwards."""
        service = self._service
        now = service.clock()
        claims = self.verify(token, now=now, allow_expired=True)
        if not hmac.compare_digest(claims.scope_hash, hash_scope(scope)):
            mismatch = ScopeMismatch()
            self._report.refused(mismatch, claims, at=now)
            raise mismatch
        record = await store_call(
            service.store.revoke(
                claims.pause_key,
                claims.scope_hash,
                claims.name,
                row_expiry(service.policy, utc(now)),
                skewed(service.policy, utc(now)),
            )
        )
        status = _STATUS_OF_STATE[record.state]
        self._report.revoked(claims, status.value, at=now)
        return status

    async def purge(self, before: datetime | None) -> int:
        """Delete the rows that expired before ``before`` (default: now); how many."""
        service = self._service
        now = service.clock()
        cutoff = utc(now) if before is None else before
        deleted = await store_call(service.store.purge(cutoff))
        self._report.purged(deleted, at=now)
        return deleted

    async def status(self, token: str, scope: Scope) -> TokenStatus:
        """Where ``token`` stands."""
        service = self._service
        now = service.clock()
        try:
            claims = verify_token(token, signer=service.signer, policy=service.policy, now=now)
        except TokenExpired:
            return TokenStatus.EXPIRED
        except PauseTokenError as exc:
            self._report.refused(exc, None, at=now)
            raise
        if not hmac.compare_digest(claims.scope_hash, hash_scope(scope)):
            raise ScopeMismatch
        record = await store_call(service.store.status(claims.pause_key))
        if record is not None and record.state is PauseState.CLAIMED:
            lease_until = record.lease_until
            if lease_until is not None and lease_until > skewed(service.policy, utc(now)):
                return TokenStatus.IN_PROGRESS
            record = None
        return TokenStatus.ACTIVE if record is None else _STATUS_OF_STATE[record.state]
