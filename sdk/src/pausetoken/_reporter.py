"""What the service says about each step, said once: to its log and to its observers."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pausetoken._events import AuditEvent, EventKind, Observers
from pausetoken._hashing import fingerprint
from pausetoken.exceptions import AlreadyRedeemed, TokenRevoked

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pausetoken._claims import Claims
    from pausetoken._events import Observer
    from pausetoken.exceptions import (
        CommitUnconfirmed,
        LeaseLost,
        PauseTokenError,
        StoreUnavailable,
    )

__all__ = ["Reporter"]

logger = logging.getLogger("pausetoken.service")


def _log_fields(claims: Claims) -> dict[str, str]:
    """What a log record says about a token: its jti's fingerprint and its interrupt."""
    return {"jti": fingerprint(claims.jti), "interrupt": claims.name}


class Reporter:
    """Reports each step of a service once: a log record and, with observers, an event.

    Nothing is built for nobody: a log record's fields only when its level is enabled, an
    `AuditEvent` only when there are observers (``observing``), so a service without
    either pays a flag test per step. Steps reported after the fact (a commit, a release)
    read ``clock`` for their time, and only to build an event.
    """

    __slots__ = ("_clock", "_observers", "observing")

    def __init__(self, observers: Sequence[Observer], *, clock: Callable[[], float]) -> None:
        """Report to ``observers`` (a copy is kept), timing late steps by ``clock``."""
        self._observers = Observers(observers)
        # A plain flag: the hot path tests it before building any event.
        self.observing = bool(observers)
        self._clock = clock

    def __repr__(self) -> str:
        return f"Reporter({self._observers!r})"

    def _emit(
        self,
        kind: EventKind,
        claims: Claims | None,
        *,
        outcome: str,
        at: float,
        code: str | None = None,
    ) -> None:
        """Tell the observers; callers check ``observing`` first (no event otherwise)."""
        self._observers.emit(AuditEvent.about(kind, claims, outcome=outcome, at=at, code=code))

    def minted(self, claims: Claims, *, at: float) -> None:
        """A token was signed for ``claims``."""
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("minted", extra=_log_fields(claims))
        if self.observing:
            self._emit(EventKind.MINTED, claims, outcome="minted", at=at)

    def refused(self, exc: PauseTokenError, claims: Claims | None, *, at: float) -> None:
        """A token, or a redemption's checks before the claim, was refused (an event only)."""
        if self.observing:
            self._emit(EventKind.VERIFY_FAILED, claims, outcome="refused", at=at, code=exc.code)

    def claimed(self, claims: Claims, *, at: float) -> None:
        """A redemption claimed its pause (an event only)."""
        if self.observing:
            self._emit(EventKind.CLAIMED, claims, outcome="claimed", at=at)

    def renewals(self, claims: Claims) -> Callable[[str], None] | None:
        """What a lease tells of each renewal; `None` when nobody listens."""
        if not self.observing:
            return None

        def renewed(outcome: str) -> None:
            self._emit(EventKind.RENEWED, claims, outcome=outcome, at=self._clock())

        return renewed

    def committed(self, claims: Claims) -> None:
        """The answer is committed: the pause is redeemed."""
        # The fingerprint costs a hash: only for a record that is kept.
        if logger.isEnabledFor(logging.INFO):
            logger.info("redeemed", extra=_log_fields(claims))
        if self.observing:
            self._emit(EventKind.COMMITTED, claims, outcome="committed", at=self._clock())

    def commit_retrying(self, claims: Claims) -> None:
        """A commit failed and is tried again while the lease holds (a log record only)."""
        if logger.isEnabledFor(logging.WARNING):
            logger.warning(
                "commit failed; retrying while the lease holds", extra=_log_fields(claims)
            )

    def commit_unconfirmed(
        self, claims: Claims, unconfirmed: CommitUnconfirmed, cause: BaseException
    ) -> None:
        """No commit reached the store before the lease ended (the last failure: ``cause``)."""
        self._unconfirmed(
            claims,
            unconfirmed,
            cause,
            logging.ERROR,
            "commit unconfirmed: the run may have resumed",
        )

    def consume_unconfirmed(
        self, claims: Claims, unconfirmed: StoreUnavailable, cause: BaseException
    ) -> None:
        """A one-call consume failed: the store may have recorded the answer."""
        message = "consume unconfirmed: the store may have recorded the answer"
        self._unconfirmed(claims, unconfirmed, cause, logging.WARNING, message)

    def _unconfirmed(
        self,
        claims: Claims,
        unconfirmed: PauseTokenError,
        cause: BaseException,
        level: int,
        message: str,
    ) -> None:
        logger.log(level, message, exc_info=cause, extra=_log_fields(claims))
        if self.observing:
            self._emit(
                EventKind.COMMIT_UNCONFIRMED,
                claims,
                outcome="unconfirmed",
                at=self._clock(),
                code=unconfirmed.code,
            )

    def lease_lost(self, claims: Claims, lost: LeaseLost) -> None:
        """The store refused the commit: the lease no longer held the claim."""
        if lost.code == "lease_revoked":
            logger.error("claim revoked after it lapsed, before commit", extra=_log_fields(claims))
        else:
            logger.error("lease lost before commit", extra=_log_fields(claims))
        if self.observing:
            self._emit(
                EventKind.COMMITTED, claims, outcome=lost.code, at=self._clock(), code=lost.code
            )

    def replayed(self, claims: Claims, *, at: float) -> None:
        """The committed answer came again and is answered as a replay."""
        if logger.isEnabledFor(logging.INFO):
            logger.info("idempotent retry answered", extra=_log_fields(claims))
        if self.observing:
            self._emit(EventKind.REPLAY_ANSWERED, claims, outcome="answered", at=at)

    def replay_refused(self, claims: Claims, refusal: PauseTokenError, *, at: float) -> None:
        """A claim was refused: the pause is answered otherwise, revoked or busy."""
        # Reuse of a single-use credential with another answer is an attack signal, and so
        # is a revoked token presented again; a busy pause is only retried later.
        if isinstance(refusal, AlreadyRedeemed):
            logger.warning("replay refused", extra={**_log_fields(claims), "code": refusal.code})
        elif isinstance(refusal, TokenRevoked):
            logger.warning(
                "revoked token presented", extra={**_log_fields(claims), "code": refusal.code}
            )
        if self.observing:
            self._emit(
                EventKind.REPLAY_REFUSED, claims, outcome="refused", at=at, code=refusal.code
            )

    def released(self, claims: Claims, pause_key: str, *, held: bool) -> None:
        """The body raised and the claim was given back (``held``: it was still ours)."""
        if not held:
            logger.warning(
                "release found another lease holder", extra={"pause": fingerprint(pause_key)}
            )
        if self.observing:
            outcome = "released" if held else "not_held"
            self._emit(EventKind.RELEASED, claims, outcome=outcome, at=self._clock())

    def release_failed(self, claims: Claims, exc: PauseTokenError) -> None:
        """The store did not take the claim back (``exc`` says why)."""
        logger.error("release failed; the claim lapses at its deadline", exc_info=exc)
        if self.observing:
            self._emit(
                EventKind.RELEASED, claims, outcome="failed", at=self._clock(), code=exc.code
            )

    def revoked(self, claims: Claims, status: str, *, at: float) -> None:
        """``revoke()`` ran; ``status`` is the token's status afterwards."""
        if logger.isEnabledFor(logging.INFO):
            logger.info("revoke: %s", status, extra=_log_fields(claims))
        if self.observing:
            self._emit(EventKind.REVOKED, claims, outcome=status, at=at)

    def purged(self, count: int, *, at: float) -> None:
        """``purge()`` deleted ``count`` expired rows (an event only)."""
        if self.observing:
            self._observers.emit(
                AuditEvent(kind=EventKind.PURGED, outcome="purged", at=at, count=count)
            )
