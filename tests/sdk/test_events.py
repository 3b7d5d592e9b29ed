"""Audit events: what observers receive, and that no observer can break or steer the service."""

from __future__ import annotations

import asyncio
import logging
import re
import warnings
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from pausetoken import (
    AuditEvent,
    EventKind,
    Interrupt,
    JoseSigner,
    KeyRing,
    LoggingObserver,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    Observer,
    PauseTokens,
    Scope,
    TokenStatus,
)
from pausetoken.exceptions import (
    AlreadyRedeemed,
    CommitUnconfirmed,
    InvalidResponse,
    InvalidToken,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    StoreUnavailable,
    TokenRevoked,
)
from pausetoken.plugins import fingerprint
from scaffolding import ACME_BILLING, T0, Clock

if TYPE_CHECKING:
    from collections.abc import Iterator

ACME = ACME_BILLING
GLOBEX = Scope("globex", namespace="billing")
REFUND = Interrupt("refund", payload=dict, response=dict)
PAYLOAD = {"order_id": "order-secret-7731", "amount_cents": 500}
YES = {"approved": True, "note": "answer-secret-1188"}
NO = {"approved": False}


class Recorder:
    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    def __call__(self, event: AuditEvent, /) -> None:
        self.events.append(event)

    def kinds(self) -> list[EventKind]:
        return [event.kind for event in self.events]

    def of(self, kind: EventKind) -> list[AuditEvent]:
        return [event for event in self.events if event.kind is kind]


class CommitsFail(MemoryStore):
    """Commits never reach the store; renewals fail too (the store went down)."""

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        msg = "commit: connection reset"
        raise StoreUnavailable(msg)

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        msg = "renew: connection reset"
        raise StoreUnavailable(msg)


def memory_store(cls: type[MemoryStore] = MemoryStore) -> MemoryStore:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        return cls()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def checkpoints() -> MemoryCheckpoints:
    return MemoryCheckpoints()


def service(
    checkpoints: MemoryCheckpoints, *observers: Observer, store: Any = None, **options: Any
) -> PauseTokens:
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=memory_store() if store is None else store,
        checkpoints=checkpoints,
        observers=observers,
        **options,
    )
    tokens.register(REFUND)
    return tokens


async def mint(tokens: PauseTokens, *, interrupt_id: str = "i-1") -> str:
    event = await tokens.mint(
        "refund",
        PAYLOAD,
        scope=ACME,
        thread_id="thread-1",
        run_id="run-1",
        interrupt_id=interrupt_id,
    )
    return event.token


# -- what each event carries --------------------------------------------------------------


async def test_a_redemption_reports_minted_claimed_and_committed_with_fingerprints(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder, clock=Clock())
    token = await mint(tokens)
    await tokens.consume(token, YES, scope=ACME)
    claims = tokens.verify(token)
    assert recorder.kinds() == [EventKind.MINTED, EventKind.CLAIMED, EventKind.COMMITTED]
    for event in recorder.events:
        assert event.jti == fingerprint(claims.jti)
        assert event.pause == fingerprint(claims.pause_key)
        assert event.interrupt == "refund"
        assert event.scope == claims.scope_hash[:8]
        assert event.at == T0
    assert [event.outcome for event in recorder.events] == ["minted", "claimed", "committed"]


