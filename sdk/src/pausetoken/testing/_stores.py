"""``StoreConformance``: one test per rule of the ``TokenStore`` protocol."""

# ruff: noqa: S101, PLR2004 - this module is a test suite; pytest rewrites its asserts

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

import pytest
from hypothesis import HealthCheck, settings

from pausetoken._claims import new_jti
from pausetoken._store import ClaimOutcome, ClaimRequest, TokenState
from pausetoken.testing._stateful import check_store_state_machine

if TYPE_CHECKING:
    from pausetoken._store import TokenStore

__all__ = ["StoreConformance"]

SCOPE_HASH = hashlib.sha256(b"conformance scope").hexdigest()
ANSWER = hashlib.sha256(b"first answer").hexdigest()
OTHER_ANSWER = hashlib.sha256(b"another answer").hexdigest()
NAME = "approval"
TTL = timedelta(hours=1)
LEASE = timedelta(seconds=30)


def _now() -> datetime:
    # Anchored on the real clock so that engines expiring rows by themselves (TTL) keep
    # them for the whole test; everything after it is injected as `now`, nothing sleeps.
    return datetime.now(UTC).replace(microsecond=0)


@pytest.mark.asyncio
class StoreConformance:
    """What every :class:`~pausetoken.TokenStore` must do, as a pytest mixin.

    Subclass it in a ``Test...`` class and override the one async fixture ``store``, which
    yields a fresh, empty store on the test's event loop and closes it afterwards. Times
    are injected through :attr:`~pausetoken.ClaimRequest.now`, so no test sleeps.

    Capability flags (class attributes) turn optional parts off:

    Attributes:
        supports_purge: ``purge`` deletes expired rows and reports how many (engines that
            expire rows by themselves, such as Redis, may set this to ``False``).
        concurrency: How many concurrent claims of one token the race test starts.
        stateful_step_count: Steps per example of the state-machine test (its number of
            examples follows the active hypothesis profile).

    Example:
        .. code-block:: python

            class TestMyStore(StoreConformance):
                concurrency = 100

                @pytest.fixture
                async def store(self):
                    store = MyStore.from_url("mystore://localhost")
                    yield store
                    await store.aclose()
    """

    supports_purge: ClassVar[bool] = True
    concurrency: ClassVar[int] = 50
    stateful_step_count: ClassVar[int] = 30

    @pytest.fixture
    def store(self) -> TokenStore:
        """Override: yield a fresh, empty store (and close it after the test)."""
        msg = f"{type(self).__name__} must override the 'store' fixture with a fresh, empty store"
        raise NotImplementedError(msg)

    @staticmethod
    def request(
        jti: str,
        *,
        now: datetime,
        lease_id: str | None = None,
        lease: timedelta = LEASE,
        response_hash: str = ANSWER,
        expires_at: datetime | None = None,
    ) -> ClaimRequest:
        """A claim request for ``jti`` at ``now`` with a lease of ``lease``."""
        return ClaimRequest(
            jti=jti,
            scope_hash=SCOPE_HASH,
            name=NAME,
            response_hash=response_hash,
            expires_at=expires_at if expires_at is not None else now + TTL,
            lease_id=lease_id if lease_id is not None else new_jti(),
            lease_until=now + lease,
            now=now,
        )

    # -- claim ------------------------------------------------------------------------

    async def test_claim_of_an_unknown_token_is_claimed_and_recorded(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        request = self.request(jti, now=now, lease_id="lease-a")
        result = await store.claim(request)
        assert result.outcome is ClaimOutcome.CLAIMED
        record = await store.status(jti)
        assert record is not None
        assert (record.jti, record.state) == (jti, TokenState.CLAIMED)
        assert (record.scope_hash, record.name) == (SCOPE_HASH, NAME)
        assert record.response_hash == ANSWER
        assert (record.lease_id, record.lease_until) == ("lease-a", request.lease_until)
        assert record.expires_at == request.expires_at

    async def test_claim_during_a_live_lease_is_in_progress_until_that_lease_ends(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        first = self.request(jti, now=now)
        assert (await store.claim(first)).outcome is ClaimOutcome.CLAIMED
        later = now + LEASE - timedelta(seconds=1)
        result = await store.claim(self.request(jti, now=later))
        assert result.outcome is ClaimOutcome.IN_PROGRESS
        assert result.lease_until == first.lease_until

    async def test_claim_with_the_same_answer_during_a_live_lease_is_in_progress(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now))
        result = await store.claim(self.request(jti, now=now))
        assert result.outcome is ClaimOutcome.IN_PROGRESS

    async def test_claim_when_the_lease_ends_exactly_now_takes_it_over(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        takeover = self.request(jti, now=now + LEASE, lease_id="lease-b")
        assert (await store.claim(takeover)).outcome is ClaimOutcome.CLAIMED
        record = await store.status(jti)
        assert record is not None
        assert (record.lease_id, record.lease_until) == ("lease-b", takeover.lease_until)

    async def test_after_a_takeover_the_old_holder_can_neither_commit_nor_release(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        later = now + LEASE + timedelta(seconds=5)
        await store.claim(self.request(jti, now=later, lease_id="lease-b"))
        assert await store.commit(jti, "lease-a") is False
        assert await store.release(jti, "lease-a") is False
        record = await store.status(jti)
        assert record is not None
        assert (record.state, record.lease_id) == (TokenState.CLAIMED, "lease-b")

    async def test_a_takeover_records_the_new_answer(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        later = now + LEASE
        await store.claim(
            self.request(jti, now=later, lease_id="lease-b", response_hash=OTHER_ANSWER)
        )
        assert await store.commit(jti, "lease-b") is True
        again = await store.claim(self.request(jti, now=later, response_hash=OTHER_ANSWER))
        assert again.outcome is ClaimOutcome.REDEEMED_SAME

    # -- commit and release -------------------------------------------------------------

    async def test_commit_by_the_holder_redeems_the_token(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        assert await store.commit(jti, "lease-a") is True
        record = await store.status(jti)
        assert record is not None
        assert (record.state, record.response_hash) == (TokenState.REDEEMED, ANSWER)

    async def test_commit_by_another_lease_is_refused(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        assert await store.commit(jti, "lease-b") is False
        record = await store.status(jti)
        assert record is not None
        assert (record.state, record.lease_id) == (TokenState.CLAIMED, "lease-a")

    async def test_commit_of_an_unknown_token_is_refused(self, store: TokenStore) -> None:
        jti = new_jti()
        assert await store.commit(jti, "lease-a") is False
        assert await store.status(jti) is None

    async def test_a_second_commit_reports_that_nothing_changed(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        assert await store.commit(jti, "lease-a") is True
        assert await store.commit(jti, "lease-a") is False

    async def test_commit_after_the_lease_ran_out_without_a_takeover_succeeds(
        self, store: TokenStore
    ) -> None:
        # The store has no clock of its own: a lease that ran out is only taken over by a
        # claim; until then its holder may still commit.
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a", lease=timedelta(0)))
        assert await store.commit(jti, "lease-a") is True
        record = await store.status(jti)
        assert record is not None
        assert record.state is TokenState.REDEEMED

    async def test_release_by_the_holder_makes_the_token_claimable_again(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        assert await store.release(jti, "lease-a") is True
        assert await store.status(jti) is None
        retry = self.request(jti, now=now, lease_id="lease-b", response_hash=OTHER_ANSWER)
        assert (await store.claim(retry)).outcome is ClaimOutcome.CLAIMED

    async def test_release_by_another_lease_is_refused(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        assert await store.release(jti, "lease-b") is False
        record = await store.status(jti)
        assert record is not None
        assert (record.state, record.lease_id) == (TokenState.CLAIMED, "lease-a")

    async def test_release_after_commit_is_refused_and_the_token_stays_redeemed(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        await store.commit(jti, "lease-a")
        assert await store.release(jti, "lease-a") is False
        record = await store.status(jti)
        assert record is not None
        assert record.state is TokenState.REDEEMED

    # -- redeemed tokens ----------------------------------------------------------------

    async def test_replay_with_the_same_answer_is_an_idempotent_retry(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        await store.commit(jti, "lease-a")
        result = await store.claim(self.request(jti, now=now + timedelta(hours=2)))
        assert result.outcome is ClaimOutcome.REDEEMED_SAME

    async def test_replay_with_a_different_answer_is_a_conflict(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        await store.commit(jti, "lease-a")
        result = await store.claim(self.request(jti, now=now, response_hash=OTHER_ANSWER))
        assert result.outcome is ClaimOutcome.REDEEMED_OTHER

    # -- revoke -------------------------------------------------------------------------

    async def test_revoking_an_unknown_token_records_it_as_revoked(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        record = await store.revoke(jti, SCOPE_HASH, NAME, now + TTL)
        assert (record.jti, record.state) == (jti, TokenState.REVOKED)
        assert (record.scope_hash, record.name) == (SCOPE_HASH, NAME)
        assert record.expires_at == now + TTL
        assert await store.status(jti) == record

    async def test_a_revoked_token_cannot_be_claimed(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.revoke(jti, SCOPE_HASH, NAME, now + TTL)
        result = await store.claim(self.request(jti, now=now))
        assert result.outcome is ClaimOutcome.REVOKED

    async def test_revoking_a_claimed_token_revokes_it_and_voids_the_lease(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        record = await store.revoke(jti, SCOPE_HASH, NAME, now + TTL)
        assert record.state is TokenState.REVOKED
        assert await store.commit(jti, "lease-a") is False
        assert await store.release(jti, "lease-a") is False
        later = now + LEASE * 10
        assert (await store.claim(self.request(jti, now=later))).outcome is ClaimOutcome.REVOKED

    async def test_revoking_a_redeemed_token_leaves_it_redeemed(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        await store.commit(jti, "lease-a")
        record = await store.revoke(jti, SCOPE_HASH, NAME, now + TTL)
        assert (record.state, record.response_hash) == (TokenState.REDEEMED, ANSWER)
        result = await store.claim(self.request(jti, now=now))
        assert result.outcome is ClaimOutcome.REDEEMED_SAME

    async def test_revoking_twice_keeps_the_token_revoked(self, store: TokenStore) -> None:
        now, jti = _now(), new_jti()
        await store.revoke(jti, SCOPE_HASH, NAME, now + TTL)
        record = await store.revoke(jti, SCOPE_HASH, NAME, now + TTL)
        assert record.state is TokenState.REVOKED

    # -- status and purge ---------------------------------------------------------------

    async def test_status_of_an_unknown_token_is_none(self, store: TokenStore) -> None:
        assert await store.status(new_jti()) is None

    async def test_purge_deletes_only_rows_that_expired_before_the_cutoff(
        self, store: TokenStore
    ) -> None:
        if not self.supports_purge:
            pytest.skip("this store expires rows by itself (supports_purge = False)")
        now = _now()
        early, edge, late = new_jti(), new_jti(), new_jti()
        cutoff = now + TTL
        await store.claim(self.request(early, now=now, expires_at=cutoff - timedelta(seconds=1)))
        await store.claim(self.request(edge, now=now, expires_at=cutoff, lease_id="lease-e"))
        await store.commit(edge, "lease-e")
        await store.revoke(late, SCOPE_HASH, NAME, cutoff + timedelta(seconds=1))
        assert await store.purge(cutoff) == 1
        assert await store.status(early) is None
        assert await store.status(edge) is not None
        assert await store.status(late) is not None
        assert await store.purge(cutoff) == 0
        assert await store.purge(cutoff + timedelta(seconds=2)) == 2

    async def test_purge_of_an_empty_store_deletes_nothing(self, store: TokenStore) -> None:
        if not self.supports_purge:
            pytest.skip("this store expires rows by itself (supports_purge = False)")
        assert await store.purge(_now() + timedelta(days=365)) == 0

    # -- token ids ----------------------------------------------------------------------

    async def test_jti_is_case_sensitive(self, store: TokenStore) -> None:
        now, rest = _now(), new_jti()
        lower, upper = "aB" + rest, "Ab" + rest
        await store.claim(self.request(lower, now=now, lease_id="lease-a"))
        await store.commit(lower, "lease-a")
        result = await store.claim(self.request(upper, now=now, response_hash=OTHER_ANSWER))
        assert result.outcome is ClaimOutcome.CLAIMED
        lower_record, upper_record = await store.status(lower), await store.status(upper)
        assert lower_record is not None
        assert upper_record is not None
        assert (lower_record.state, upper_record.state) == (
            TokenState.REDEEMED,
            TokenState.CLAIMED,
        )

    @pytest.mark.parametrize("length", [22, 43, 64])
    async def test_jtis_of_every_allowed_length_round_trip(
        self, store: TokenStore, length: int
    ) -> None:
        now = _now()
        jti = ("Zz-_9" * 13)[: length - 1] + "x"
        await store.claim(self.request(jti, now=now, lease_id="lease-a"))
        record = await store.status(jti)
        assert record is not None
        assert record.jti == jti
        assert await store.status(jti[:-1] + "X") is None

    # -- concurrency --------------------------------------------------------------------

    async def test_concurrent_claims_of_one_token_have_exactly_one_winner(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        requests = [self.request(jti, now=now) for _ in range(self.concurrency)]
        results = await asyncio.gather(*(store.claim(r) for r in requests))
        outcomes = [r.outcome for r in results]
        assert outcomes.count(ClaimOutcome.CLAIMED) == 1
        assert outcomes.count(ClaimOutcome.IN_PROGRESS) == self.concurrency - 1
        winner = requests[outcomes.index(ClaimOutcome.CLAIMED)]
        assert {r.lease_until for r in results if r.outcome is ClaimOutcome.IN_PROGRESS} == {
            winner.lease_until
        }
        record = await store.status(jti)
        assert record is not None
        assert record.lease_id == winner.lease_id

    async def test_concurrent_takeovers_of_an_ended_lease_have_exactly_one_winner(
        self, store: TokenStore
    ) -> None:
        now, jti = _now(), new_jti()
        await store.claim(self.request(jti, now=now, lease_id="lease-dead"))
        later = now + LEASE
        requests = [self.request(jti, now=later) for _ in range(self.concurrency)]
        committed, results = await asyncio.gather(
            store.commit(jti, "lease-dead"), asyncio.gather(*(store.claim(r) for r in requests))
        )
        outcomes = [r.outcome for r in results]
        if committed:
            # The old holder won: every claim sees a redemption with the same answer.
            assert set(outcomes) == {ClaimOutcome.REDEEMED_SAME}
        else:
            assert outcomes.count(ClaimOutcome.CLAIMED) == 1

    async def test_concurrent_claims_of_distinct_tokens_all_win(self, store: TokenStore) -> None:
        now = _now()
        requests = [self.request(new_jti(), now=now) for _ in range(self.concurrency)]
        results = await asyncio.gather(*(store.claim(r) for r in requests))
        assert {r.outcome for r in results} == {ClaimOutcome.CLAIMED}

    # -- the state machine --------------------------------------------------------------

    def state_machine_settings(self) -> settings:
        """Hypothesis settings for the state-machine test (the active profile's examples)."""
        return settings(
            deadline=None,
            stateful_step_count=self.stateful_step_count,
            suppress_health_check=[HealthCheck.too_slow],
        )

    async def test_store_follows_the_state_machine_model(self, store: TokenStore) -> None:
        await check_store_state_machine(
            store, supports_purge=self.supports_purge, settings=self.state_machine_settings()
        )
