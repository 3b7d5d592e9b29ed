"""The PauseTokens service: minting, the redeem order, two phases, revocation, status."""

from __future__ import annotations

import asyncio
import logging
import warnings
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    PendingInterrupt,
    Scope,
    TokenStatus,
    make_converter,
)
from pausetoken.exceptions import (
    AlreadyRedeemed,
    CheckpointLost,
    ConfigurationError,
    InvalidMintRequest,
    InvalidResponse,
    InvalidToken,
    LeaseLost,
    PayloadMismatch,
    PrincipalMismatch,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    StoreUnavailable,
    TokenExpired,
    TokenRevoked,
    UnknownInterrupt,
    UnsupportedPayload,
)
from pausetoken.plugins import PauseState, fingerprint
from scaffolding import ACME_BILLING, Clock

if TYPE_CHECKING:
    import cattrs

ACME = ACME_BILLING
GLOBEX = Scope("globex", namespace="billing")


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


def needs_note_for_large_refunds(decision: Decision, refund: Refund) -> None:
    if decision.approved and refund.amount_cents > 100_000 and not decision.note:
        msg = "large refunds need a note"
        raise InvalidResponse(msg, field="$.note")


REFUND = Interrupt(
    "refund", payload=Refund, response=Decision, validate=needs_note_for_large_refunds
)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store() -> MemoryStore:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        return MemoryStore()


@pytest.fixture
def keys() -> KeyRing:
    return KeyRing.generate()


@pytest.fixture
def checkpoints() -> MemoryCheckpoints:
    return MemoryCheckpoints()


def make_service(
    keys: KeyRing, store: Any, checkpoints: Any, clock: Clock, **options: Any
) -> PauseTokens:
    service = PauseTokens(
        signer=JoseSigner(keys),
        store=store,
        checkpoints=checkpoints,
        clock=clock,
        **options,
    )
    service.register(REFUND)
    return service


@pytest.fixture
def tokens(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints, clock: Clock
) -> PauseTokens:
    return make_service(keys, store, checkpoints, clock)


async def mint(tokens: PauseTokens, amount: int = 500, **options: Any) -> str:
    event = await tokens.mint(
        "refund",
        {"order_id": "o-1", "amount_cents": amount},
        scope=options.pop("scope", ACME),
        thread_id=options.pop("thread_id", "thread-1"),
        run_id="run-1",
        **options,
    )
    return event.token


# -- minting ------------------------------------------------------------------------------


async def test_mint_binds_the_current_checkpoint_and_the_payload_hash(
    tokens: PauseTokens, checkpoints: MemoryCheckpoints
) -> None:
    event = await tokens.mint(
        "refund", Refund("o-1", 500), scope=ACME, thread_id="t", run_id="r", tool_call_id="call-9"
    )
    claims = tokens.verify(event.token)
    assert claims.checkpoint_id == checkpoints.current("t") == event.checkpoint_id
    assert claims.interrupt_id == event.interrupt_id
    assert claims.tool_call_id == "call-9"
    assert claims.exp - claims.iat == 24 * 3600
    assert event.payload == Refund("o-1", 500)
    assert event.token not in repr(event)
    assert "o-1" not in repr(event)


async def test_minting_an_unknown_interrupt_is_refused(tokens: PauseTokens) -> None:
    with pytest.raises(UnknownInterrupt):
        await tokens.mint("nope", {}, scope=ACME, thread_id="t", run_id="r")


async def test_a_malformed_payload_gets_no_token_and_records_nothing(
    tokens: PauseTokens, checkpoints: MemoryCheckpoints
) -> None:
    with pytest.raises(UnsupportedPayload) as caught:
        await tokens.mint(
            "refund",
            {"order_id": "o-1", "amount_cents": "500"},
            scope=ACME,
            thread_id="t",
            run_id="r",
        )
    assert caught.value.code == "invalid_payload"
    assert checkpoints.current("t") is None


async def test_a_ttl_beyond_the_maximum_lifetime_is_refused(tokens: PauseTokens) -> None:
    with pytest.raises(InvalidMintRequest, match="ttl"):
        await mint(tokens, ttl=timedelta(days=30))


# -- the happy path and idempotency ------------------------------------------------------


