"""Audit events: what the service tells its observers, and the built-in logging observer."""

from __future__ import annotations

import enum
import logging
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

import attrs

from pausetoken._hashing import fingerprint

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pausetoken._claims import Claims

__all__ = ["AuditEvent", "EventKind", "LoggingObserver", "Observer", "Observers"]

logger = logging.getLogger("pausetoken.events")

#: The logger `LoggingObserver` writes to by default.
AUDIT_LOGGER: Final = "pausetoken.audit"

#: How many hex digits of the scope hash an event carries: enough to tell tenants apart in
#: a dashboard, too few to confirm a guessed scope.
SCOPE_PREFIX_LENGTH: Final = 8


class EventKind(enum.Enum):
    """What happened (the ``kind`` of an [`AuditEvent`][pausetoken.AuditEvent])."""

    #: A token was minted.
    MINTED = "minted"
    #: A token, or a redemption's checks before the claim, was refused (``code`` says why).
    VERIFY_FAILED = "verify_failed"
    #: A redemption claimed its pause; its body runs now.
    CLAIMED = "claimed"
    #: A running redemption renewed its lease (``outcome`` ``renewed``, ``retrying`` or ``lost``).
    RENEWED = "renewed"
    #: The body ended and the commit was attempted (``outcome`` ``committed`` or the code of
    #: the `LeaseLost` raised).
    COMMITTED = "committed"
    #: The body ran but no commit reached the store before the lease ended.
    COMMIT_UNCONFIRMED = "commit_unconfirmed"
    #: The body raised and the claim was given back (``outcome`` ``released``,
    #: ``not_held`` or ``failed``).
    RELEASED = "released"
    #: The committed answer came again and was answered as replayed (an idempotent retry).
    REPLAY_ANSWERED = "replay_answered"
    #: A token of an answered, revoked or busy pause was refused (``code`` says which).
    REPLAY_REFUSED = "replay_refused"
    #: ``revoke()`` ran (``outcome`` is the status afterwards).
    REVOKED = "revoked"
    #: ``purge()`` deleted expired rows (``count`` of them).
    PURGED = "purged"


@attrs.frozen
class AuditEvent:
    """One audit event: fingerprints, names and codes, never a token, claim value or answer.

    Attributes:
        kind: What happened.
        outcome: How it ended (per kind; see the operations guide).
        code: The error code, for refusals.
        jti: The token's ``jti`` fingerprint (12 hex digits), once the token verified.
        pause: The pause key's fingerprint (12 hex digits).
        interrupt: The interrupt's registered name.
        scope: The first 8 hex digits of the token's scope hash.
        count: For ``purged``: how many rows were deleted.
        at: When it happened, by the service's clock (seconds since the epoch).
    """

    kind: EventKind
    outcome: str
    at: float
    code: str | None = None
    jti: str | None = None
    pause: str | None = None
    interrupt: str | None = None
    scope: str | None = None
    count: int | None = None

    @classmethod
    def about(
        cls,
        kind: EventKind,
        claims: Claims | None,
        *,
        outcome: str,
        at: float,
        code: str | None = None,
    ) -> AuditEvent:
        """The event about a verified token (``claims``), or about none."""
        if claims is None:
            return cls(kind=kind, outcome=outcome, at=at, code=code)
        return cls(
            kind=kind,
            outcome=outcome,
            at=at,
            code=code,
            jti=fingerprint(claims.jti),
            pause=fingerprint(claims.pause_key),
            interrupt=claims.name,
            scope=claims.scope_hash[:SCOPE_PREFIX_LENGTH],
        )

    def fields(self) -> dict[str, str | int | float]:
        """The fields that are set, by name (``kind`` as its value), for logs and spans."""
        values: dict[str, str | int | float | None] = {
            "event": self.kind.value,
            "outcome": self.outcome,
            "code": self.code,
            "jti": self.jti,
            "pause": self.pause,
            "interrupt": self.interrupt,
            "scope": self.scope,
            "count": self.count,
        }
        return {name: value for name, value in values.items() if value is not None}