async def test_a_forged_token_is_reported_as_verify_failed_with_its_code(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    head, body, signature = token.split(".")
    forged = f"{head}.{body}.{signature[::-1]}"
    with pytest.raises(InvalidToken) as caught:
        await tokens.consume(forged, YES, scope=ACME)
    [event] = recorder.of(EventKind.VERIFY_FAILED)
    assert event.code == caught.value.code
    assert event.outcome == "refused"
    # Nothing of an unverified token is trusted, not even its jti.
    assert (event.jti, event.pause, event.interrupt, event.scope) == (None, None, None, None)


async def test_verify_reports_a_refusal_too(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    with pytest.raises(InvalidToken):
        tokens.verify("not-a-token")
    [event] = recorder.events
    assert event.kind is EventKind.VERIFY_FAILED
    assert event.code == "token_malformed"


async def test_a_check_after_verification_is_reported_with_the_token_fingerprints(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    with pytest.raises(ScopeMismatch):
        await tokens.consume(token, YES, scope=GLOBEX)
    with pytest.raises(InvalidResponse):
        await tokens.consume(token, ["not", "an", "object"], scope=ACME)
    refused = recorder.of(EventKind.VERIFY_FAILED)
    assert [event.code for event in refused] == ["scope_mismatch", "invalid_response"]
    assert all(event.jti == fingerprint(tokens.verify(token).jti) for event in refused)


async def test_replays_are_answered_or_refused(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    await tokens.consume(token, YES, scope=ACME)
    again = await tokens.consume(token, YES, scope=ACME)
    assert again.replayed is True
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(token, NO, scope=ACME)
    [answered] = recorder.of(EventKind.REPLAY_ANSWERED)
    [refused] = recorder.of(EventKind.REPLAY_REFUSED)
    assert answered.outcome == "answered"
    assert (refused.outcome, refused.code) == ("refused", "already_redeemed")


async def test_a_replay_after_the_run_moved_on_is_reported_like_one_before(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    await tokens.consume(token, YES, scope=ACME)
    checkpoints.resolve(thread_id="thread-1", interrupt_id="i-1")
    assert (await tokens.consume(token, YES, scope=ACME)).replayed is True
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(token, NO, scope=ACME)
    assert EventKind.REPLAY_ANSWERED in recorder.kinds()
    assert recorder.of(EventKind.REPLAY_REFUSED)[0].code == "already_redeemed"


async def test_a_concurrent_redemption_is_refused_as_in_progress(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    async with tokens.redeem(token, YES, scope=ACME):
        with pytest.raises(RedemptionInProgress):
            await tokens.consume(token, YES, scope=ACME)
    [refused] = recorder.of(EventKind.REPLAY_REFUSED)
    assert refused.code == "redemption_in_progress"


async def test_a_revoked_token_presented_is_a_refused_replay(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    assert await tokens.revoke(token, scope=ACME) is TokenStatus.REVOKED
    with pytest.raises(TokenRevoked):
        await tokens.consume(token, YES, scope=ACME)
    [revoked] = recorder.of(EventKind.REVOKED)
    [refused] = recorder.of(EventKind.REPLAY_REFUSED)
    assert revoked.outcome == "revoked"
    assert refused.code == "token_revoked"


async def test_a_body_that_raises_reports_the_release(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    with pytest.raises(RuntimeError):
        async with tokens.redeem(token, YES, scope=ACME):
            raise RuntimeError
    [released] = recorder.of(EventKind.RELEASED)
    assert released.outcome == "released"
    assert EventKind.COMMITTED not in recorder.kinds()


async def test_a_long_body_reports_its_renewals(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder, lease=timedelta(seconds=1))
    token = await mint(tokens)
    async with tokens.redeem(token, YES, scope=ACME):
        await asyncio.sleep(0.75)  # a renewal every third of the lease
    renewed = recorder.of(EventKind.RENEWED)
    assert renewed
    assert {event.outcome for event in renewed} == {"renewed"}


@pytest.mark.slow  # waits out a 1 s lease of real time
async def test_a_commit_that_never_lands_reports_commit_unconfirmed(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(
        checkpoints, recorder, store=memory_store(CommitsFail), lease=timedelta(seconds=1)
    )
    token = await mint(tokens)
    with pytest.raises(CommitUnconfirmed):
        await tokens.consume(token, YES, scope=ACME)
    [event] = recorder.of(EventKind.COMMIT_UNCONFIRMED)
    assert event.code == "commit_unconfirmed"
    assert EventKind.COMMITTED not in recorder.kinds()


async def test_purge_reports_how_many_rows_it_deleted(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    clock = Clock()
    tokens = service(checkpoints, recorder, clock=clock)
    token = await mint(tokens)
    await tokens.consume(token, YES, scope=ACME)
    assert await tokens.purge() == 0
    clock.now += timedelta(days=30).total_seconds()
    assert await tokens.purge() == 1
    purged = recorder.of(EventKind.PURGED)
    assert [event.count for event in purged] == [0, 1]
    assert await tokens.purge(datetime.now(UTC)) == 0


async def test_a_stale_token_is_reported_as_verify_failed(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    tokens = service(checkpoints, recorder)
    token = await mint(tokens)
    checkpoints.resolve(thread_id="thread-1", interrupt_id="i-1")
    with pytest.raises(StaleToken):
        await tokens.consume(token, YES, scope=ACME)
    [event] = recorder.of(EventKind.VERIFY_FAILED)
    assert event.code == StaleToken.default_code


# -- observers cannot break or steer anything ----------------------------------------------


class Explodes:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, event: AuditEvent, /) -> None:
        self.calls += 1
        msg = f"observer bug while handling {event!r}"
        raise RuntimeError(msg)


async def test_an_observer_that_raises_breaks_nothing_and_is_logged_once(
    checkpoints: MemoryCheckpoints, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    explodes = Explodes()
    tokens = service(checkpoints, explodes, recorder)
    token = await mint(tokens)
    with caplog.at_level(logging.ERROR, logger="pausetoken.events"):
        done = await tokens.consume(token, YES, scope=ACME)
        with pytest.raises(AlreadyRedeemed):
            await tokens.consume(token, NO, scope=ACME)
    assert done.replayed is False
    assert explodes.calls == 4
    # The next observer still received every event.
    assert len(recorder.events) == 4
    records = [r for r in caplog.records if r.name == "pausetoken.events"]
    assert len(records) == 1
    assert records[0].getMessage() == (
        "audit observer Explodes raised RuntimeError; its later failures are not logged"
    )
    assert records[0].exc_info is None


async def test_an_observer_cannot_change_the_event_others_receive(
    checkpoints: MemoryCheckpoints, recorder: Recorder
) -> None:
    def tamper(event: AuditEvent, /) -> None:
        event.outcome = "changed"  # type: ignore[misc]

    tokens = service(checkpoints, tamper, recorder)
    await mint(tokens)
    assert [event.outcome for event in recorder.events] == ["minted"]


@pytest.mark.no_audit_observers
async def test_without_observers_no_event_is_built(
    checkpoints: MemoryCheckpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_event(*args: Any, **kwargs: Any) -> AuditEvent:
        raise AssertionError

    monkeypatch.setattr(AuditEvent, "about", no_event)
    monkeypatch.setattr(AuditEvent, "__init__", no_event)
    tokens = service(checkpoints, lease=timedelta(seconds=1))
    token = await mint(tokens)
    with pytest.raises(InvalidToken):
        await tokens.consume(token[:-2], YES, scope=ACME)
    async with tokens.redeem(token, YES, scope=ACME):
        await asyncio.sleep(0.4)  # one renewal
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(token, NO, scope=ACME)
    await tokens.revoke(token, scope=ACME)
    await tokens.purge()


# -- the logging observer ---------------------------------------------------------------


@pytest.fixture
def audit_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG, logger="pausetoken.audit"):
        yield caplog


async def test_the_logging_observer_writes_one_record_per_event_with_its_fields(
    checkpoints: MemoryCheckpoints, audit_log: pytest.LogCaptureFixture
) -> None:
    tokens = service(checkpoints, LoggingObserver())
    token = await mint(tokens)
    await tokens.consume(token, YES, scope=ACME)
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(token, NO, scope=ACME)
    records = [r for r in audit_log.records if r.name == "pausetoken.audit"]
    assert [r.getMessage() for r in records] == [
        "audit minted: minted",
        "audit claimed: claimed",
        "audit committed: committed",
        "audit replay_refused: refused",
    ]
    refused = records[-1]
    assert refused.levelno == logging.WARNING
    assert refused.event == "replay_refused"  # type: ignore[attr-defined]
    assert refused.code == "already_redeemed"  # type: ignore[attr-defined]
    assert refused.jti == fingerprint(tokens.verify(token).jti)  # type: ignore[attr-defined]
    assert refused.interrupt == "refund"  # type: ignore[attr-defined]
    assert re.fullmatch("[0-9a-f]{8}", refused.scope)  # type: ignore[attr-defined]


def test_the_logging_observer_is_an_observer() -> None:
    assert isinstance(LoggingObserver(), Observer)
    assert LoggingObserver().logger.name == "pausetoken.audit"


def test_an_event_shows_no_more_than_its_fields() -> None:
    event = AuditEvent(kind=EventKind.PURGED, outcome="purged", at=T0, count=3)
    assert event.fields() == {"event": "purged", "outcome": "purged", "count": 3}