async def test_consume_returns_typed_payload_and_response(
    tokens: PauseTokens, clock: Clock
) -> None:
    token = await mint(tokens)
    clock.advance(42)
    done = await tokens.consume(token, {"approved": True}, scope=ACME)
    assert done.payload == Refund("o-1", 500)
    assert done.response == Decision(approved=True)
    assert done.replayed is False
    assert done.time_to_answer == timedelta(seconds=42)
    assert token not in repr(done)


async def test_a_retry_with_the_same_answer_returns_the_first_result(
    tokens: PauseTokens,
) -> None:
    token = await mint(tokens)
    first = await tokens.consume(token, Decision(approved=True), scope=ACME)
    again = await tokens.consume(token, {"approved": True, "note": ""}, scope=ACME)
    assert again.replayed is True
    assert again.response == first.response


async def test_replay_with_a_different_answer_is_a_conflict(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    await tokens.consume(token, {"approved": True}, scope=ACME)
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(token, {"approved": False}, scope=ACME)


async def test_after_the_run_moved_on_a_same_answer_retry_is_still_idempotent(
    tokens: PauseTokens, checkpoints: MemoryCheckpoints
) -> None:
    token = await mint(tokens)
    await tokens.consume(token, {"approved": True}, scope=ACME)
    checkpoints.advance("thread-1")
    again = await tokens.consume(token, {"approved": True}, scope=ACME)
    assert again.replayed is True
    assert again.payload is None
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(token, {"approved": False}, scope=ACME)


async def test_a_body_that_raises_releases_the_claim(
    tokens: PauseTokens, store: MemoryStore
) -> None:
    token = await mint(tokens)
    jti = tokens.verify(token).pause_key
    with pytest.raises(RuntimeError, match="resume failed"):  # noqa: PT012 - the body is the point
        async with tokens.redeem(token, {"approved": True}, scope=ACME):
            assert (await store.status(jti)).state is PauseState.CLAIMED  # type: ignore[union-attr]
            raise RuntimeError("resume failed")
    assert await store.status(jti) is None
    done = await tokens.consume(token, {"approved": False}, scope=ACME)
    assert done.replayed is False


async def test_fifty_concurrent_redeemers_run_the_body_exactly_once(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    ran: list[int] = []
    refused: list[str] = []

    async def redeemer(n: int) -> None:
        try:
            async with tokens.redeem(token, {"approved": True}, scope=ACME) as redemption:
                if not redemption.replayed:
                    await asyncio.sleep(0.01)  # hold the claim while the others arrive
                    ran.append(n)
        except RedemptionInProgress as exc:
            refused.append(exc.code)

    await asyncio.gather(*(redeemer(n) for n in range(50)))
    assert len(ran) == 1
    assert refused == ["redemption_in_progress"] * 49


async def test_an_expired_lease_is_taken_over_and_the_late_commit_is_refused(
    tokens: PauseTokens, clock: Clock
) -> None:
    token = await mint(tokens)
    stuck = tokens.redeem(token, {"approved": True}, scope=ACME)
    await stuck.__aenter__()
    with pytest.raises(RedemptionInProgress) as caught:
        await tokens.consume(token, {"approved": True}, scope=ACME)
    assert caught.value.retry_after == pytest.approx(60)
    clock.advance(61)
    taken = await tokens.consume(token, {"approved": True}, scope=ACME)
    assert taken.replayed is False
    with pytest.raises(LeaseLost):
        await stuck.__aexit__(None, None, None)


# -- one test per step of the redeem order; none of them burns the token -----------------


async def assert_still_redeemable(tokens: PauseTokens, token: str) -> None:
    done = await tokens.consume(token, {"approved": True}, scope=ACME)
    assert done.replayed is False


async def test_a_tampered_token_is_refused(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    head, body, signature = token.split(".")
    forged = f"{head}.{body}.{signature[:-2]}{'A' if signature[-2] != 'A' else 'B'}{signature[-1]}"
    with pytest.raises(InvalidToken):
        await tokens.consume(forged, {"approved": True}, scope=ACME)
    await assert_still_redeemable(tokens, token)


async def test_an_expired_token_is_refused(tokens: PauseTokens, clock: Clock) -> None:
    token = await mint(tokens, ttl=timedelta(minutes=5))
    clock.advance(5 * 60 + 31)
    with pytest.raises(TokenExpired):
        await tokens.consume(token, {"approved": True}, scope=ACME)


async def test_another_tenant_cannot_redeem(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    with pytest.raises(ScopeMismatch):
        await tokens.consume(token, {"approved": True}, scope=GLOBEX)
    with pytest.raises(ScopeMismatch):
        await tokens.consume(token, {"approved": True}, scope=Scope("acme"))
    await assert_still_redeemable(tokens, token)


async def test_a_cross_scope_interrupt_accepts_another_scope(
    tokens: PauseTokens,
) -> None:
    tokens.register(Interrupt("escalate", payload=dict, response=bool, cross_scope=True))
    event = await tokens.mint("escalate", {"why": "x"}, scope=ACME, thread_id="t", run_id="r")
    done = await tokens.consume(event.token, True, scope=GLOBEX)
    assert done.response is True


async def test_only_the_bound_principal_may_answer(tokens: PauseTokens) -> None:
    token = await mint(tokens, principal="alice")
    for someone in (None, "bob", "alice "):
        with pytest.raises(PrincipalMismatch):
            await tokens.consume(token, {"approved": True}, scope=ACME, principal=someone)
    done = await tokens.consume(token, {"approved": True}, scope=ACME, principal="alice")
    assert done.claims.sub == "alice"


async def test_a_token_for_an_unregistered_interrupt_is_refused(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints, clock: Clock
) -> None:
    minting = make_service(keys, store, checkpoints, clock)
    token = await mint(minting)
    other = PauseTokens(signer=JoseSigner(keys), store=store, checkpoints=checkpoints, clock=clock)
    with pytest.raises(UnknownInterrupt):
        await other.consume(token, {"approved": True}, scope=ACME)
    await assert_still_redeemable(minting, token)


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({"approved": "no"}, "$.approved"),
        ({"approved": 1}, "$.approved"),
        ({}, "$.approved"),
        ({"approved": True, "extra": 1}, "$"),
        ("yes", None),
    ],
)
async def test_an_answer_of_the_wrong_shape_is_refused_and_leaves_the_token_redeemable(
    tokens: PauseTokens, answer: Any, field: str | None
) -> None:
    token = await mint(tokens)
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(token, answer, scope=ACME)
    assert caught.value.http_status == 422
    if field is not None:
        assert caught.value.field == field
    await assert_still_redeemable(tokens, token)


async def test_the_validator_can_refuse_an_answer(tokens: PauseTokens) -> None:
    token = await mint(tokens, amount=250_000)
    with pytest.raises(InvalidResponse, match="need a note") as caught:
        await tokens.consume(token, {"approved": True}, scope=ACME)
    assert caught.value.field == "$.note"
    done = await tokens.consume(token, {"approved": True, "note": "VIP"}, scope=ACME)
    assert done.response.note == "VIP"


async def test_a_validator_raising_value_error_is_an_invalid_response(
    tokens: PauseTokens,
) -> None:
    def refuse(_response: bool, _payload: dict[str, Any]) -> None:
        msg = "never"
        raise ValueError(msg)

    tokens.register(Interrupt("strict", payload=dict, response=bool, validate=refuse))
    event = await tokens.mint("strict", {}, scope=ACME, thread_id="t2", run_id="r")
    with pytest.raises(InvalidResponse):
        await tokens.consume(event.token, True, scope=ACME)


async def test_a_token_for_a_thread_that_moved_on_is_stale(
    tokens: PauseTokens, checkpoints: MemoryCheckpoints
) -> None:
    token = await mint(tokens)
    checkpoints.advance("thread-1")
    with pytest.raises(StaleToken):
        await tokens.consume(token, {"approved": True}, scope=ACME)


async def test_a_token_for_an_answered_interrupt_is_stale(
    tokens: PauseTokens, checkpoints: MemoryCheckpoints
) -> None:
    token = await mint(tokens)
    checkpoints.resolve("thread-1", tokens.verify(token).interrupt_id)
    with pytest.raises(StaleToken):
        await tokens.consume(token, {"approved": True}, scope=ACME)


async def test_a_checkpoint_lost_with_the_process_is_reported(
    keys: KeyRing, store: MemoryStore, clock: Clock
) -> None:
    before_restart = make_service(keys, store, MemoryCheckpoints(), clock)
    token = await mint(before_restart)
    after_restart = make_service(keys, store, MemoryCheckpoints(), clock)
    with pytest.raises(CheckpointLost) as caught:
        await after_restart.consume(token, {"approved": True}, scope=ACME)
    assert caught.value.http_status == 424


class SwappedPayload:
    """A reader whose runtime now holds another payload than the token was minted for."""

    def __init__(self, inner: MemoryCheckpoints) -> None:
        self.inner = inner

    async def bind(self, **kwargs: Any) -> PendingInterrupt:
        return await self.inner.bind(**kwargs)

    async def pending(self, **kwargs: Any) -> PendingInterrupt:
        found = await self.inner.pending(**kwargs)
        return attrs.evolve(found, value={**found.value, "amount_cents": 999_999})

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_payload_that_changed_since_minting_is_refused(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints, clock: Clock
) -> None:
    token = await mint(make_service(keys, store, checkpoints, clock))
    tampered = make_service(keys, store, SwappedPayload(checkpoints), clock)
    with pytest.raises(PayloadMismatch):
        await tampered.consume(token, {"approved": True}, scope=ACME)
    await assert_still_redeemable(make_service(keys, store, checkpoints, clock), token)


class BrokenStore(MemoryStore):
    async def claim(self, request: Any) -> Any:
        raise ConnectionResetError("engine gone")


async def test_an_unreachable_store_fails_closed(
    keys: KeyRing, checkpoints: MemoryCheckpoints, clock: Clock
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        broken = make_service(keys, BrokenStore(), checkpoints, clock)
    token = await mint(broken)
    with pytest.raises(StoreUnavailable) as caught:
        await broken.consume(token, {"approved": True}, scope=ACME)
    assert caught.value.http_status == 503
    assert isinstance(caught.value.__cause__, ConnectionResetError)


# -- revocation and status ----------------------------------------------------------------


async def test_a_revoked_token_cannot_be_redeemed(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    assert await tokens.revoke(token, scope=ACME) is TokenStatus.REVOKED
    with pytest.raises(TokenRevoked):
        await tokens.consume(token, {"approved": True}, scope=ACME)
    assert await tokens.status(token, scope=ACME) is TokenStatus.REVOKED


async def test_two_tokens_for_one_pause_answer_it_once(
    tokens: PauseTokens, checkpoints: MemoryCheckpoints
) -> None:
    first = await tokens.mint(
        "refund", Refund("o-1", 500), scope=ACME, thread_id="t", run_id="r", interrupt_id="i-1"
    )
    twin = await tokens.mint(
        "refund", Refund("o-1", 500), scope=ACME, thread_id="t", run_id="r", interrupt_id="i-1"
    )
    assert tokens.verify(first.token).jti != tokens.verify(twin.token).jti
    async with tokens.redeem(first.token, {"approved": True}, scope=ACME):
        with pytest.raises(RedemptionInProgress):
            await tokens.consume(twin.token, {"approved": False}, scope=ACME)
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(twin.token, {"approved": False}, scope=ACME)
    assert (await tokens.consume(twin.token, {"approved": True}, scope=ACME)).replayed is True
    assert await tokens.status(twin.token, scope=ACME) is TokenStatus.REDEEMED


async def test_revoking_a_token_revokes_its_pause(tokens: PauseTokens) -> None:
    first = await mint(tokens)
    twin = await tokens.mint(
        "refund",
        {"order_id": "o-1", "amount_cents": 500},
        scope=ACME,
        thread_id="thread-1",
        run_id="run-1",
        interrupt_id=tokens.verify(first).interrupt_id,
    )
    assert await tokens.revoke(first, scope=ACME) is TokenStatus.REVOKED
    with pytest.raises(TokenRevoked):
        await tokens.consume(twin.token, {"approved": True}, scope=ACME)


async def test_revoking_another_tenants_token_is_refused(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    with pytest.raises(ScopeMismatch):
        await tokens.revoke(token, scope=GLOBEX)
    await assert_still_redeemable(tokens, token)


async def test_revoking_too_late_reports_the_redemption(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    await tokens.consume(token, {"approved": True}, scope=ACME)
    assert await tokens.revoke(token, scope=ACME) is TokenStatus.REDEEMED


async def test_status_follows_the_token_through_its_life(tokens: PauseTokens, clock: Clock) -> None:
    token = await mint(tokens)
    assert await tokens.status(token, scope=ACME) is TokenStatus.ACTIVE
    async with tokens.redeem(token, {"approved": True}, scope=ACME):
        assert await tokens.status(token, scope=ACME) is TokenStatus.IN_PROGRESS
    assert await tokens.status(token, scope=ACME) is TokenStatus.REDEEMED
    fresh = await mint(tokens, thread_id="thread-2")
    clock.advance(25 * 3600)
    assert await tokens.status(fresh, scope=ACME) is TokenStatus.EXPIRED
    with pytest.raises(ScopeMismatch):
        await tokens.status(await mint(tokens, thread_id="thread-3"), scope=GLOBEX)


# -- registration and independence -------------------------------------------------------


def test_two_interrupts_cannot_share_a_name(tokens: PauseTokens) -> None:
    tokens.register(REFUND)  # the same registration again is harmless
    with pytest.raises(ConfigurationError) as caught:
        tokens.register(Interrupt("refund", payload=dict, response=dict))
    assert caught.value.code == "duplicate_interrupt"


async def test_two_services_in_one_process_share_nothing(
    store: MemoryStore, checkpoints: MemoryCheckpoints, clock: Clock
) -> None:
    one = make_service(KeyRing.generate(), store, checkpoints, clock)
    other = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=checkpoints, clock=clock
    )
    token = await mint(one)
    with pytest.raises(InvalidToken):
        other.verify(token)
    with pytest.raises(UnknownInterrupt):
        await other.mint(
            "refund", {"order_id": "o", "amount_cents": 1}, scope=ACME, thread_id="t", run_id="r"
        )


def test_bad_service_options_are_configuration_errors(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    with pytest.raises(ConfigurationError):
        PauseTokens(
            signer=JoseSigner(keys), store=store, checkpoints=checkpoints, ttl=timedelta(days=8)
        )
    with pytest.raises(ConfigurationError):
        PauseTokens(
            signer=JoseSigner(keys), store=store, checkpoints=checkpoints, lease=timedelta(0)
        )


# -- configuration ------------------------------------------------------------------------


async def test_from_settings_builds_a_working_service_and_closes_what_it_opened(
    checkpoints: MemoryCheckpoints,
) -> None:
    from pausetoken import Settings

    settings = Settings(store_url="memory://", keys=KeyRing.generate(), ttl=timedelta(hours=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        tokens = PauseTokens.from_settings(settings, checkpoints=checkpoints)
    async with tokens:
        tokens.register(REFUND)
        token = await mint(tokens)
        assert tokens.verify(token).exp - tokens.verify(token).iat == 3600
        assert (await tokens.consume(token, {"approved": True}, scope=ACME)).replayed is False
    with pytest.raises(StoreUnavailable):
        await tokens.store.status("x" * 22)
    # what was handed in stays usable
    assert (await checkpoints.bind(thread_id="t9", payload={})).thread_id == "t9"


async def test_from_settings_opens_the_default_checkpoint_reader_by_name() -> None:
    from pausetoken import Settings

    settings = Settings(store_url="memory://", keys=KeyRing.generate())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        tokens = PauseTokens.from_settings(settings)
    async with tokens:
        assert isinstance(tokens.checkpoints, MemoryCheckpoints)


async def test_from_settings_hands_the_token_size_limit_to_the_signer() -> None:
    from pausetoken import Settings

    settings = Settings(store_url="memory://", keys=KeyRing.generate(), max_token_bytes=8192)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        tokens = PauseTokens.from_settings(settings)
    async with tokens:
        tokens.register(Interrupt("big", payload=dict, response=bool))
        event = await tokens.mint(
            "big",
            {},
            scope=ACME,
            thread_id="t" * 500,
            run_id="r" * 500,
            session_id="s" * 500,
            tool_call_id="c" * 500,
            checkpoint_id="k" * 500,
            interrupt_id="i" * 500,
            principal="p" * 500,
        )
        assert 4096 < len(event.token) <= 8192
        assert tokens.verify(event.token).session_id == "s" * 500


async def test_mint_takes_the_registered_interrupt_itself(tokens: PauseTokens) -> None:
    event = await tokens.mint(REFUND, Refund("o-1", 500), scope=ACME, thread_id="t", run_id="r")
    assert event.name == "refund"
    assert tokens.verify(event.token).name == "refund"


async def test_mint_refuses_an_interrupt_other_than_the_one_registered_under_its_name(
    tokens: PauseTokens,
) -> None:
    impostor = Interrupt("refund", payload=dict, response=dict)
    with pytest.raises(UnknownInterrupt):
        await tokens.mint(impostor, {}, scope=ACME, thread_id="t", run_id="r")


# -- structuring through the interrupt ---------------------------------------------------


@attrs.frozen
class PricedRefund:
    order_id: str
    amount: Decimal


@attrs.frozen
class Counteroffer:
    amount: Decimal


def read_amount(value: object, _type: object) -> Decimal:
    if not isinstance(value, str):
        msg = "an amount is a decimal string"
        raise TypeError(msg)
    return Decimal(value)


def amounts() -> cattrs.Converter:
    converter = make_converter()
    converter.register_structure_hook(Decimal, read_amount)
    converter.register_unstructure_hook(Decimal, str)
    return converter


PRICED = Interrupt("priced", payload=PricedRefund, response=Counteroffer, converter=amounts())


async def test_the_interrupts_converter_reads_and_writes_its_payload_and_answer(
    tokens: PauseTokens,
) -> None:
    tokens.register(PRICED)
    event = await tokens.mint(
        PRICED, {"order_id": "o-1", "amount": "19.99"}, scope=ACME, thread_id="t", run_id="r"
    )
    assert event.payload == PricedRefund("o-1", Decimal("19.99"))
    with pytest.raises(InvalidResponse) as caught:
        await tokens.consume(event.token, {"amount": 12.5}, scope=ACME)
    assert caught.value.field == "$.amount"
    assert "12.5" not in caught.value.detail
    done = await tokens.consume(event.token, {"amount": "12.50"}, scope=ACME)
    assert done.response == Counteroffer(Decimal("12.50"))
    assert done.payload == PricedRefund("o-1", Decimal("19.99"))


def test_an_interrupt_without_a_converter_uses_the_shared_strict_one() -> None:
    assert REFUND.converter is Interrupt("other", payload=dict, response=bool).converter
    assert PRICED.converter is not REFUND.converter


def test_registering_a_type_only_a_hook_can_read_names_the_converter_argument(
    tokens: PauseTokens,
) -> None:
    with pytest.raises(ConfigurationError, match="converter=") as caught:
        tokens.register(Interrupt("priced", payload=PricedRefund, response=Counteroffer))
    assert caught.value.code == "interrupt_type_unsupported"


# -- typed handles: expect= ----------------------------------------------------------------


ESCALATE = Interrupt("escalate", payload=dict, response=bool)


async def test_redeem_with_the_expected_interrupt_gives_its_typed_redemption(
    tokens: PauseTokens,
) -> None:
    token = await mint(tokens)
    async with tokens.redeem(token, {"approved": True}, scope=ACME, expect=REFUND) as done:
        assert done.payload == Refund("o-1", 500)
        assert done.response == Decision(approved=True)
    again = await tokens.consume(token, {"approved": True}, scope=ACME, expect=REFUND)
    assert again.replayed is True


async def test_a_token_for_another_interrupt_than_the_expected_one_is_refused_unclaimed(
    tokens: PauseTokens,
) -> None:
    tokens.register(ESCALATE)
    token = await mint(tokens)
    with pytest.raises(UnknownInterrupt) as caught:
        async with tokens.redeem(token, {"approved": True}, scope=ACME, expect=ESCALATE):
            pytest.fail("the body must not run")
    assert caught.value.code == "interrupt_mismatch"
    assert caught.value.http_status == 400
    with pytest.raises(UnknownInterrupt) as caught:
        await tokens.consume(token, {"approved": True}, scope=ACME, expect=ESCALATE)
    assert caught.value.code == "interrupt_mismatch"
    assert await tokens.status(token, scope=ACME) is TokenStatus.ACTIVE
    done = await tokens.consume(token, {"approved": True}, scope=ACME, expect=REFUND)
    assert done.replayed is False


async def test_the_expected_interrupt_must_be_the_registered_one(tokens: PauseTokens) -> None:
    token = await mint(tokens)
    impostor = Interrupt("refund", payload=dict, response=dict)
    with pytest.raises(UnknownInterrupt) as caught:
        await tokens.consume(token, {"approved": True}, scope=ACME, expect=impostor)
    assert caught.value.code == "unknown_interrupt"
    with pytest.raises(UnknownInterrupt):
        await tokens.consume(token, {"approved": True}, scope=ACME, expect=ESCALATE)
    assert await tokens.status(token, scope=ACME) is TokenStatus.ACTIVE


async def test_the_expected_interrupt_is_checked_after_the_scope(tokens: PauseTokens) -> None:
    tokens.register(ESCALATE)
    token = await mint(tokens)
    with pytest.raises(ScopeMismatch):
        await tokens.consume(token, {"approved": True}, scope=GLOBEX, expect=ESCALATE)


# -- consume() is redeem() with an empty body ----------------------------------------------------


class _CommitRefused(MemoryStore):
    """Claims as usual, then answers that the lease no longer holds the claim."""

    async def commit(self, pause_key: str, lease_id: str, expires_at: Any) -> bool:
        await super().commit(pause_key, lease_id, expires_at)
        return False


async def _redeem_with_empty_body(
    tokens: PauseTokens, token: str, answer: Any, scope: Scope
) -> Any:
    async with tokens.redeem(token, answer, scope=scope) as done:
        return done


@pytest.mark.parametrize("commit_refused", [False, True])
async def test_consume_decides_and_reports_as_redeem_with_an_empty_body(
    keys: KeyRing, clock: Clock, *, commit_refused: bool
) -> None:
    async def scenario(redeem: Any) -> list[object]:
        events: list[Any] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MemoryStoreWarning)
            store = _CommitRefused() if commit_refused else MemoryStore()
        checkpoints = MemoryCheckpoints()
        tokens = make_service(keys, store, checkpoints, clock, observers=[events.append])
        token, other = await mint(tokens), await mint(tokens, thread_id="thread-2")
        outcomes: list[object] = []
        attempts = [
            (token, {"approved": True}, ACME),
            (token, {"approved": True}, ACME),
            (token, {"approved": False}, ACME),
            (token, {"approved": "yes"}, ACME),
            (other, {"approved": True}, GLOBEX),
            ("not-a-token", {"approved": True}, ACME),
        ]
        for at, (which, answer, scope) in enumerate(attempts):
            if at == 2:  # the run moves on after the first two answers
                checkpoints.advance("thread-1")
            try:
                done = await redeem(tokens, which, answer, scope)
            except Exception as exc:
                outcomes.append((type(exc).__name__, getattr(exc, "code", None)))
            else:
                outcomes.append((done.replayed, done.response, done.payload, done.lease is None))
        outcomes.append(await tokens.status(token, scope=ACME))
        outcomes.append([(e.kind, e.outcome, e.code) for e in events])
        return outcomes

    def consume(tokens: PauseTokens, token: str, answer: Any, scope: Scope) -> Any:
        return tokens.consume(token, answer, scope=scope)

    assert await scenario(consume) == await scenario(_redeem_with_empty_body)


@pytest.mark.parametrize("level", [logging.DEBUG, logging.INFO, logging.WARNING])
async def test_mint_and_redeem_log_the_jti_fingerprint_when_their_level_is_on(
    tokens: PauseTokens, caplog: pytest.LogCaptureFixture, level: int
) -> None:
    caplog.set_level(level, logger="pausetoken.service")
    token = await mint(tokens)
    jti = tokens.verify(token).jti
    await tokens.consume(token, {"approved": True}, scope=ACME)
    logged = {r.getMessage(): r for r in caplog.records if r.name == "pausetoken.service"}
    expected = {"minted", "redeemed"} if level == logging.DEBUG else {"redeemed"}
    assert set(logged) == (expected if level <= logging.INFO else set())
    for record in logged.values():
        assert (record.jti, record.interrupt) == (fingerprint(jti), "refund")
