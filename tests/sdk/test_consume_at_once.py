"""consume() in one store call when the store can (SupportsConsume), in two when it cannot.

Both ways decide the same: the scenario test in test_service.py holds consume() to
redeem() with an empty body on either path; these tests pin which path runs, that a store
overriding ``claim`` or ``commit`` keeps being called through them, and what a failed
one-call consume tells its caller.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    TokenStatus,
)
from pausetoken.exceptions import AlreadyRedeemed, StoreUnavailable
from pausetoken.plugins import ClaimRequest, ClaimResult, SupportsConsume, TokenStore
from scaffolding import ACME, Clock

if TYPE_CHECKING:
    from datetime import datetime

    from pausetoken import AuditEvent

pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")

APPROVAL = Interrupt("approval", payload=dict, response=bool)


class Counting(MemoryStore):
    """A memory store that counts the calls the service makes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        self.calls.append("claim")
        return await super().claim(request)

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        self.calls.append("commit")
        return await super().commit(pause_key, lease_id, expires_at)

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        self.calls.append("consume")
        return await super().consume(request)


class CountsClaimsOnly(MemoryStore):
    """Overrides ``claim`` and inherits ``consume``, which would skip the override."""

    def __init__(self) -> None:
        super().__init__()
        self.claims = 0

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        self.claims += 1
        return await super().claim(request)


class TwoStepsOnly:
    """A store without ``consume``: everything else delegates to a memory store."""

    def __init__(self) -> None:
        self._inner = MemoryStore()
        self.claim = self._inner.claim
        self.renew = self._inner.renew
        self.commit = self._inner.commit
        self.release = self._inner.release
        self.revoke = self._inner.revoke
        self.status = self._inner.status
        self.purge = self._inner.purge
        self.check = self._inner.check
        self.aclose = self._inner.aclose


class ConnectionBreaks(MemoryStore):
    """Records the answer, then loses the connection before the reply (or fails before)."""

    def __init__(self, error: StoreUnavailable, *, lands: bool) -> None:
        super().__init__()
        self.error = error
        self.lands = lands

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        if self.lands:
            await super().consume(request)
        raise self.error


def service(store: Any, events: list[AuditEvent] | None = None) -> PauseTokens:
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=store,
        checkpoints=MemoryCheckpoints(),
        clock=Clock(),
        observers=[] if events is None else [events.append],
    )
    tokens.register(APPROVAL)
    return tokens


async def mint(tokens: PauseTokens, thread_id: str = "thread-1") -> str:
    event = await tokens.mint(
        APPROVAL, {"amount": 5}, scope=ACME, thread_id=thread_id, run_id="run-1"
    )
    return event.token


async def test_a_store_that_consumes_is_called_once_per_consume() -> None:
    store = Counting()
    assert isinstance(store, SupportsConsume)
    tokens = service(store)
    token = await mint(tokens)
    first = await tokens.consume(token, True, scope=ACME)
    assert (first.replayed, first.lease is not None) == (False, True)
    assert store.calls == ["consume"]
    again = await tokens.consume(token, True, scope=ACME)
    assert again.replayed is True
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(token, False, scope=ACME)
    assert store.calls == ["consume"] * 3
    assert await tokens.status(token, scope=ACME) is TokenStatus.REDEEMED


async def test_redeem_still_claims_and_commits_in_two_calls() -> None:
    store = Counting()
    tokens = service(store)
    async with tokens.redeem(await mint(tokens), True, scope=ACME) as redemption:
        assert store.calls == ["claim"]
        assert redemption.replayed is False
    assert store.calls == ["claim", "commit"]


async def test_a_store_overriding_claim_is_claimed_through_its_override() -> None:
    store = CountsClaimsOnly()
    tokens = service(store)
    await tokens.consume(await mint(tokens), True, scope=ACME)
    assert store.claims == 1
    assert (
        await tokens.consume(await mint(tokens, "thread-2"), True, scope=ACME)
    ).replayed is False
    assert store.claims == 2


async def test_a_store_without_consume_is_claimed_and_committed() -> None:
    store = TwoStepsOnly()
    assert isinstance(store, TokenStore)
    assert not isinstance(store, SupportsConsume)
    tokens = service(store)
    token = await mint(tokens)
    assert (await tokens.consume(token, True, scope=ACME)).replayed is False
    assert (await tokens.consume(token, True, scope=ACME)).replayed is True
    assert await tokens.status(token, scope=ACME) is TokenStatus.REDEEMED


@pytest.mark.parametrize("lands", [True, False])
async def test_a_failed_consume_says_the_answer_may_be_recorded(
    caplog: pytest.LogCaptureFixture, *, lands: bool
) -> None:
    events: list[AuditEvent] = []
    store = ConnectionBreaks(StoreUnavailable("connection reset"), lands=lands)
    tokens = service(store, events)
    token = await mint(tokens)
    with (
        caplog.at_level(logging.WARNING, logger="pausetoken.service"),
        pytest.raises(StoreUnavailable) as caught,
    ):
        await tokens.consume(token, True, scope=ACME)
    failed = caught.value
    assert failed.code == StoreUnavailable.CONSUME_UNCONFIRMED
    assert failed.http_status == 503
    assert failed.__cause__ is store.error
    warned = [
        r for r in caplog.records if r.name == "pausetoken.service" and r.levelno >= logging.WARNING
    ]
    assert [r.getMessage() for r in warned] == [
        "consume unconfirmed: the store may have recorded the answer"
    ]
    assert token not in caplog.text
    assert [(e.kind.value, e.code) for e in events][-1] == (
        "commit_unconfirmed",
        "consume_unconfirmed",
    )
    # What the error's action says to do: status() tells whether the answer was recorded.
    recorded = await tokens.status(token, scope=ACME)
    assert recorded is (TokenStatus.REDEEMED if lands else TokenStatus.ACTIVE)


async def test_a_store_refusal_that_wrote_nothing_keeps_its_code() -> None:
    missing = StoreUnavailable("table gone", code=StoreUnavailable.STORE_TABLE_MISSING)
    store = ConnectionBreaks(missing, lands=False)
    tokens = service(store)
    with pytest.raises(StoreUnavailable) as caught:
        await tokens.consume(await mint(tokens), True, scope=ACME)
    assert caught.value is missing


def test_the_memory_store_consumes_in_one_call() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        assert isinstance(MemoryStore(), SupportsConsume)
