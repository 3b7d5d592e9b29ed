"""The OpenTelemetry observer: audit events as span events, or as spans of their own."""

from __future__ import annotations

import warnings

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from pausetoken import (
    AuditEvent,
    EventKind,
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    Observer,
    PauseTokens,
)
from pausetoken.exceptions import AlreadyRedeemed
from pausetoken.otel import OpenTelemetryObserver
from pausetoken.plugins import fingerprint
from scaffolding import ACME

REFUND = Interrupt("refund", payload=dict, response=dict)
PAYLOAD = {"order_id": "order-secret-5521"}


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def service(observer: Observer) -> PauseTokens:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        store = MemoryStore()
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=store,
        checkpoints=MemoryCheckpoints(),
        observers=[observer],
    )
    tokens.register(REFUND)
    return tokens


async def test_outside_a_span_each_event_is_a_span_with_the_event_attributes(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tokens = service(OpenTelemetryObserver(provider))
    event = await tokens.mint("refund", PAYLOAD, scope=ACME, thread_id="t", run_id="r")
    await tokens.consume(event.token, {"ok": True}, scope=ACME)
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(event.token, {"ok": False}, scope=ACME)
    spans = exporter.get_finished_spans()
    assert [span.name for span in spans] == [
        "pausetoken.minted",
        "pausetoken.claimed",
        "pausetoken.committed",
        "pausetoken.replay_refused",
    ]
    claims = tokens.verify(event.token)
    refused = dict(spans[-1].attributes or {})
    assert refused == {
        "pausetoken.event": "replay_refused",
        "pausetoken.outcome": "refused",
        "pausetoken.code": "already_redeemed",
        "pausetoken.jti": fingerprint(claims.jti),
        "pausetoken.pause": fingerprint(claims.pause_key),
        "pausetoken.interrupt": "refund",
        "pausetoken.scope": claims.scope_hash[:8],
    }


async def test_inside_a_recording_span_events_are_added_to_it(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tokens = service(OpenTelemetryObserver(provider))
    tracer = provider.get_tracer("the application")
    with tracer.start_as_current_span("POST /approve"):
        event = await tokens.mint("refund", PAYLOAD, scope=ACME, thread_id="t", run_id="r")
        await tokens.consume(event.token, {"ok": True}, scope=ACME)
    [span] = exporter.get_finished_spans()
    assert span.name == "POST /approve"
    assert [e.name for e in span.events] == [
        "pausetoken.minted",
        "pausetoken.claimed",
        "pausetoken.committed",
    ]
    assert dict(span.events[0].attributes or {})["pausetoken.outcome"] == "minted"


def test_commit_unconfirmed_is_an_error_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    observer = OpenTelemetryObserver(provider)
    observer(
        AuditEvent(
            kind=EventKind.COMMIT_UNCONFIRMED,
            outcome="unconfirmed",
            at=0.0,
            code="commit_unconfirmed",
        )
    )
    [span] = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR


def test_the_observer_is_an_observer() -> None:
    assert isinstance(OpenTelemetryObserver(), Observer)
    assert repr(OpenTelemetryObserver()) == "OpenTelemetryObserver()"
