"""``StoreConformance``: one test per rule of the ``TokenStore`` protocol."""

# ruff: noqa: S101 - this module is a test suite; pytest rewrites its asserts

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import attrs
import pytest
from hypothesis import HealthCheck, settings

from pausetoken._claims import new_jti
from pausetoken._race import race_processes, race_tasks, warm_up
from pausetoken._store_api import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
    TokenStore,
)
from pausetoken.exceptions import StoreUnavailable
from pausetoken.testing._stateful import assert_same_record, check_store_state_machine

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

__all__ = ["StoreConformance", "StoreFactory"]

#: Opens another store on the same data as the ``store`` fixture (see ``store_factory``).
StoreFactory: TypeAlias = Callable[[], Awaitable[TokenStore]]

SCOPE_HASH = hashlib.sha256(b"conformance scope").hexdigest()
OTHER_SCOPE_HASH = hashlib.sha256(b"another scope").hexdigest()
ANSWER = hashlib.sha256(b"first answer").hexdigest()
OTHER_ANSWER = hashlib.sha256(b"another answer").hexdigest()
NAME = "approval"
OTHER_NAME = "second-look"
# Odd microseconds everywhere: a store that rounds or truncates times is found out.
TTL = timedelta(hours=1, microseconds=7)
LEASE = timedelta(seconds=30, microseconds=1)
TICK = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The latest time a store must keep exactly: 2**53 microseconds after the epoch (June 2255),
#: the last whole microsecond a double (a Lua number, a JavaScript one) still holds exactly.
LATEST = _EPOCH + timedelta(microseconds=2**53)
#: How close to a row's expiry the engine-expiry test reads it: inside the last millisecond,
#: where a TTL rounded down to milliseconds has already removed it.
_EXPIRY_WINDOW = timedelta(microseconds=999)


def _now() -> datetime:
    # Anchored on the real clock so that engines expiring rows by themselves (TTL) keep
    # them for the whole test; everything after it is injected as `now`, nothing sleeps.
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond | 1)


def claimed_record(request: ClaimRequest, *, expires_at: datetime | None = None) -> PauseRecord:
    """The record the protocol says a winning ``request`` leaves."""
    return PauseRecord(
        pause_key=request.pause_key,
        state=PauseState.CLAIMED,
        scope_hash=request.scope_hash,
        name=request.name,
        expires_at=expires_at if expires_at is not None else request.expires_at,
        response_hash=request.response_hash,
        lease_id=request.lease_id,
        lease_until=request.lease_until,
    )


def redeemed_record(request: ClaimRequest, *, expires_at: datetime | None = None) -> PauseRecord:
    """The record a winning ``request`` leaves once committed (or consumed in one call)."""
    return attrs.evolve(claimed_record(request, expires_at=expires_at), state=PauseState.REDEEMED)