@runtime_checkable
class Observer(Protocol):
    """Receives the service's audit events: any callable taking an `AuditEvent`.

    Observers are called synchronously, in the order given, on the task that caused the
    event: keep them fast and hand slow work (a network exporter) to a queue. An observer
    that raises is logged once (its exception's type only) and skipped; it can never change
    what the service returns or raises.

    Examples:
        >>> events = []
        >>> def remember(event: AuditEvent) -> None:
        ...     events.append(event)
        >>> isinstance(remember, Observer)
        True
    """

    def __call__(self, event: AuditEvent, /) -> None:
        """Take one event."""
        ...


# Level of each kind in the logging observer: what an operator should see by default.
_LEVELS: Final = {
    EventKind.MINTED: logging.DEBUG,
    EventKind.VERIFY_FAILED: logging.INFO,
    EventKind.CLAIMED: logging.DEBUG,
    EventKind.RENEWED: logging.DEBUG,
    EventKind.COMMITTED: logging.INFO,
    EventKind.COMMIT_UNCONFIRMED: logging.ERROR,
    EventKind.RELEASED: logging.INFO,
    EventKind.REPLAY_ANSWERED: logging.INFO,
    EventKind.REPLAY_REFUSED: logging.WARNING,
    EventKind.REVOKED: logging.INFO,
    EventKind.PURGED: logging.INFO,
}


@attrs.frozen
class LoggingObserver:
    """Writes each event as one log record (default logger ``pausetoken.audit``).

    The message is ``audit <kind>: <outcome>``; the event's fields are the record's
    ``extra`` attributes (``event``, ``outcome``, ``code``, ``jti``, ``pause``,
    ``interrupt``, ``scope``, ``count``). ``replay_refused`` is a WARNING and
    ``commit_unconfirmed`` an ERROR; ``minted``, ``claimed`` and ``renewed`` are DEBUG, the
    rest INFO. An outcome that is a failure (``lost``, ``lease_lost``, ...) raises the
    level to WARNING.

    Args:
        logger: Where the records go.

    Examples:
        >>> import logging
        >>> observer = LoggingObserver(logging.getLogger(__name__))
    """

    logger: logging.Logger = attrs.field(factory=lambda: logging.getLogger(AUDIT_LOGGER))

    def __call__(self, event: AuditEvent, /) -> None:
        """Log ``event``."""
        level = _LEVELS[event.kind]
        if event.outcome in _FAILED_OUTCOMES:
            level = max(level, logging.WARNING)
        if self.logger.isEnabledFor(level):
            self.logger.log(
                level, "audit %s: %s", event.kind.value, event.outcome, extra=event.fields()
            )


_FAILED_OUTCOMES: Final = frozenset({"lost", "failed", "lease_lost", "lease_revoked"})


class Observers:
    """The service's observers, called so that none can break or steer a redemption."""

    __slots__ = ("_failed", "_observers")

    def __init__(self, observers: Sequence[Observer]) -> None:
        """Hold ``observers`` (a copy: later changes to the sequence are not seen)."""
        self._observers = tuple(observers)
        self._failed: set[int] = set()

    def __repr__(self) -> str:
        return f"Observers({len(self._observers)})"

    def emit(self, event: AuditEvent) -> None:
        """Give ``event`` to every observer; one that raises is logged once and skipped."""
        for observer in self._observers:
            try:
                observer(event)
            except Exception as exc:  # noqa: BLE001 - an observer never changes an outcome
                if id(observer) not in self._failed:
                    self._failed.add(id(observer))
                    # The type names only: an exception's message may quote anything.
                    logger.error(  # noqa: TRY400 - a traceback would show the event's locals
                        "audit observer %s raised %s; its later failures are not logged",
                        type(observer).__name__,
                        type(exc).__name__,
                    )
