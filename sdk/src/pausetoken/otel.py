"""An OpenTelemetry observer for audit events (the ``otel`` extra: opentelemetry-api).

Each [`AuditEvent`][pausetoken.AuditEvent] becomes a span event named
``pausetoken.<kind>`` on the current span when one is recording (the request that minted or
redeemed), or else a short span of that name. Its attributes are the event's fields under
``pausetoken.``: ``pausetoken.outcome``, ``pausetoken.code``, ``pausetoken.jti``,
``pausetoken.pause``, ``pausetoken.interrupt``, ``pausetoken.scope``, ``pausetoken.count``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

try:
    from opentelemetry import trace
except ImportError as exc:  # pragma: no cover - depends on the environment
    from pausetoken._install import install_hint
    from pausetoken.exceptions import BackendNotInstalled

    msg = f"the OpenTelemetry observer needs opentelemetry-api: {install_hint('pausetoken[otel]')}"
    raise BackendNotInstalled(msg) from exc

from pausetoken._events import EventKind

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from pausetoken._events import AuditEvent

__all__ = ["OpenTelemetryObserver"]

# Events that mean something went wrong: their own spans get an error status.
_ERRORS = frozenset({EventKind.COMMIT_UNCONFIRMED})


class OpenTelemetryObserver:
    """Records audit events as OpenTelemetry span events or spans.

    Args:
        tracer_provider: Where spans go; the global provider by default.

    Examples:
        ```python
        from pausetoken.otel import OpenTelemetryObserver

        tokens = PauseTokens(..., observers=[OpenTelemetryObserver()])
        ```
    """

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        """Trace through ``tracer_provider`` (the global one by default)."""
        self._tracer = trace.get_tracer("pausetoken", tracer_provider=tracer_provider)

    def __repr__(self) -> str:
        return "OpenTelemetryObserver()"

    def __call__(self, event: AuditEvent, /) -> None:
        """Record ``event`` on the current span, or as a span of its own."""
        name = f"pausetoken.{event.kind.value}"
        attributes: dict[str, AttributeValue] = {
            f"pausetoken.{field}": value for field, value in event.fields().items()
        }
        current = trace.get_current_span()
        if current.is_recording():
            current.add_event(name, attributes=attributes)
            return
        with self._tracer.start_as_current_span(name, attributes=attributes) as span:
            if event.kind in _ERRORS:
                span.set_status(trace.StatusCode.ERROR)
