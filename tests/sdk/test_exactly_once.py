"""Exactly once, with no loopholes: pause-keyed rows, expiry, leases, revoke, commit, skew.

Each test names a way a pause could be answered twice (or a lie the service could tell)
and shows it cannot happen.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    Scope,
    TokenStatus,
)
from pausetoken.exceptions import (
    AlreadyRedeemed,
    CommitUnconfirmed,
    ConfigurationError,
    LeaseLost,
    RedemptionInProgress,
    StoreUnavailable,
    TokenRevoked,
)
from pausetoken.plugins import ClaimRequest, ClaimResult, PauseRecord, PauseState
from scaffolding import ACME_BILLING, T0, Clock

if TYPE_CHECKING:
    from collections.abc import Callable

ACME = ACME_BILLING
GLOBEX = Scope("globex", namespace="billing")
REFUND = Interrupt("refund", payload=dict, response=dict)
PAYLOAD = {"order_id": "o-1", "amount_cents": 500}
YES = {"approved": True}
NO = {"approved": False}


def memory_store() -> MemoryStore:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        return MemoryStore()


def service(
    keys: KeyRing,
    store: Any,
    checkpoints: MemoryCheckpoints,
    clock: Callable[[], float] = time.time,
    **options: Any,
) -> PauseTokens:
    tokens = PauseTokens(
        signer=JoseSigner(keys), store=store, checkpoints=checkpoints, clock=clock, **options
    )
    tokens.register(REFUND)
    return tokens


async def mint(
    tokens: PauseTokens, *, scope: Scope = ACME, interrupt_id: str = "i-1", **options: Any
) -> str:
    event = await tokens.mint(
        "refund",
        PAYLOAD,
        scope=scope,
        thread_id="thread-1",
        run_id="run-1",
        interrupt_id=interrupt_id,
        **options,
    )
    return event.token


class FlakyStore:
    """Wraps a store; chosen operations fail (before or after reaching the store)."""

    api_version = 2

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.commit_failures = 0  # the next N commits fail without reaching the store
        self.commit_lost_replies = 0  # the next N commits land, but their reply is lost
        self.renew_fails = False
        self.renew_refuses = False
        self.commits = 0
        self.renewals = 0

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        return await self.inner.claim(request)

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        self.renewals += 1
        if self.renew_fails:
            msg = "renew: connection reset"
            raise StoreUnavailable(msg)
        if self.renew_refuses:
            return False
        return await self.inner.renew(pause_key, lease_id, lease_until)

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        self.commits += 1
        if self.commit_failures:
            self.commit_failures -= 1
            msg = "commit: connection reset"
            raise StoreUnavailable(msg)
        done = await self.inner.commit(pause_key, lease_id, expires_at)
        if self.commit_lost_replies:
            self.commit_lost_replies -= 1
            msg = "commit: the reply was lost"
            raise StoreUnavailable(msg)
        return done

    async def release(self, pause_key: str, lease_id: str) -> bool:
        return await self.inner.release(pause_key, lease_id)

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        return await self.inner.revoke(pause_key, scope_hash, name, expires_at, now)

    async def status(self, pause_key: str) -> PauseRecord | None:
        return await self.inner.status(pause_key)

    async def purge(self, before: datetime) -> int:
        return await self.inner.purge(before)

    async def check(self) -> None:
        await self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def keys() -> KeyRing:
    return KeyRing.generate()


@pytest.fixture
def store() -> MemoryStore:
    return memory_store()


@pytest.fixture
def checkpoints() -> MemoryCheckpoints:
    return MemoryCheckpoints()


# -- 1. purge can never reopen a pause ---------------------------------------------------


async def test_purge_after_the_short_token_expired_does_not_reopen_a_revoked_pause(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    clock = Clock()
    tokens = service(keys, store, checkpoints, clock)
    short = await mint(tokens, ttl=timedelta(minutes=5))
    long = await mint(tokens, ttl=timedelta(days=6))
    assert await tokens.revoke(short, scope=ACME) is TokenStatus.REVOKED
    clock.advance(3600)  # the short token and its leeway are long gone
    await store.purge(datetime.fromtimestamp(clock(), tz=UTC))
    with pytest.raises(TokenRevoked):
        await tokens.consume(long, YES, scope=ACME)


async def test_a_row_outlives_every_token_that_could_still_verify(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    clock = Clock()
    tokens = service(keys, store, checkpoints, clock)
    token = await mint(tokens, ttl=timedelta(minutes=5))
    later = await mint(tokens, ttl=timedelta(days=7))
    await tokens.consume(token, YES, scope=ACME)
    record = await store.status(tokens.verify(token).pause_key)
    assert record is not None
    last_valid = tokens.verify(later).expires_at + tokens.policy.leeway
    assert record.expires_at >= last_valid
    clock.advance(timedelta(days=7).total_seconds() + 29)
    await store.purge(datetime.fromtimestamp(clock(), tz=UTC))
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(later, NO, scope=ACME)


async def test_an_expired_but_authentic_token_revokes_its_pause(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    clock = Clock()
    tokens = service(keys, store, checkpoints, clock)
    short = await mint(tokens, ttl=timedelta(minutes=5))
    long = await mint(tokens, ttl=timedelta(days=1))
    clock.advance(3600)
    assert await tokens.revoke(short, scope=ACME) is TokenStatus.REVOKED
    with pytest.raises(TokenRevoked):
        await tokens.consume(long, YES, scope=ACME)


async def test_no_token_is_minted_for_a_revoked_pause(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    tokens = service(keys, store, checkpoints)
    await tokens.revoke(await mint(tokens), scope=ACME)
    with pytest.raises(TokenRevoked) as caught:
        await mint(tokens)
    assert caught.value.code == "pause_revoked"


async def test_no_token_is_minted_for_an_answered_pause(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    tokens = service(keys, store, checkpoints)
    await tokens.consume(await mint(tokens), YES, scope=ACME)
    with pytest.raises(AlreadyRedeemed) as caught:
        await mint(tokens, scope=GLOBEX)
    assert caught.value.code == "pause_already_redeemed"


# -- 2. a pause is one row, whatever the scope its tokens were minted under ---------------


async def test_tokens_of_two_scopes_for_one_pause_answer_it_once(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    tokens = service(keys, store, checkpoints)
    acme, globex = await mint(tokens, scope=ACME), await mint(tokens, scope=GLOBEX)
    assert tokens.verify(acme).pause_key == tokens.verify(globex).pause_key
    first = await tokens.consume(acme, YES, scope=ACME)
    assert first.replayed is False
    with pytest.raises(AlreadyRedeemed):
        await tokens.consume(globex, NO, scope=GLOBEX)
    assert (await tokens.consume(globex, YES, scope=GLOBEX)).replayed is True


async def test_pauses_of_services_with_other_issuers_are_kept_apart(
    keys: KeyRing, store: MemoryStore
) -> None:
    billing = service(keys, store, MemoryCheckpoints(), issuer="billing")
    support = service(keys, store, MemoryCheckpoints(), issuer="support")
    one, other = await mint(billing), await mint(support)
    assert billing.verify(one).pause_key != support.verify(other).pause_key
    await billing.consume(one, YES, scope=ACME)
    assert (await support.consume(other, NO, scope=ACME)).replayed is False


# -- 3. a slow body keeps its claim ------------------------------------------------------


@pytest.mark.slow  # waits 2.5 s of real time: the lease is renewed by the clock
async def test_a_body_longer_than_the_lease_keeps_its_claim(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    tokens = service(keys, store, checkpoints, lease=timedelta(seconds=1), leeway=timedelta(0))
    token = await mint(tokens)
    async with tokens.redeem(token, YES, scope=ACME) as done:
        for _ in range(5):  # 2.5 lease lengths
            await asyncio.sleep(0.5)
            with pytest.raises(RedemptionInProgress):
                await tokens.consume(token, YES, scope=ACME)
        assert done.lease is not None
        assert not done.lease.lost
    assert await tokens.status(token, scope=ACME) is TokenStatus.REDEEMED


@pytest.mark.parametrize("lease", [timedelta(0), timedelta(microseconds=1), timedelta(seconds=0.9)])
def test_a_lease_under_one_second_is_refused(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints, lease: timedelta
) -> None:
    with pytest.raises(ConfigurationError, match="lease"):
        service(keys, store, checkpoints, lease=lease)


async def test_a_lost_lease_cancels_the_run_and_is_reported(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    flaky = FlakyStore(store)
    tokens = service(keys, flaky, checkpoints, lease=timedelta(seconds=1))
    token = await mint(tokens)
    ran_to_the_end = False

    async def slow_resume() -> None:
        nonlocal ran_to_the_end
        await asyncio.sleep(5)
        ran_to_the_end = True

    flaky.renew_refuses = True  # as if another worker had taken the claim over
    with pytest.raises(LeaseLost) as caught:  # noqa: PT012 - the body is the point
        async with tokens.redeem(token, YES, scope=ACME) as done:
            assert done.lease is not None
            await done.lease.run(slow_resume())
    assert caught.value.code == "lease_lost"
    assert ran_to_the_end is False
    assert flaky.commits == 0


# -- 4. revoking a pause whose body is running -------------------------------------------


async def test_revoking_during_a_redemption_says_in_progress_and_the_commit_stands(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    tokens = service(keys, store, checkpoints)
    token = await mint(tokens)
    async with tokens.redeem(token, YES, scope=ACME):
        assert await tokens.revoke(token, scope=ACME) is TokenStatus.IN_PROGRESS
    assert await tokens.status(token, scope=ACME) is TokenStatus.REDEEMED
    assert await tokens.revoke(token, scope=ACME) is TokenStatus.REDEEMED


async def test_a_claim_revoked_after_it_lapsed_fails_its_commit_with_its_own_code(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    clock = Clock()
    tokens = service(keys, store, checkpoints, clock)
    token = await mint(tokens)
    with pytest.raises(LeaseLost) as caught:  # noqa: PT012 - the body is the point
        async with tokens.redeem(token, YES, scope=ACME):
            clock.advance(120)  # the worker stalled: no renewal ran, the lease lapsed
            assert await tokens.revoke(token, scope=ACME) is TokenStatus.REVOKED
    assert caught.value.code == "lease_revoked"
    assert await tokens.status(token, scope=ACME) is TokenStatus.REVOKED


# -- 5. a commit that fails is retried until it is known ---------------------------------


async def test_a_commit_that_fails_a_few_times_is_retried_until_it_lands(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    flaky = FlakyStore(store)
    tokens = service(keys, flaky, checkpoints)
    token = await mint(tokens)
    flaky.commit_failures = 3
    done = await tokens.consume(token, YES, scope=ACME)
    assert done.replayed is False
    assert flaky.commits == 4
    assert await tokens.status(token, scope=ACME) is TokenStatus.REDEEMED


async def test_a_commit_whose_reply_was_lost_is_confirmed_by_the_retry(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    flaky = FlakyStore(store)
    tokens = service(keys, flaky, checkpoints)
    token = await mint(tokens)
    flaky.commit_lost_replies = 1
    done = await tokens.consume(token, YES, scope=ACME)
    assert done.replayed is False
    assert flaky.commits == 2


@pytest.mark.slow  # retries a commit for 1.55 s of real time
async def test_a_commit_retried_for_longer_than_the_lease_keeps_the_claim_renewed(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    flaky = FlakyStore(store)
    tokens = service(keys, flaky, checkpoints, lease=timedelta(seconds=1))
    token = await mint(tokens)
    # Retried after 0.05 + 0.1 + 0.2 + 0.4 + 0.8 s: past the 1 s lease, which only its
    # renewals keep.
    flaky.commit_failures = 5
    done = await tokens.consume(token, YES, scope=ACME)
    assert done.replayed is False
    assert flaky.commits == 6
    assert flaky.renewals > 0
    assert await tokens.status(token, scope=ACME) is TokenStatus.REDEEMED


@pytest.mark.slow  # waits out a 1 s lease of real time
async def test_a_commit_that_never_lands_is_unconfirmed_not_unavailable(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    flaky = FlakyStore(store)
    tokens = service(keys, flaky, checkpoints, lease=timedelta(seconds=1))
    token = await mint(tokens)
    flaky.commit_failures = 10**6
    flaky.renew_fails = True  # the store is down for good
    with pytest.raises(CommitUnconfirmed) as caught:
        await tokens.consume(token, YES, scope=ACME)
    assert caught.value.code == "commit_unconfirmed"
    assert not isinstance(caught.value, StoreUnavailable)
    assert flaky.commits > 1
    # The claim was not released: nobody resumes the run again before its lease ends.
    record = await store.status(tokens.verify(token).pause_key)
    assert record is not None
    assert record.state is PauseState.CLAIMED


async def test_a_refusal_before_the_body_ran_is_store_unavailable(
    keys: KeyRing, checkpoints: MemoryCheckpoints
) -> None:
    store = memory_store()
    tokens = service(keys, store, checkpoints)
    token = await mint(tokens)
    await store.aclose()
    ran = False
    with pytest.raises(StoreUnavailable):
        async with tokens.redeem(token, YES, scope=ACME):
            ran = True
    assert ran is False


# -- 6. clocks that disagree -------------------------------------------------------------


async def test_a_worker_whose_clock_runs_ahead_does_not_take_a_live_claim(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    honest, fast = Clock(), Clock(T0 + 40)
    one = service(keys, store, checkpoints, honest, lease=timedelta(seconds=30))
    other = service(keys, store, checkpoints, fast, lease=timedelta(seconds=30))
    token = await mint(one)
    async with one.redeem(token, YES, scope=ACME):
        with pytest.raises(RedemptionInProgress) as caught:
            await other.consume(token, NO, scope=ACME)
        # retry_after counts the skew allowance: 30 s lease + 30 s leeway - 40 s ahead
        assert caught.value.retry_after == pytest.approx(20)
        assert await other.status(token, scope=ACME) is TokenStatus.IN_PROGRESS
        assert await other.revoke(token, scope=ACME) is TokenStatus.IN_PROGRESS
    assert await other.status(token, scope=ACME) is TokenStatus.REDEEMED


async def test_a_dead_workers_claim_is_taken_over_after_lease_and_leeway(
    keys: KeyRing, store: MemoryStore, checkpoints: MemoryCheckpoints
) -> None:
    clock = Clock()
    tokens = service(keys, store, checkpoints, clock, lease=timedelta(seconds=30))
    token = await mint(tokens)
    dead = tokens.redeem(token, YES, scope=ACME)
    await dead.__aenter__()  # claimed; the worker then dies without renewing
    clock.advance(59)
    with pytest.raises(RedemptionInProgress):
        await tokens.consume(token, YES, scope=ACME)
    clock.advance(1)
    assert (await tokens.consume(token, YES, scope=ACME)).replayed is False
    with pytest.raises(LeaseLost):
        await dead.__aexit__(None, None, None)


# -- start-up ----------------------------------------------------------------------------


async def test_entering_the_service_checks_the_store_once(
    keys: KeyRing, checkpoints: MemoryCheckpoints
) -> None:
    class Misconfigured(FlakyStore):
        checks = 0

        async def check(self) -> None:
            self.checks += 1
            msg = "permission denied for table pausetoken_redemptions"
            raise ConfigurationError(msg, code="store_misconfigured")

    store = Misconfigured(memory_store())
    with pytest.raises(ConfigurationError) as caught:
        async with service(keys, store, checkpoints):
            pass
    assert caught.value.code == "store_misconfigured"
    assert store.checks == 1


# -- the invariant, under every mix of racers --------------------------------------------


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    racers=st.lists(
        st.tuples(st.sampled_from(["yes", "no"]), st.booleans(), st.integers(0, 3)),
        min_size=2,
        max_size=12,
    ),
    two_scopes=st.booleans(),
)
async def test_any_mix_of_concurrent_redeemers_acts_on_one_answer_at_most(
    racers: list[tuple[str, bool, int]], two_scopes: bool
) -> None:
    keys, store, checkpoints = KeyRing.generate(), memory_store(), MemoryCheckpoints()
    tokens = service(keys, store, checkpoints)
    by_scope = {ACME: await mint(tokens, scope=ACME)}
    if two_scopes:
        by_scope[GLOBEX] = await mint(tokens, scope=GLOBEX)
    answers = {"yes": YES, "no": NO}
    effects: list[str] = []
    outcomes: list[tuple[str, str]] = []

    async def redeemer(n: int, answer: str, raises: bool, pause: int) -> None:
        scope = GLOBEX if two_scopes and n % 2 else ACME
        try:
            async with tokens.redeem(by_scope[scope], answers[answer], scope=scope) as done:
                if done.replayed:
                    outcomes.append((answer, "replayed"))
                    return
                for _ in range(pause):
                    await asyncio.sleep(0)
                if raises:
                    msg = "the resume failed"
                    raise RuntimeError(msg)
                effects.append(answer)
                outcomes.append((answer, "ran"))
        except RedemptionInProgress:
            outcomes.append((answer, "in_progress"))
        except AlreadyRedeemed:
            outcomes.append((answer, "conflict"))
        except RuntimeError:
            outcomes.append((answer, "raised"))

    await asyncio.gather(*(redeemer(n, *racer) for n, racer in enumerate(racers)))
    assert len(effects) <= 1
    assert len(outcomes) == len(racers)
    assert_outcomes_agree(outcomes, effects)
    await assert_answered_as(tokens, by_scope, answers, effects)


def assert_outcomes_agree(outcomes: list[tuple[str, str]], effects: list[str]) -> None:
    """A replay saw the committed answer; a conflict saw another one."""
    for answer, outcome in outcomes:
        if outcome == "replayed":
            assert effects == [answer]
        if outcome == "conflict":
            assert effects
            assert effects != [answer]


async def assert_answered_as(
    tokens: PauseTokens,
    by_scope: dict[Scope, str],
    answers: dict[str, dict[str, bool]],
    effects: list[str],
) -> None:
    """Afterwards the pause answers exactly as its one effect (if any) says."""
    if not effects:
        assert await tokens.status(by_scope[ACME], scope=ACME) is TokenStatus.ACTIVE
        return
    for scope, token in by_scope.items():
        for answer, body in answers.items():
            if effects == [answer]:
                assert (await tokens.consume(token, body, scope=scope)).replayed is True
            else:
                with pytest.raises(AlreadyRedeemed):
                    await tokens.consume(token, body, scope=scope)