@pytest.mark.asyncio
class StoreConformance:
    """What every [`TokenStore`][pausetoken.TokenStore] must do, as a pytest mixin.

    Subclass it in a ``Test...`` class and override the async fixture ``store``, which
    yields a fresh, empty store on the test's event loop and closes it afterwards. Times
    are injected through `ClaimRequest.now`, so no test sleeps.

    Further fixtures make the concurrency tests stronger; override them when you can:

    * ``store_factory``: an async callable opening **another** store on the same data as
      ``store`` (for example ``lambda: MyStore.from_url(url)``); the kit closes what it
      opens. The race tests then claim through several stores, each with its own
      connections opened before the race. Without it they claim through ``store`` after
      opening ``concurrency`` connections on it with concurrent ``status`` calls. Either
      way every claimer waits at a barrier first, so the first one cannot write before
      the others are ready: a claim that reads and then writes fails whether or not the
      pool was warm.
    * ``store_url`` and ``store_url_options``: the URL (and ``from_url`` options) that
      opens the same data in a fresh interpreter, for the multi-process race
      ([`race_processes()`][pausetoken.testing.race_processes]). A store that cannot be shared
      between
      processes sets ``process_race_skip_reason`` instead; leaving both unset fails that
      test, so the race is never skipped silently.

    Capability flags (class attributes) adjust the kit:

    Attributes:
        supports_purge: ``purge`` deletes expired rows and reports how many (engines that
            expire rows by themselves (a TTL) may set this to ``False``).
        concurrency: How many concurrent claims of one pause the race tests start.
        factory_stores: How many stores the race tests open with ``store_factory``.
        process_race_skip_reason: Why the multi-process race does not apply (for
            process-local stores such as ``MemoryStore``); ``None`` runs it.
        process_race_processes: How many OS processes the multi-process race starts.
        process_race_keys: How many pauses every process claims.
        process_race_timeout: Seconds the multi-process race may take, start-up included.
        process_race_rounds: How many rounds the multi-process race splits its keys into,
            each started by every process at one instant.
        stateful_step_count: Steps per example of the state-machine test (its number of
            examples follows the active hypothesis profile).

    Examples:
        ```python
        class TestMyStore(StoreConformance):
            concurrency = 100

            @pytest.fixture
            def store_url(self, tmp_path):
                return f"mystore:///{tmp_path}/tokens"

            @pytest.fixture
            def store_factory(self, store_url):
                async def open_one():
                    return MyStore.from_url(store_url)

                return open_one

            @pytest.fixture
            async def store(self, store_factory):
                store = await store_factory()
                yield store
                await store.aclose()
        ```
    """

    supports_purge: ClassVar[bool] = True
    concurrency: ClassVar[int] = 50
    factory_stores: ClassVar[int] = 8
    process_race_skip_reason: ClassVar[str | None] = None
    process_race_processes: ClassVar[int] = 3
    process_race_keys: ClassVar[int] = 50
    process_race_timeout: ClassVar[float] = 120.0
    process_race_rounds: ClassVar[int] = 10
    stateful_step_count: ClassVar[int] = 30

    # -- fixtures ---------------------------------------------------------------------------

    @pytest.fixture
    def store(self) -> TokenStore:
        """Override: yield a fresh, empty store (and close it after the test)."""
        msg = f"{type(self).__name__} must override the 'store' fixture with a fresh, empty store"
        raise NotImplementedError(msg)

    @pytest.fixture
    def store_factory(self) -> StoreFactory | None:
        """Override: an async callable opening another store on the data of ``store``.

        ``None`` (the default) makes the race tests go through ``store`` alone.
        """
        return None

    @pytest.fixture
    def store_url(self) -> str | None:
        """Override: the URL (or ``module:attr``) opening the data of ``store`` anew.

        ``None`` (the default) fails the multi-process race unless
        ``process_race_skip_reason`` says why it does not apply.
        """
        return None

    @pytest.fixture
    def store_url_options(self) -> Mapping[str, Any]:
        """Override: keyword options for ``from_url`` with ``store_url`` (picklable)."""
        return {}

    @contextlib.asynccontextmanager
    async def racing_stores(
        self, store: TokenStore, store_factory: StoreFactory | None, count: int
    ) -> AsyncIterator[list[TokenStore]]:
        """``count`` racers, each with its connection open before the race starts.

        With ``store_factory``, up to `factory_stores` stores are opened, checked
        and warmed (and closed afterwards), and the racers take turns on them; without,
        every racer is ``store``, warmed with ``count`` concurrent calls.
        """
        if store_factory is None:
            await warm_up(store, count)
            yield [store] * count
            return
        opened: list[TokenStore] = []
        try:
            for _ in range(max(1, min(count, self.factory_stores))):
                other = await store_factory()
                opened.append(other)
                await other.check()
            per_store = -(-count // len(opened))
            await asyncio.gather(*(warm_up(other, per_store) for other in opened))
            yield [opened[i % len(opened)] for i in range(count)]
        finally:
            for other in opened:
                await other.aclose()

    @staticmethod
    def request(
        pause_key: str,
        *,
        now: datetime,
        lease_id: str | None = None,
        lease: timedelta = LEASE,
        response_hash: str = ANSWER,
        expires_at: datetime | None = None,
        scope_hash: str = SCOPE_HASH,
        name: str = NAME,
    ) -> ClaimRequest:
        """A claim request for ``pause_key`` at ``now`` with a lease of ``lease``."""
        return ClaimRequest(
            pause_key=pause_key,
            scope_hash=scope_hash,
            name=name,
            response_hash=response_hash,
            expires_at=expires_at if expires_at is not None else now + TTL,
            lease_id=lease_id if lease_id is not None else new_jti(),
            lease_until=now + lease,
            now=now,
        )

    def other_request(self, pause_key: str, **options: Any) -> ClaimRequest:
        """`request()` from another caller: another answer, scope and interrupt name."""
        return self.request(
            pause_key,
            response_hash=OTHER_ANSWER,
            scope_hash=OTHER_SCOPE_HASH,
            name=OTHER_NAME,
            **options,
        )

    @staticmethod
    async def assert_status(store: TokenStore, expected: PauseRecord | None) -> None:
        """Fail unless ``status`` returns ``expected`` in every field."""
        key = expected.pause_key if expected is not None else ""
        assert_same_record(await store.status(key), expected, "status")

    async def _claimed(self, store: TokenStore, request: ClaimRequest) -> PauseRecord:
        result = await store.claim(request)
        assert result.outcome is ClaimOutcome.CLAIMED, result
        return claimed_record(request)

    async def _redeemed(self, store: TokenStore, request: ClaimRequest) -> PauseRecord:
        record = await self._claimed(store, request)
        assert await store.commit(request.pause_key, request.lease_id, request.expires_at)
        return attrs.evolve(record, state=PauseState.REDEEMED)

    async def _revoked(self, store: TokenStore, key: str, now: datetime) -> PauseRecord:
        record = await store.revoke(key, SCOPE_HASH, NAME, now + TTL, now)
        expected = PauseRecord(
            pause_key=key,
            state=PauseState.REVOKED,
            scope_hash=SCOPE_HASH,
            name=NAME,
            expires_at=now + TTL,
        )
        assert_same_record(record, expected, "revoke")
        return expected

    async def _leave_in(self, store: TokenStore, state: str, request: ClaimRequest) -> None:
        """Leave the pause of ``request`` revoked, redeemed by ``request``, or claimed by it."""
        if state == "revoked":
            await self._revoked(store, request.pause_key, request.now)
        elif state == "redeemed":
            await self._redeemed(store, request)
        else:
            await self._claimed(store, request)

    # -- claim ----------------------------------------------------------------------------

    async def test_claim_of_an_unknown_pause_is_claimed_and_every_field_recorded(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        request = self.request(key, now=now, lease_id="lease-a")
        assert await store.claim(request) == ClaimResult(ClaimOutcome.CLAIMED)
        await self.assert_status(store, claimed_record(request))

    async def test_claim_during_a_live_lease_is_in_progress_and_changes_nothing(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        first = self.request(key, now=now)
        record = await self._claimed(store, first)
        later = self.other_request(
            key,
            now=first.lease_until - TICK,
            expires_at=now + TTL - TICK,
        )
        result = await store.claim(later)
        assert result == ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=first.lease_until)
        await self.assert_status(store, record)

    async def test_claim_with_the_same_answer_during_a_live_lease_is_in_progress(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        first = self.request(key, now=now)
        await self._claimed(store, first)
        result = await store.claim(self.request(key, now=now))
        assert result == ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=first.lease_until)

    async def test_claim_when_the_lease_ends_exactly_now_takes_it_over(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        first = self.request(key, now=now, lease_id="lease-a")
        await self._claimed(store, first)
        takeover = self.request(key, now=first.lease_until, lease_id="lease-b")
        assert (await store.claim(takeover)).outcome is ClaimOutcome.CLAIMED
        await self.assert_status(store, claimed_record(takeover))

    async def test_a_takeover_overwrites_scope_name_answer_and_lease(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        later = now + LEASE + timedelta(seconds=1, microseconds=3)
        takeover = self.other_request(
            key,
            now=later,
            lease_id="lease-b",
            lease=timedelta(seconds=7, microseconds=5),
            expires_at=later + TTL,
        )
        assert (await store.claim(takeover)).outcome is ClaimOutcome.CLAIMED
        await self.assert_status(store, claimed_record(takeover))

    async def test_after_a_takeover_the_old_holder_can_neither_renew_commit_nor_release(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        later = now + LEASE + timedelta(seconds=5)
        record = await self._claimed(store, self.request(key, now=later, lease_id="lease-b"))
        assert await store.renew(key, "lease-a", later + timedelta(hours=1)) is False
        assert await store.commit(key, "lease-a", later + TTL) is False
        assert await store.release(key, "lease-a") is False
        await self.assert_status(store, record)

    async def test_a_takeover_records_the_new_answer(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        later = now + LEASE
        takeover = self.request(key, now=later, lease_id="lease-b", response_hash=OTHER_ANSWER)
        await self._claimed(store, takeover)
        assert await store.commit(key, "lease-b", takeover.expires_at) is True
        again = await store.claim(self.request(key, now=later, response_hash=OTHER_ANSWER))
        assert again.outcome is ClaimOutcome.REDEEMED_SAME
        first_answer = await store.claim(self.request(key, now=later))
        assert first_answer.outcome is ClaimOutcome.REDEEMED_OTHER

    @pytest.mark.parametrize("state", ["in_progress", "redeemed", "revoked", "takeover"])
    async def test_claim_raises_the_expiry_and_never_lowers_it(
        self, store: TokenStore, state: str
    ) -> None:
        now, key = _now(), new_jti()
        first = self.request(key, now=now, lease_id="lease-a")
        await self._leave_in(store, state, first)
        at = first.lease_until if state == "takeover" else now
        lower = self.request(key, now=at, expires_at=first.expires_at - TICK)
        await store.claim(lower)
        record = await store.status(key)
        assert record is not None
        assert record.expires_at == first.expires_at, "a claim lowered the expiry"
        if state == "takeover":
            # The lower claim took the lease over; this one finds it live.
            at = lower.now
        higher = self.request(key, now=at, expires_at=first.expires_at + TICK)
        await store.claim(higher)
        record = await store.status(key)
        assert record is not None
        assert record.expires_at == higher.expires_at, "a claim did not raise the expiry"

    # -- renew ----------------------------------------------------------------------------

    async def test_renew_by_the_holder_extends_the_lease(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        first = self.request(key, now=now, lease_id="lease-a")
        record = await self._claimed(store, first)
        until = first.lease_until + timedelta(seconds=30, microseconds=2)
        assert await store.renew(key, "lease-a", until) is True
        await self.assert_status(store, attrs.evolve(record, lease_until=until))
        result = await store.claim(self.request(key, now=first.lease_until))
        assert result == ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=until)

    async def test_renew_never_lowers_the_lease(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        record = await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.renew(key, "lease-a", now + TICK) is True
        await self.assert_status(store, record)

    async def test_renew_by_another_lease_is_refused(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        record = await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.renew(key, "lease-b", now + timedelta(hours=1)) is False
        await self.assert_status(store, record)

    async def test_renew_of_an_unknown_pause_is_refused(self, store: TokenStore) -> None:
        key = new_jti()
        assert await store.renew(key, "lease-a", _now() + LEASE) is False
        assert await store.status(key) is None

    async def test_renew_after_the_lease_ran_out_without_a_takeover_succeeds(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        first = self.request(key, now=now, lease_id="lease-a", lease=timedelta(0))
        record = await self._claimed(store, first)
        until = now + LEASE
        assert await store.renew(key, "lease-a", until) is True
        await self.assert_status(store, attrs.evolve(record, lease_until=until))

    async def test_renew_of_a_redeemed_or_revoked_pause_is_refused(self, store: TokenStore) -> None:
        now, key, lapsed = _now(), new_jti(), new_jti()
        redeemed = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.renew(key, "lease-a", now + timedelta(hours=1)) is False
        await self.assert_status(store, redeemed)
        await self._claimed(store, self.request(lapsed, now=now, lease_id="lease-b"))
        await store.revoke(lapsed, SCOPE_HASH, NAME, now + TTL, now + LEASE)
        assert await store.renew(lapsed, "lease-b", now + timedelta(hours=1)) is False

    # -- commit ---------------------------------------------------------------------------

    async def test_commit_by_the_holder_redeems_the_pause_keeping_every_field(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        record = await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.commit(key, "lease-a", record.expires_at) is True
        await self.assert_status(store, attrs.evolve(record, state=PauseState.REDEEMED))

    async def test_commit_raises_the_expiry_and_never_lowers_it(self, store: TokenStore) -> None:
        now, key, other = _now(), new_jti(), new_jti()
        record = await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.commit(key, "lease-a", record.expires_at - TICK) is True
        redeemed = attrs.evolve(record, state=PauseState.REDEEMED)
        await self.assert_status(store, redeemed)
        raised = await self._claimed(store, self.request(other, now=now, lease_id="lease-b"))
        assert await store.commit(other, "lease-b", raised.expires_at + TICK) is True
        await self.assert_status(
            store,
            attrs.evolve(raised, state=PauseState.REDEEMED, expires_at=raised.expires_at + TICK),
        )

    async def test_commit_by_another_lease_is_refused(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        record = await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.commit(key, "lease-b", now + TTL) is False
        await self.assert_status(store, record)

    async def test_commit_of_an_unknown_pause_is_refused(self, store: TokenStore) -> None:
        key = new_jti()
        assert await store.commit(key, "lease-a", _now() + TTL) is False
        assert await store.status(key) is None

    async def test_a_second_commit_by_the_same_lease_is_confirmed(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        record = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.commit(key, "lease-a", record.expires_at - TICK) is True
        await self.assert_status(store, record)
        assert await store.commit(key, "lease-a", record.expires_at + TICK) is True
        await self.assert_status(store, attrs.evolve(record, expires_at=record.expires_at + TICK))

    async def test_commit_by_another_lease_after_a_commit_is_refused(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        record = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.commit(key, "lease-b", now + TTL) is False
        await self.assert_status(store, record)

    async def test_commit_after_the_lease_ran_out_without_a_takeover_succeeds(
        self, store: TokenStore
    ) -> None:
        # The store has no clock of its own: a lease that ran out is only taken over by a
        # claim; until then its holder may still commit.
        now, key = _now(), new_jti()
        request = self.request(key, now=now, lease_id="lease-a", lease=timedelta(0))
        record = await self._claimed(store, request)
        assert await store.commit(key, "lease-a", request.expires_at) is True
        await self.assert_status(store, attrs.evolve(record, state=PauseState.REDEEMED))

    # -- release --------------------------------------------------------------------------

    async def test_release_by_the_holder_makes_the_pause_claimable_again(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.release(key, "lease-a") is True
        assert await store.status(key) is None
        retry = self.request(key, now=now, lease_id="lease-b", response_hash=OTHER_ANSWER)
        await self._claimed(store, retry)
        await self.assert_status(store, claimed_record(retry))

    async def test_release_by_another_lease_is_refused(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        record = await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.release(key, "lease-b") is False
        await self.assert_status(store, record)

    async def test_release_of_an_unknown_pause_is_refused(self, store: TokenStore) -> None:
        key = new_jti()
        assert await store.release(key, "lease-a") is False
        assert await store.status(key) is None

    async def test_release_after_commit_is_refused_and_the_pause_stays_redeemed(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        record = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        assert await store.release(key, "lease-a") is False
        await self.assert_status(store, record)

    # -- redeemed pauses --------------------------------------------------------------------

    async def test_replay_with_the_same_answer_is_an_idempotent_retry(
        self, store: TokenStore
    ) -> None:
        now, key = _now(), new_jti()
        record = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        result = await store.claim(self.request(key, now=now + timedelta(hours=2)))
        assert result == ClaimResult(ClaimOutcome.REDEEMED_SAME)
        record = attrs.evolve(record, expires_at=now + timedelta(hours=2) + TTL)
        await self.assert_status(store, record)

    async def test_replay_with_a_different_answer_is_a_conflict(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        record = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        result = await store.claim(self.request(key, now=now, response_hash=OTHER_ANSWER))
        assert result == ClaimResult(ClaimOutcome.REDEEMED_OTHER)
        await self.assert_status(store, record)

    # -- consume (optional: SupportsConsume) ------------------------------------------------

    @staticmethod
    def consumer(store: TokenStore) -> Callable[[ClaimRequest], Awaitable[ClaimResult]]:
        """The store's one-call ``consume``; skips the test for a store without one."""
        consume: Callable[[ClaimRequest], Awaitable[ClaimResult]] | None = getattr(
            store, "consume", None
        )
        if consume is None:
            pytest.skip("the store has no consume() (the optional SupportsConsume)")
        return consume

    async def test_consume_of_an_unknown_pause_leaves_what_claim_and_commit_leave(
        self, store: TokenStore
    ) -> None:
        consume = self.consumer(store)
        now, key, twin = _now(), new_jti(), new_jti()
        request = self.request(key, now=now, lease_id="lease-a")
        assert await consume(request) == ClaimResult(ClaimOutcome.CLAIMED)
        in_two_steps = await self._redeemed(store, attrs.evolve(request, pause_key=twin))
        await self.assert_status(store, attrs.evolve(in_two_steps, pause_key=key))

    async def test_consume_retried_by_the_same_lease_is_confirmed(self, store: TokenStore) -> None:
        consume = self.consumer(store)
        now, key = _now(), new_jti()
        request = self.request(key, now=now, lease_id="lease-a")
        await consume(request)
        record = redeemed_record(request)
        earlier = attrs.evolve(request, expires_at=request.expires_at - TICK)
        assert await consume(earlier) == ClaimResult(ClaimOutcome.CLAIMED)
        await self.assert_status(store, record)
        later = attrs.evolve(request, expires_at=request.expires_at + TICK)
        assert await consume(later) == ClaimResult(ClaimOutcome.CLAIMED)
        await self.assert_status(store, attrs.evolve(record, expires_at=later.expires_at))
        # As after a commit: the lease confirms again, and holds nothing to renew or release.
        assert await store.commit(key, "lease-a", now + TTL) is True
        assert await store.renew(key, "lease-a", now + timedelta(hours=2)) is False
        assert await store.release(key, "lease-a") is False
        await self.assert_status(store, attrs.evolve(record, expires_at=later.expires_at))

    async def test_consume_during_a_live_lease_is_in_progress_and_changes_nothing(
        self, store: TokenStore
    ) -> None:
        consume = self.consumer(store)
        now, key = _now(), new_jti()
        first = self.request(key, now=now, lease_id="lease-a")
        record = await self._claimed(store, first)
        later = self.other_request(
            key,
            now=first.lease_until - TICK,
            expires_at=first.expires_at - TICK,
        )
        result = await consume(later)
        assert result == ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=first.lease_until)
        await self.assert_status(store, record)
        raised = attrs.evolve(later, expires_at=first.expires_at + TICK)
        assert (await consume(raised)).outcome is ClaimOutcome.IN_PROGRESS
        await self.assert_status(store, attrs.evolve(record, expires_at=raised.expires_at))
        assert await store.commit(key, "lease-a", now + TTL) is True  # the holder still holds

    async def test_consume_takes_over_an_ended_lease_and_the_old_holder_loses_it(
        self, store: TokenStore
    ) -> None:
        consume = self.consumer(store)
        now, key = _now(), new_jti()
        dead = self.request(key, now=now, lease_id="lease-a")
        await self._claimed(store, dead)
        takeover = self.other_request(
            key,
            now=dead.lease_until,
            lease_id="lease-b",
            expires_at=dead.expires_at - TICK,
        )
        assert await consume(takeover) == ClaimResult(ClaimOutcome.CLAIMED)
        record = redeemed_record(takeover, expires_at=dead.expires_at)
        await self.assert_status(store, record)
        assert await store.renew(key, "lease-a", now + timedelta(hours=2)) is False
        assert await store.commit(key, "lease-a", now + TTL) is False
        assert await store.release(key, "lease-a") is False
        await self.assert_status(store, record)

    async def test_consume_of_a_redeemed_pause_is_a_retry_or_a_conflict(
        self, store: TokenStore
    ) -> None:
        consume = self.consumer(store)
        now, key, consumed = _now(), new_jti(), new_jti()
        record = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        same = await consume(self.request(key, now=now, expires_at=record.expires_at - TICK))
        assert same == ClaimResult(ClaimOutcome.REDEEMED_SAME)
        other = self.request(key, now=now, response_hash=OTHER_ANSWER)
        assert await consume(other) == ClaimResult(ClaimOutcome.REDEEMED_OTHER)
        await self.assert_status(store, record)
        # And a pause redeemed in one call answers claims as a committed one does.
        await consume(self.request(consumed, now=now, lease_id="lease-b"))
        retry = await store.claim(self.request(consumed, now=now + timedelta(hours=2)))
        assert retry == ClaimResult(ClaimOutcome.REDEEMED_SAME)

    async def test_consume_of_a_revoked_pause_is_refused(self, store: TokenStore) -> None:
        consume = self.consumer(store)
        now, key = _now(), new_jti()
        record = await self._revoked(store, key, now)
        later = self.request(key, now=now, expires_at=record.expires_at + TICK)
        assert await consume(later) == ClaimResult(ClaimOutcome.REVOKED)
        await self.assert_status(store, attrs.evolve(record, expires_at=later.expires_at))

    @pytest.mark.parametrize("state", ["claimed", "redeemed", "revoked"])
    async def test_consume_raises_the_expiry_and_never_lowers_it(
        self, store: TokenStore, state: str
    ) -> None:
        consume = self.consumer(store)
        now, key = _now(), new_jti()
        first = self.request(key, now=now, lease_id="lease-a")
        await self._leave_in(store, state, first)
        before = await store.status(key)
        assert before is not None
        await consume(self.request(key, now=now, expires_at=before.expires_at - TICK))
        await self.assert_status(store, before)
        await consume(self.request(key, now=now, expires_at=before.expires_at + TICK))
        await self.assert_status(store, attrs.evolve(before, expires_at=before.expires_at + TICK))

    async def test_concurrent_consumes_and_claims_of_one_pause_have_exactly_one_winner(
        self, store: TokenStore, store_factory: StoreFactory | None
    ) -> None:
        self.consumer(store)  # each racer consumes through its own store
        now, key = _now(), new_jti()
        requests = [self.request(key, now=now) for _ in range(self.concurrency)]
        async with self.racing_stores(store, store_factory, len(requests)) as racers:
            calls = [
                (_consume if n % 2 else _claim)(racer, r)
                for n, (racer, r) in enumerate(zip(racers, requests, strict=True))
            ]
            results = await race_tasks(calls)
        outcomes = [r.outcome for r in results]
        assert outcomes.count(ClaimOutcome.CLAIMED) == 1, outcomes
        won = outcomes.index(ClaimOutcome.CLAIMED)
        winner = requests[won]
        if won % 2:  # consumed: the others met a redemption of the same answer, or its claim
            assert set(outcomes) - {ClaimOutcome.CLAIMED} <= {ClaimOutcome.REDEEMED_SAME}
            await self.assert_status(store, redeemed_record(winner))
        else:
            busy = ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=winner.lease_until)
            assert all(r == busy for r in results if r.outcome is not ClaimOutcome.CLAIMED)
            await self.assert_status(store, claimed_record(winner))

    async def test_concurrent_consumes_of_an_ended_lease_have_exactly_one_winner(
        self, store: TokenStore, store_factory: StoreFactory | None
    ) -> None:
        self.consumer(store)  # each racer consumes through its own store
        now, key = _now(), new_jti()
        dead = self.request(key, now=now, lease_id="lease-dead")
        await self._claimed(store, dead)
        requests = [
            self.request(key, now=dead.lease_until, response_hash=OTHER_ANSWER)
            for _ in range(self.concurrency)
        ]
        async with self.racing_stores(store, store_factory, len(requests)) as racers:
            results = await race_tasks(
                [_consume(racer, r) for racer, r in zip(racers, requests, strict=True)]
            )
        outcomes = [r.outcome for r in results]
        assert outcomes.count(ClaimOutcome.CLAIMED) == 1, outcomes
        assert set(outcomes) - {ClaimOutcome.CLAIMED} <= {ClaimOutcome.REDEEMED_SAME}, outcomes
        winner = requests[outcomes.index(ClaimOutcome.CLAIMED)]
        await self.assert_status(store, redeemed_record(winner))
        assert await store.commit(key, "lease-dead", now + TTL) is False

    # -- revoke ---------------------------------------------------------------------------

    async def test_revoking_an_unknown_pause_records_it_as_revoked(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        expected = await self._revoked(store, key, now)
        await self.assert_status(store, expected)

    async def test_a_revoked_pause_cannot_be_claimed(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        expected = await self._revoked(store, key, now)
        result = await store.claim(self.request(key, now=now, expires_at=now + TTL - TICK))
        assert result == ClaimResult(ClaimOutcome.REVOKED)
        await self.assert_status(store, expected)

    async def test_revoking_a_live_claim_leaves_it_claimed(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        request = self.request(key, now=now, lease_id="lease-a")
        record = await self._claimed(store, request)
        at = request.lease_until - TICK
        answer = await store.revoke(key, OTHER_SCOPE_HASH, OTHER_NAME, now + TTL - TICK, at)
        assert_same_record(answer, record, "revoke of a live claim")
        await self.assert_status(store, record)
        assert await store.commit(key, "lease-a", request.expires_at) is True

    @pytest.mark.parametrize("after", [timedelta(0), timedelta(seconds=5, microseconds=9)])
    async def test_revoking_a_lapsed_claim_revokes_it_and_clears_the_lease(
        self, store: TokenStore, after: timedelta
    ) -> None:
        now, key = _now(), new_jti()
        request = self.request(key, now=now, lease_id="lease-a")
        await self._claimed(store, request)
        at = request.lease_until + after
        answer = await store.revoke(key, OTHER_SCOPE_HASH, OTHER_NAME, now + TTL - TICK, at)
        expected = PauseRecord(
            pause_key=key,
            state=PauseState.REVOKED,
            scope_hash=SCOPE_HASH,
            name=NAME,
            expires_at=request.expires_at,
        )
        assert_same_record(answer, expected, "revoke of a lapsed claim")
        await self.assert_status(store, expected)
        assert await store.renew(key, "lease-a", at + LEASE) is False
        assert await store.commit(key, "lease-a", at + TTL) is False
        assert await store.release(key, "lease-a") is False
        result = await store.claim(self.request(key, now=at + LEASE * 10))
        assert result.outcome is ClaimOutcome.REVOKED

    async def test_revoking_a_redeemed_pause_leaves_it_redeemed(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        record = await self._redeemed(store, self.request(key, now=now, lease_id="lease-a"))
        answer = await store.revoke(key, OTHER_SCOPE_HASH, OTHER_NAME, now + TTL, now + LEASE)
        assert_same_record(answer, record, "revoke of a redeemed pause")
        await self.assert_status(store, record)
        result = await store.claim(self.request(key, now=now))
        assert result.outcome is ClaimOutcome.REDEEMED_SAME

    async def test_revoking_twice_keeps_the_first_record(self, store: TokenStore) -> None:
        now, key = _now(), new_jti()
        expected = await self._revoked(store, key, now)
        answer = await store.revoke(key, OTHER_SCOPE_HASH, OTHER_NAME, now + TTL - TICK, now)
        assert_same_record(answer, expected, "a second revoke")
        await self.assert_status(store, expected)

    @pytest.mark.parametrize("state", ["live", "redeemed", "revoked"])
    async def test_revoke_raises_the_expiry_and_never_lowers_it(
        self, store: TokenStore, state: str
    ) -> None:
        now, key = _now(), new_jti()
        request = self.request(key, now=now, lease_id="lease-a")
        await self._leave_in(store, state, request)
        lower = await store.revoke(key, SCOPE_HASH, NAME, request.expires_at - TICK, now)
        assert lower.expires_at == request.expires_at, "revoke lowered the expiry"
        higher = await store.revoke(key, SCOPE_HASH, NAME, request.expires_at + TICK, now)
        assert higher.expires_at == request.expires_at + TICK, "revoke did not raise the expiry"
        assert_same_record(await store.status(key), higher, "status after revoke")

    # -- status, check, times -----------------------------------------------------------------

    async def test_status_of_an_unknown_pause_is_none(self, store: TokenStore) -> None:
        assert await store.status(new_jti()) is None

    async def test_check_on_a_working_store_returns_none(self, store: TokenStore) -> None:
        check: Callable[[], Awaitable[object]] = store.check
        assert await check() is None
        assert await check() is None  # and may be called again

    async def test_check_leaves_no_pause_row(self, store: TokenStore) -> None:
        # check() may write what the schema needs, never a row purge() or status() meets.
        self._needs_purge()
        await store.check()
        assert await store.purge(LATEST) == 0

    async def test_ensure_schema_of_a_prepared_store_says_it_created_nothing(
        self, store: TokenStore
    ) -> None:
        # Optional: a store with a schema offers ensure_schema() -> bool (created anything?).
        ensure: Callable[[], Awaitable[object]] | None = getattr(store, "ensure_schema", None)
        if ensure is None:
            pytest.skip("the store has no ensure_schema()")
        await store.check()
        assert await ensure() is False
        assert await ensure() is False

    async def test_check_of_a_closed_store_raises_store_unavailable(
        self, store: TokenStore, store_factory: StoreFactory | None
    ) -> None:
        # check() must really look: a closed store cannot serve, so check() cannot pass.
        closed = store if store_factory is None else await store_factory()
        await closed.check()
        await closed.aclose()
        with pytest.raises(StoreUnavailable):
            await closed.check()

    @pytest.mark.parametrize("moment", ["latest", "just before the latest"])
    async def test_times_up_to_the_latest_round_trip_and_compare_exactly(
        self, store: TokenStore, moment: str
    ) -> None:
        # Every time a store is given lies between the epoch and LATEST.
        end = LATEST if moment == "latest" else LATEST - timedelta(days=1, microseconds=3)
        now, key = end - LEASE - TTL, new_jti()
        first = self.request(key, now=now, lease_id="lease-a", expires_at=end - TICK)
        record = await self._claimed(store, first)
        await self.assert_status(store, record)
        busy = await store.claim(self.request(key, now=first.lease_until - TICK))
        assert busy == ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=first.lease_until)
        takeover = self.request(key, now=first.lease_until, lease_id="lease-b", expires_at=end)
        await self._claimed(store, takeover)
        assert await store.renew(key, "lease-b", takeover.lease_until + TICK) is True
        assert await store.commit(key, "lease-b", end) is True
        expected = attrs.evolve(
            claimed_record(takeover),
            state=PauseState.REDEEMED,
            lease_until=takeover.lease_until + TICK,
        )
        await self.assert_status(store, expected)

    # -- engines that expire rows by themselves ------------------------------------------------

    @pytest.mark.parametrize("expiry", ["written", "raised"])
    async def test_a_row_the_engine_expires_is_kept_until_its_expiry(
        self, store: TokenStore, expiry: str
    ) -> None:
        """An engine that removes rows by itself keeps each one until its expiry.

        That is the row's ``expires_at``, the raised one included, never a millisecond
        earlier (a store says it removes rows itself with ``expires_rows_itself = True``).
        Real time is needed here: the row's expiry is a few milliseconds ahead, ends in
        ``.999`` of a millisecond, and is read in its last millisecond, where an expiry
        rounded down to milliseconds has passed. Only readings that end before the expiry
        count; a round that saw none (a slow round trip) is run again with a new row.
        """
        if not getattr(store, "expires_rows_itself", False) and self.supports_purge:
            pytest.skip("the store does not expire rows by itself (expires_rows_itself)")
        for _ in range(20):
            verdict = await self._read_until_expiry(store, raised=expiry == "raised")
            if verdict is not None:
                assert verdict, f"the engine removed a row before its {expiry} expiry"
                return
        pytest.skip("no status() call ended within the last millisecond before an expiry")

    @staticmethod
    async def _read_until_expiry(store: TokenStore, *, raised: bool) -> bool | None:
        """Read a row in the last millisecond before it expires: kept, gone, or ``None``.

        ``None`` when no reading both started in that millisecond and ended before it.
        """
        now = datetime.now(UTC)
        soon = now + timedelta(milliseconds=60)
        expires_at = soon.replace(microsecond=soon.microsecond // 1000 * 1000 + 999)
        key = new_jti()
        first = StoreConformance.request(
            key,
            now=now,
            expires_at=expires_at - timedelta(milliseconds=30) if raised else expires_at,
        )
        assert (await store.claim(first)).outcome is ClaimOutcome.CLAIMED
        if raised:
            await store.claim(StoreConformance.request(key, now=now, expires_at=expires_at))
        window_start = expires_at - _EXPIRY_WINDOW
        await asyncio.sleep(max(0.0, (window_start - datetime.now(UTC)).total_seconds() - 0.003))
        judged: bool | None = None
        while True:
            started = datetime.now(UTC)
            record = await store.status(key)
            ended = datetime.now(UTC)
            if ended >= expires_at:
                return judged
            if record is None:
                return False
            if started >= window_start:
                judged = True

    @pytest.mark.parametrize("microsecond", [1, 500_001, 999_999])
    async def test_every_time_round_trips_with_microseconds(
        self, store: TokenStore, microsecond: int
    ) -> None:
        now = _now().replace(microsecond=microsecond)
        key, other = new_jti(), new_jti()
        request = self.request(
            key,
            now=now,
            lease=timedelta(seconds=30, microseconds=microsecond),
            expires_at=now + timedelta(hours=1, microseconds=microsecond // 3 or 1),
        )
        record = await self._claimed(store, request)
        await self.assert_status(store, record)
        result = await store.claim(self.request(key, now=now, expires_at=request.expires_at))
        assert result.lease_until == request.lease_until
        until = request.lease_until + timedelta(microseconds=microsecond)
        assert await store.renew(key, request.lease_id, until)
        await self.assert_status(store, attrs.evolve(record, lease_until=until))
        revoked = await store.revoke(other, SCOPE_HASH, NAME, request.expires_at + TICK, now)
        assert revoked.expires_at == request.expires_at + TICK
        await self.assert_status(store, revoked)

    # -- purge ----------------------------------------------------------------------------

    def _needs_purge(self) -> None:
        if not self.supports_purge:
            pytest.skip("this store expires rows by itself (supports_purge = False)")

    async def test_purge_deletes_only_rows_that_expired_before_the_cutoff(
        self, store: TokenStore
    ) -> None:
        self._needs_purge()
        now = _now()
        early, edge, late = new_jti(), new_jti(), new_jti()
        cutoff = now + TTL
        await store.claim(self.request(early, now=now, expires_at=cutoff - TICK))
        await store.claim(self.request(edge, now=now, expires_at=cutoff, lease_id="lease-e"))
        await store.commit(edge, "lease-e", cutoff)
        await store.revoke(late, SCOPE_HASH, NAME, cutoff + TICK, now)
        assert await store.purge(cutoff) == 1
        assert await store.status(early) is None
        assert await store.status(edge) is not None
        assert await store.status(late) is not None
        assert await store.purge(cutoff) == 0
        assert await store.purge(cutoff + TICK) == 1
        assert await store.purge(cutoff + 2 * TICK) == 1

    @pytest.mark.parametrize("raised_by", ["claim", "commit", "revoke"])
    async def test_purge_keeps_a_row_whose_expiry_was_raised(
        self, store: TokenStore, raised_by: str
    ) -> None:
        self._needs_purge()
        now, key = _now(), new_jti()
        first = self.request(key, now=now, lease_id="lease-a")
        await self._claimed(store, first)
        raised = first.expires_at + timedelta(minutes=5)
        if raised_by == "claim":
            await store.claim(self.request(key, now=now, expires_at=raised))
        elif raised_by == "commit":
            assert await store.commit(key, "lease-a", raised)
        else:
            await store.revoke(key, SCOPE_HASH, NAME, raised, first.lease_until)
        assert await store.purge(first.expires_at + TICK) == 0
        record = await store.status(key)
        assert record is not None
        assert record.expires_at == raised
        assert await store.purge(raised + TICK) == 1

    async def test_purge_of_an_empty_store_deletes_nothing(self, store: TokenStore) -> None:
        self._needs_purge()
        assert await store.purge(_now() + timedelta(days=365)) == 0

    # -- pause keys -----------------------------------------------------------------------

    async def test_pause_keys_are_case_sensitive(self, store: TokenStore) -> None:
        now, rest = _now(), new_jti()
        lower, upper = "aB" + rest, "Ab" + rest
        redeemed = await self._redeemed(store, self.request(lower, now=now, lease_id="lease-a"))
        other = self.request(upper, now=now, response_hash=OTHER_ANSWER)
        claimed = await self._claimed(store, other)
        await self.assert_status(store, redeemed)
        await self.assert_status(store, claimed)

    @pytest.mark.parametrize("length", [1, 22, 43, 64])
    async def test_pause_keys_of_every_allowed_length_round_trip(
        self, store: TokenStore, length: int
    ) -> None:
        now = _now()
        key = (new_jti() + "Zz-_9" * 13)[: length - 1] + "x"
        record = await self._claimed(store, self.request(key, now=now, lease_id="lease-a"))
        await self.assert_status(store, record)
        assert await store.status(key[:-1] + "X") is None

    # -- concurrency ----------------------------------------------------------------------

    async def test_concurrent_claims_of_one_pause_have_exactly_one_winner(
        self, store: TokenStore, store_factory: StoreFactory | None
    ) -> None:
        now, key = _now(), new_jti()
        requests = [self.request(key, now=now) for _ in range(self.concurrency)]
        async with self.racing_stores(store, store_factory, len(requests)) as racers:
            results = await race_tasks(
                [_claim(racer, r) for racer, r in zip(racers, requests, strict=True)]
            )
        outcomes = [r.outcome for r in results]
        assert outcomes.count(ClaimOutcome.CLAIMED) == 1, outcomes
        winner = requests[outcomes.index(ClaimOutcome.CLAIMED)]
        busy = ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=winner.lease_until)
        assert all(r == busy for r in results if r.outcome is not ClaimOutcome.CLAIMED), results
        await self.assert_status(store, claimed_record(winner))

    @pytest.mark.parametrize("commit_at", ["start", "middle"])
    async def test_concurrent_takeovers_of_an_ended_lease_have_exactly_one_winner(
        self, store: TokenStore, store_factory: StoreFactory | None, commit_at: str
    ) -> None:
        now, key = _now(), new_jti()
        dead = self.request(key, now=now, lease_id="lease-dead")
        await self._claimed(store, dead)
        later = dead.lease_until
        requests = [
            self.request(key, now=later, expires_at=dead.expires_at)
            for _ in range(self.concurrency)
        ]
        async with self.racing_stores(store, store_factory, len(requests) + 1) as racers:
            calls: list[Callable[[], Awaitable[object]]] = [
                _claim(racer, r) for racer, r in zip(racers, requests, strict=False)
            ]
            # The last task at the barrier goes first; the rest follow in order.
            at = len(calls) if commit_at == "start" else len(calls) // 2
            calls.insert(at, lambda: racers[-1].commit(key, "lease-dead", dead.expires_at))
            results = await race_tasks(calls)
        committed = results.pop(at)
        outcomes = [r.outcome for r in results if isinstance(r, ClaimResult)]
        if committed:
            # The old holder committed first: every claim sees a redemption with its answer.
            assert set(outcomes) == {ClaimOutcome.REDEEMED_SAME}, outcomes
            await self.assert_status(
                store, attrs.evolve(claimed_record(dead), state=PauseState.REDEEMED)
            )
        else:
            assert outcomes.count(ClaimOutcome.CLAIMED) == 1, outcomes
            winner = requests[outcomes.index(ClaimOutcome.CLAIMED)]
            await self.assert_status(store, claimed_record(winner))

    async def test_concurrent_revokes_and_takeovers_agree_on_one_end(
        self, store: TokenStore, store_factory: StoreFactory | None
    ) -> None:
        now, key = _now(), new_jti()
        dead = self.request(key, now=now, lease_id="lease-dead")
        await self._claimed(store, dead)
        later = dead.lease_until
        half = max(1, self.concurrency // 2)
        requests = [self.request(key, now=later, expires_at=dead.expires_at) for _ in range(half)]
        async with self.racing_stores(store, store_factory, 2 * half) as racers:
            calls: list[Callable[[], Awaitable[object]]] = [
                _claim(racer, r) for racer, r in zip(racers, requests, strict=False)
            ]
            calls += [_revoke(racer, key, dead.expires_at, later) for racer in racers[half:]]
            answers = await race_tasks(calls)
        outcomes = [a.outcome for a in answers if isinstance(a, ClaimResult)]
        record = await store.status(key)
        assert record is not None
        if ClaimOutcome.CLAIMED in outcomes:
            # A claim won before any revoke: the revokes found a live claim and left it.
            assert outcomes.count(ClaimOutcome.CLAIMED) == 1, outcomes
            winner = requests[outcomes.index(ClaimOutcome.CLAIMED)]
            await self.assert_status(store, claimed_record(winner))
        else:
            assert set(outcomes) == {ClaimOutcome.REVOKED}, outcomes
            assert record.state is PauseState.REVOKED, record

    async def test_concurrent_claims_of_distinct_pauses_all_win(
        self, store: TokenStore, store_factory: StoreFactory | None
    ) -> None:
        now = _now()
        requests = [self.request(new_jti(), now=now) for _ in range(self.concurrency)]
        async with self.racing_stores(store, store_factory, len(requests)) as racers:
            results = await race_tasks(
                [_claim(racer, r) for racer, r in zip(racers, requests, strict=True)]
            )
        assert {r.outcome for r in results} == {ClaimOutcome.CLAIMED}
        for request in requests:
            await self.assert_status(store, claimed_record(request))

    async def test_processes_racing_for_the_same_pauses_get_one_winner_each(
        self, store: TokenStore, store_url: str | None, store_url_options: Mapping[str, Any]
    ) -> None:
        keys = await self._race_processes(store_url, store_url_options, consume=False)
        for key in keys:
            record = await store.status(key)
            assert record is not None, "a race winner's row is not visible through 'store'"
            assert record.state is PauseState.CLAIMED, record

    async def test_processes_consuming_and_claiming_the_same_pauses_get_one_winner_each(
        self, store: TokenStore, store_url: str | None, store_url_options: Mapping[str, Any]
    ) -> None:
        self.consumer(store)
        keys = await self._race_processes(store_url, store_url_options, consume=True)
        for key in keys:
            record = await store.status(key)
            assert record is not None, "a race winner's row is not visible through 'store'"
            assert record.state in {PauseState.CLAIMED, PauseState.REDEEMED}, record

    async def _race_processes(
        self, store_url: str | None, store_url_options: Mapping[str, Any], *, consume: bool
    ) -> list[str]:
        """Race fresh keys across processes; each must have exactly one winner."""
        if self.process_race_skip_reason:
            pytest.skip(self.process_race_skip_reason)
        if store_url is None:
            pytest.fail(
                f"{type(self).__name__} must override the 'store_url' fixture (a URL that "
                "opens the data of 'store' in a fresh interpreter) or set "
                "process_race_skip_reason to say why the multi-process race does not apply"
            )
        keys = [new_jti() for _ in range(self.process_race_keys)]
        counts = await asyncio.to_thread(
            race_processes,
            store_url,
            keys,
            processes=self.process_race_processes,
            options=store_url_options,
            timeout=self.process_race_timeout,
            rounds=self.process_race_rounds,
            consume=consume,
        )
        assert counts == dict.fromkeys(keys, 1)
        return keys

    # -- the state machine ----------------------------------------------------------------

    def state_machine_settings(self) -> settings:
        """Hypothesis settings for the state-machine test (the active profile's examples)."""
        return settings(
            deadline=None,
            stateful_step_count=self.stateful_step_count,
            suppress_health_check=[HealthCheck.too_slow],
        )

    async def test_store_follows_the_state_machine_model(
        self, store: TokenStore, store_factory: StoreFactory | None
    ) -> None:
        async with self.racing_stores(store, store_factory, 6) as racers:
            await check_store_state_machine(
                store,
                supports_purge=self.supports_purge,
                settings=self.state_machine_settings(),
                racers=racers,
            )


def _claim(store: TokenStore, request: ClaimRequest) -> Callable[[], Awaitable[ClaimResult]]:
    return lambda: store.claim(request)


def _consume(store: TokenStore, request: ClaimRequest) -> Callable[[], Awaitable[ClaimResult]]:
    consume: Callable[[ClaimRequest], Awaitable[ClaimResult]] = store.consume  # type: ignore[attr-defined]
    return lambda: consume(request)


def _revoke(
    store: TokenStore, key: str, expires_at: datetime, now: datetime
) -> Callable[[], Awaitable[PauseRecord]]:
    return lambda: store.revoke(key, SCOPE_HASH, NAME, expires_at, now)
