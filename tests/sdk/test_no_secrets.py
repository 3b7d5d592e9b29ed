"""The run-wide watch for secrets (tests/secrets_watch.py) sees the suite and can fail."""

from __future__ import annotations

import logging
import warnings

import pytest

from pausetoken import (
    AuditEvent,
    EventKind,
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
)
from scaffolding import ACME
from secrets_watch import SecretsWatch

PAYLOAD = {"order_id": "order-secret-90125"}
ANSWER = {"note": "answer-secret-44817"}


def service() -> PauseTokens:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        store = MemoryStore()
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=MemoryCheckpoints()
    )
    tokens.register(Interrupt("refund", payload=dict, response=dict))
    return tokens


async def test_every_service_of_the_suite_reports_to_the_watch(
    request: pytest.FixtureRequest,
) -> None:
    watch: SecretsWatch = request.getfixturevalue("_no_secrets_in_logs_or_events")
    before = len(watch.events)
    tokens = service()
    event = await tokens.mint("refund", PAYLOAD, scope=ACME, thread_id="t", run_id="r")
    await tokens.consume(event.token, ANSWER, scope=ACME)
    kinds = [e.kind for e in watch.events[before:]]
    assert kinds == [EventKind.MINTED, EventKind.CLAIMED, EventKind.COMMITTED]
    assert any(r.name == "tests.audit" for r in watch.records)
    assert event.token.split(".")[2] in watch.words
    assert tokens.verify(event.token).jti in watch.words
    assert {"order-secret-90125", "answer-secret-44817"} <= watch.texts


def _record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    return logging.makeLogRecord(
        {"name": "pausetoken.x", "msg": message, "args": args, "levelname": "INFO", **extra}
    )


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(_record("token %s", "TOKEN"), id="token in the message"),
        pytest.param(_record("refused", jti="JTI"), id="full jti in an extra field"),
        pytest.param(_record("payload %r", {"o": "order-secret-1"}), id="payload string"),
        pytest.param(_record("key %s", "KEY"), id="key material"),
    ],
)
def test_the_watch_fails_a_record_holding_a_secret(record: logging.LogRecord) -> None:
    watch = SecretsWatch()
    watch.words |= {"payloadSegment0123456", "jtiValue0123456789abc", "keyMaterial0123456789"}
    watch.texts.add("order-secret-1")
    record.args = tuple(
        {"TOKEN": "hdr.payloadSegment0123456.sig", "KEY": "keyMaterial0123456789"}.get(a, a)
        if isinstance(a, str)
        else a
        for a in record.args or ()
    )
    if getattr(record, "jti", None) == "JTI":
        record.jti = "jtiValue0123456789abc"
    watch.records.append(record)
    with pytest.raises(AssertionError, match="secrets in logs or events"):
        watch.assert_clean()


def test_the_watch_passes_fingerprints_and_names() -> None:
    watch = SecretsWatch()
    watch.words.add("jtiValue0123456789abc")
    watch.records.append(_record("replay refused", jti="3f2a9c0d1e4b", interrupt="refund"))
    watch.events.append(
        AuditEvent(kind=EventKind.MINTED, outcome="minted", at=0.0, jti="3f2a9c0d1e4b")
    )
    watch.assert_clean()


def test_the_watch_fails_an_event_field_that_is_not_a_fingerprint() -> None:
    watch = SecretsWatch()
    watch.events.append(
        AuditEvent(kind=EventKind.MINTED, outcome="minted", at=0.0, jti="jtiValue0123456789abc")
    )
    with pytest.raises(AssertionError, match="unexpected format"):
        watch.assert_clean()


def test_the_watch_remembers_answer_values_not_the_shapes_member_names() -> None:
    watch = SecretsWatch()
    watch.remember_text({"edited_action": {"name": "refund", "args": {"note": "call me at 555"}}})
    assert "call me at 555" in watch.texts
    assert "edited_action" not in watch.texts
