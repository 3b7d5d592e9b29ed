"""A stateful model of the store state machine, driving any ``TokenStore``.

Hypothesis chooses a sequence of claims (fresh or repeated answers, scopes and names, with
leases of various lengths and expiries that move up and down), batches of concurrent
claims, time steps, renewals, commits and releases (by the holder, by old holders of the
same pause, by strangers), revocations and purges; after every step the store's
``status`` of every pause must equal the model's, field by field.

The machine uses the lease ids the store actually issued, so commits and releases by the
holder happen and every state is reached. It counts the transitions it saw
(`REQUIRED_VISITS`): a run that never committed, released, revoked or took a lease
over has not tested the store, and `check_store_state_machine()` says so.
"""

# ruff: noqa: S101 - the machine is a test; pytest rewrites its asserts

from __future__ import annotations

import asyncio
import collections
import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

import attrs
from hypothesis import currently_in_test_context, event
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from pausetoken._claims import new_jti
from pausetoken._race import race_tasks
from pausetoken._store_api import ClaimOutcome, ClaimRequest, ClaimResult, PauseRecord, PauseState

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence

    from hypothesis import settings as Settings  # noqa: N812

    from pausetoken._store_api import TokenStore

__all__ = ["REQUIRED_VISITS", "TokenStoreMachine", "check_store_state_machine"]

T = TypeVar("T")

_SLOTS = 4  # three pauses, and the third's case-swapped twin
_ANSWERS = (hashlib.sha256(b"yes").hexdigest(), hashlib.sha256(b"no").hexdigest())
_SCOPES = (
    hashlib.sha256(b"state machine scope").hexdigest(),
    hashlib.sha256(b"another scope").hexdigest(),
)
_NAMES = ("approval", "review")
# Few distinct durations, so that leases end exactly "now" as often as before or after,
# and some a microsecond apart, so that a store rounding times is found out.
_STEPS = st.sampled_from(
    [
        timedelta(0),
        timedelta(microseconds=1),
        timedelta(seconds=1),
        timedelta(seconds=2, microseconds=500_001),
        timedelta(seconds=5),
        timedelta(seconds=30),
    ]
)
_LIVE_LEASES = st.sampled_from([timedelta(seconds=1), timedelta(seconds=5, microseconds=3)])
# Expiries move both ways around each pause's own: a store must only ever raise them.
_SHIFTS = st.sampled_from(
    [
        timedelta(seconds=-30),
        timedelta(microseconds=-1),
        timedelta(0),
        timedelta(microseconds=1),
        timedelta(seconds=30),
    ]
)
# What a claim draws besides its pause: the answer, the scope (and name), the lease's length
# and how its expiry moves.
_CLAIM_DRAWS: Final[dict[str, Any]] = {
    "answer": st.integers(0, 1),
    "scope": st.integers(0, 1),
    "lease": _STEPS,
    "shift": _SHIFTS,
}
# What a batch of concurrent claims (or consumes) of one pause draws: each one's answer
# (and scope), and the lease and expiry shift they share.
_BATCH_DRAWS: Final[dict[str, Any]] = {
    "answers": st.lists(st.integers(0, 1), min_size=2, max_size=6),
    "lease": _LIVE_LEASES,
    "shift": _SHIFTS,
}
# Whose lease a renew, commit or release presents.
_WHO = st.sampled_from(("holder", "holder", "old", "stranger"))
#: Seconds a single store call may take before the machine gives up on it.
CALL_TIMEOUT = 60.0
#: Transitions every run must see; otherwise it has not exercised the store.
REQUIRED_VISITS: Final = frozenset(
    {
        "claimed",
        "takeover",
        "batch won",
        "redeemed",
        "released",
        "revoked",
        "revoked a lapsed claim",
    }
)


def _aware(value: datetime) -> datetime:
    # Microseconds never zero, so that a store dropping them is found out.
    return value.replace(microsecond=value.microsecond | 1)


def _claimed(request: ClaimRequest, expires_at: datetime) -> PauseRecord:
    return PauseRecord(
        pause_key=request.pause_key,
        state=PauseState.CLAIMED,
        scope_hash=request.scope_hash,
        name=request.name,
        expires_at=expires_at,
        response_hash=request.response_hash,
        lease_id=request.lease_id,
        lease_until=request.lease_until,
    )


def expected_claim(row: PauseRecord | None, request: ClaimRequest) -> ClaimResult:
    """What the protocol says ``claim(request)`` answers when the row is ``row``."""
    if row is None or _lapsed(row, request.now):
        return ClaimResult(ClaimOutcome.CLAIMED)
    if row.state is PauseState.CLAIMED:
        return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=row.lease_until)
    if row.state is PauseState.REDEEMED:
        same = row.response_hash == request.response_hash
        return ClaimResult(ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER)
    return ClaimResult(ClaimOutcome.REVOKED)


def expected_consume(row: PauseRecord | None, request: ClaimRequest) -> ClaimResult:
    """What the protocol says ``consume(request)`` answers when the row is ``row``."""
    if row is not None and row.state is PauseState.REDEEMED and row.lease_id == request.lease_id:
        return ClaimResult(ClaimOutcome.CLAIMED)
    return expected_claim(row, request)


def _won(row: PauseRecord | None, request: ClaimRequest, *, consume: bool) -> PauseRecord:
    """The row a winning claim (or consume) leaves where ``row`` was."""
    expires = request.expires_at if row is None else max(row.expires_at, request.expires_at)
    won = _claimed(request, expires)
    return attrs.evolve(won, state=PauseState.REDEEMED) if consume else won


def _lapsed(row: PauseRecord, now: datetime) -> bool:
    return (
        row.state is PauseState.CLAIMED and row.lease_until is not None and row.lease_until <= now
    )


def assert_same_record(record: PauseRecord | None, expected: PauseRecord | None, what: str) -> None:
    """Fail unless ``record`` equals ``expected`` in every field (times to the microsecond)."""
    if expected is None:
        assert record is None, f"{what}: the store has {record!r}, the protocol says no row"
        return
    assert record is not None, f"{what}: the store has no row, the protocol says {expected!r}"
    for field in attrs.fields(PauseRecord):
        got, want = getattr(record, field.name), getattr(expected, field.name)
        assert got == want, f"{what}: {field.name} is {got!r}, the protocol says {want!r}"
        if isinstance(got, datetime):
            assert got.utcoffset() == timedelta(0), f"{what}: {field.name} is not aware UTC"


class TokenStoreMachine(RuleBasedStateMachine):
    """Drives `store` and checks it against an in-memory model of the protocol.

    Bind it to a store with `bind()` (or use `check_store_state_machine()`);
    every store call goes through `run`, which executes a coroutine on the loop the
    store belongs to and returns its result. `visits` counts the transitions seen.
    """

    store: ClassVar[TokenStore]
    racers: ClassVar[Sequence[TokenStore]]
    run: ClassVar[Callable[[Coroutine[Any, Any, Any]], Any]]
    supports_purge: ClassVar[bool] = True
    #: Whether the store claims and commits in one call (``consume``, `SupportsConsume`).
    consumes: ClassVar[bool] = False
    visits: ClassVar[collections.Counter[str]]

    @classmethod
    def bind(
        cls,
        store: TokenStore,
        run: Callable[[Coroutine[Any, Any, Any]], Any],
        *,
        supports_purge: bool = True,
        racers: Sequence[TokenStore] = (),
    ) -> type[TokenStoreMachine]:
        """A subclass of this machine that drives ``store`` through ``run``.

        Args:
            store: The store under test; its rows are the machine's to change.
            run: Runs a coroutine on the store's event loop and returns its result.
            supports_purge: Whether to exercise ``purge`` (and reset the store with it
                before each example).
            racers: Stores on the same data as ``store`` (ideally each with its own
                connections, already open) that batches of concurrent claims go through;
                by default the batch goes through ``store``.
        """
        return type(
            f"{type(store).__name__}Machine",
            (cls,),
            {
                "store": store,
                "racers": tuple(racers) or (store,),
                "run": staticmethod(run),
                "supports_purge": supports_purge,
                "consumes": callable(getattr(store, "consume", None)),
                "visits": collections.Counter(),
            },
        )

    def __init__(self) -> None:
        """Start an example with fresh pause keys (so examples never see each other's rows)."""
        super().__init__()
        self.now = _aware(datetime.now(UTC))
        prefix = "aB" + new_jti()
        self.keys = [f"{prefix}{i}" for i in range(_SLOTS - 1)]
        self.keys.append(self.keys[-1].swapcase())
        self.expires: list[datetime] = []
        self.model: dict[str, PauseRecord] = {}
        self.issued: dict[str, list[str]] = {key: [] for key in self.keys}
        self.stranger = f"lease-never-issued-{prefix}"

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        result: T = type(self).run(coro)
        return result

    @staticmethod
    def _state(row: PauseRecord | None) -> str:
        return "absent" if row is None else row.state.value

    def _visit(self, what: str) -> None:
        if currently_in_test_context():  # not during the fixed tour
            event(what)
        type(self).visits[what] += 1

    def _raise_expiry(self, key: str, expires_at: datetime) -> None:
        row = self.model.get(key)
        if row is not None and row.expires_at < expires_at:
            self.model[key] = attrs.evolve(row, expires_at=expires_at)

    def _request(
        self, slot: int, answer: int, scope: int, lease: timedelta, shift: timedelta
    ) -> ClaimRequest:
        key = self.keys[slot]
        lease_id = f"lease-{sum(map(len, self.issued.values()))}-{self.keys[0]}"
        self.issued[key].append(lease_id)
        return ClaimRequest(
            pause_key=key,
            scope_hash=_SCOPES[scope],
            name=_NAMES[scope],
            response_hash=_ANSWERS[answer],
            expires_at=self.expires[slot] + shift,
            lease_id=lease_id,
            lease_until=self.now + lease,
            now=self.now,
        )

    def _pick(self, slot: int) -> str:
        # Claimed pauses first, then redeemed ones: hypothesis favours small numbers, so a
        # renew, commit or release usually meets a row it can change (or must refuse to).
        rank = {PauseState.CLAIMED: 0, PauseState.REDEEMED: 1, PauseState.REVOKED: 2}
        order = sorted(self.keys, key=lambda k: rank[self.model[k].state] if k in self.model else 3)
        return order[slot]

    def _lease(self, key: str, who: str, index: int) -> str:
        row = self.model.get(key)
        holder = row.lease_id if row is not None else None
        if who == "holder" and holder is not None:
            return holder
        # Never the current holder's lease: which racer of a batch won is up to the store,
        # and what a step does must not depend on it (hypothesis needs the same draws to
        # lead to the same states).
        issued = [lease for lease in self.issued[key] if lease != holder]
        if who in {"holder", "old"} and issued:
            return issued[-1] if who == "holder" else issued[index % len(issued)]
        others = [lease for k, leases in self.issued.items() if k != key for lease in leases]
        if others and index % 2 == 0:
            return others[index % len(others)]
        return self.stranger

    @initialize(seconds=st.lists(st.integers(60, 120), min_size=_SLOTS, max_size=_SLOTS))
    def start(self, seconds: list[int]) -> None:
        """Give each pause its expiry; empty the store when it can purge."""
        self.expires = [self.now + timedelta(seconds=s, microseconds=7) for s in seconds]
        if self.supports_purge:
            self._call(self.store.purge(self.now + timedelta(days=3650)))

    @rule(slot=st.integers(0, _SLOTS - 1), **_CLAIM_DRAWS)
    def claim(self, slot: int, answer: int, scope: int, lease: timedelta, shift: timedelta) -> None:
        """Claim a pause with a new lease; the outcome must be the model's."""
        self._claim(slot, answer, scope, lease, shift)

    @precondition(lambda self: self._held())
    @rule(pick=st.integers(0, _SLOTS - 1), **_CLAIM_DRAWS)
    def take_over(
        self, pick: int, answer: int, scope: int, lease: timedelta, shift: timedelta
    ) -> None:
        """Let a claim's lease end (exactly now), then claim it: the new lease takes over."""
        self._claim(self._end_lease(pick), answer, scope, lease, shift)

    @precondition(lambda self: self._held())
    @rule(pick=st.integers(0, _SLOTS - 1), shift=_SHIFTS)
    def commit_as_holder(self, pick: int, shift: timedelta) -> None:
        """The holder commits (the path a successful redemption takes)."""
        self._commit(self._held_key(pick), "holder", 0, shift)

    @precondition(lambda self: self._held())
    @rule(pick=st.integers(0, _SLOTS - 1))
    def release_as_holder(self, pick: int) -> None:
        """The holder releases (the path a failed redemption takes)."""
        self._release(self._held_key(pick), "holder", 0)

    def _held(self) -> list[str]:
        return [
            k for k in self.keys if k in self.model and self.model[k].state is PauseState.CLAIMED
        ]

    def _held_key(self, pick: int) -> str:
        held = self._held()
        return held[pick % len(held)]

    def _end_lease(self, pick: int) -> int:
        """Move the clock to where a claimed pause's lease ends (exactly); the pause's slot."""
        key = self._held_key(pick)
        until = self.model[key].lease_until
        assert until is not None
        self.now = max(self.now, until)
        return self.keys.index(key)

    def _claim(
        self, slot: int, answer: int, scope: int, lease: timedelta, shift: timedelta
    ) -> None:
        self._take(self._request(slot, answer, scope, lease, shift), consume=False)

    @precondition(lambda self: self.consumes)
    @rule(slot=st.integers(0, _SLOTS - 1), **_CLAIM_DRAWS)
    def consume(
        self, slot: int, answer: int, scope: int, lease: timedelta, shift: timedelta
    ) -> None:
        """Claim and commit a pause in one call (stores with ``consume``)."""
        self._consume(slot, answer, scope, lease, shift)

    @precondition(lambda self: self.consumes and self._held())
    @rule(pick=st.integers(0, _SLOTS - 1), **_CLAIM_DRAWS)
    def consume_after_lease_ends(
        self, pick: int, answer: int, scope: int, lease: timedelta, shift: timedelta
    ) -> None:
        """Let a claim's lease end (exactly now), then consume it: a takeover that commits."""
        self._consume(self._end_lease(pick), answer, scope, lease, shift)

    def _consume(
        self, slot: int, answer: int, scope: int, lease: timedelta, shift: timedelta
    ) -> None:
        request = self._request(slot, answer, scope, lease, shift)
        self._take(request, consume=True)
        # Whatever it answered, a retry by the same lease agrees with the row it left.
        retried = self._call(self.store.consume(request))  # type: ignore[attr-defined]
        assert retried == expected_consume(self.model.get(request.pause_key), request), retried

    def _take(self, request: ClaimRequest, *, consume: bool) -> None:
        """Claim (or consume) as ``request``; the outcome and the row must be the model's."""
        key = request.pause_key
        store: Any = self.store
        result = self._call(store.consume(request) if consume else store.claim(request))
        row = self.model.get(key)
        expected = (expected_consume if consume else expected_claim)(row, request)
        assert result == expected, (result, expected)
        if expected.outcome is not ClaimOutcome.CLAIMED:
            self._raise_expiry(key, request.expires_at)
            self._visit(f"{'consume' if consume else 'claim'} {expected.outcome.value}")
            return
        self.model[key] = _won(row, request, consume=consume)
        if consume:
            self._visit("consumed" if row is None else "consumed a lapsed claim")
        else:
            self._visit("claimed" if row is None else "takeover")

    @rule(slot=st.integers(0, _SLOTS - 1), **_BATCH_DRAWS)
    def claim_batch(
        self, slot: int, answers: list[int], lease: timedelta, shift: timedelta
    ) -> None:
        """Claim one pause many times at once: exactly one may win, the rest see its lease."""
        self._batch(slot, answers, lease, shift, consume=False)

    @precondition(lambda self: self.consumes)
    @rule(slot=st.integers(0, _SLOTS - 1), **_BATCH_DRAWS)
    def consume_batch(
        self, slot: int, answers: list[int], lease: timedelta, shift: timedelta
    ) -> None:
        """Consume one pause many times at once: exactly one may win, the rest see its answer."""
        self._batch(slot, answers, lease, shift, consume=True)

    def _batch(
        self, slot: int, answers: list[int], lease: timedelta, shift: timedelta, *, consume: bool
    ) -> None:
        requests = [self._request(slot, a, a, lease, shift) for a in answers]
        racers: Sequence[Any] = type(self).racers

        def take(i: int) -> Callable[[], Coroutine[Any, Any, ClaimResult]]:
            racer = racers[i % len(racers)]
            call = racer.consume if consume else racer.claim
            return lambda: call(requests[i])

        results = self._call(race_tasks([take(i) for i in range(len(requests))]))
        key = self.keys[slot]
        row = self.model.get(key)
        outcomes = [r.outcome for r in results]
        prefix = "consume batch" if consume else "batch"
        if expected_claim(row, requests[0]).outcome is not ClaimOutcome.CLAIMED:
            expect = expected_consume if consume else expected_claim
            expected = [expect(row, r) for r in requests]
            assert results == expected, (results, expected)
            self._raise_expiry(key, requests[0].expires_at)
            self._visit(f"{prefix} {outcomes[0].value}")
            return
        assert outcomes.count(ClaimOutcome.CLAIMED) == 1, outcomes
        won = _won(row, requests[outcomes.index(ClaimOutcome.CLAIMED)], consume=consume)
        # The others met the winner's row: its live lease, or its redemption.
        for result, request in zip(results, requests, strict=True):
            if result.outcome is not ClaimOutcome.CLAIMED:
                assert result == expected_claim(won, request), (result, request)
        self.model[key] = won
        self._visit(f"{prefix} won")

    @rule(step=_STEPS)
    def advance(self, step: timedelta) -> None:
        """Let time pass (only the injected clock moves)."""
        self.now += step

    @rule(slot=st.integers(0, _SLOTS - 1), who=_WHO, index=st.integers(0, 8), lease=_STEPS)
    def renew(self, slot: int, who: str, index: int, lease: timedelta) -> None:
        """Renew with some lease: only the holder's succeeds, and never lowers the lease."""
        key = self._pick(slot)
        lease_id, row = self._lease(key, who, index), self.model.get(key)
        until = self.now + lease
        holds = row is not None and row.state is PauseState.CLAIMED and row.lease_id == lease_id
        assert self._call(self.store.renew(key, lease_id, until)) is holds, (who, row)
        if not holds:
            self._visit(f"renew refused ({self._state(row)})")
        else:
            assert row is not None
            assert row.lease_until is not None
            self.model[key] = attrs.evolve(row, lease_until=max(row.lease_until, until))
            self._visit("renewed")

    @rule(slot=st.integers(0, _SLOTS - 1), who=_WHO, index=st.integers(0, 8), shift=_SHIFTS)
    def commit(self, slot: int, who: str, index: int, shift: timedelta) -> None:
        """Commit with some lease: the holder's redeems, the committer's is confirmed again."""
        self._commit(self._pick(slot), who, index, shift)

    def _commit(self, key: str, who: str, index: int, shift: timedelta) -> None:
        lease_id, row = self._lease(key, who, index), self.model.get(key)
        expires = self.expires[self.keys.index(key)] + shift
        ours = row is not None and row.lease_id == lease_id
        expected = ours and row is not None and row.state is not PauseState.REVOKED
        assert self._call(self.store.commit(key, lease_id, expires)) is expected, (who, row)
        if not expected:
            self._visit(f"commit refused ({self._state(row)})")
        else:
            assert row is not None
            self._visit("redeemed" if row.state is PauseState.CLAIMED else "commit confirmed")
            self.model[key] = attrs.evolve(
                row, state=PauseState.REDEEMED, expires_at=max(row.expires_at, expires)
            )

    @rule(slot=st.integers(0, _SLOTS - 1), who=_WHO, index=st.integers(0, 8))
    def release(self, slot: int, who: str, index: int) -> None:
        """Release with some lease: only the holder's succeeds and forgets the claim."""
        self._release(self._pick(slot), who, index)

    def _release(self, key: str, who: str, index: int) -> None:
        lease_id, row = self._lease(key, who, index), self.model.get(key)
        holds = row is not None and row.state is PauseState.CLAIMED and row.lease_id == lease_id
        assert self._call(self.store.release(key, lease_id)) is holds, (who, row)
        if not holds:
            self._visit(f"release refused ({self._state(row)})")
        else:
            del self.model[key]
            self._visit("released")

    @rule(slot=st.integers(0, _SLOTS - 1), scope=st.integers(0, 1), shift=_SHIFTS)
    def revoke(self, slot: int, scope: int, shift: timedelta) -> None:
        """Revoke: absent pauses and lapsed claims become revoked, the rest stay as they are."""
        self._revoke(self._pick(slot), scope, shift)

    @precondition(lambda self: self._held())
    @rule(pick=st.integers(0, _SLOTS - 1), scope=st.integers(0, 1), shift=_SHIFTS)
    def revoke_after_lease_ends(self, pick: int, scope: int, shift: timedelta) -> None:
        """Let a claim's lease end (exactly now), then revoke it: it becomes revoked."""
        self._revoke(self.keys[self._end_lease(pick)], scope, shift)

    def _revoke(self, key: str, scope: int, shift: timedelta) -> None:
        expires = self.expires[self.keys.index(key)] + shift
        record = self._call(
            self.store.revoke(key, _SCOPES[scope], _NAMES[scope], expires, self.now)
        )
        row = self.model.get(key)
        if row is None:
            self.model[key] = PauseRecord(
                pause_key=key,
                state=PauseState.REVOKED,
                scope_hash=_SCOPES[scope],
                name=_NAMES[scope],
                expires_at=expires,
            )
            self._visit("revoked")
        elif _lapsed(row, self.now):
            self.model[key] = attrs.evolve(
                row,
                state=PauseState.REVOKED,
                expires_at=max(row.expires_at, expires),
                response_hash=None,
                lease_id=None,
                lease_until=None,
            )
            self._visit("revoked")
            self._visit("revoked a lapsed claim")
        else:
            self._raise_expiry(key, expires)
            self._visit(f"revoke left {row.state.value}")
        assert_same_record(record, self.model[key], "the record revoke returned")

    @precondition(lambda self: self.supports_purge)
    @rule(slot=st.integers(0, _SLOTS - 1), offset=_SHIFTS)
    def purge(self, slot: int, offset: timedelta) -> None:
        """Purge around a pause's expiry; the count and the survivors must match."""
        before = self.expires[slot] + offset
        gone = [key for key, row in self.model.items() if row.expires_at < before]
        assert self._call(self.store.purge(before)) == len(gone), (before, gone)
        for key in gone:
            del self.model[key]
        if gone:
            self._visit("purged")

    @invariant()
    def status_matches_the_model(self) -> None:
        """Every pause's stored record says what the model says, field by field."""
        for slot, key in enumerate(self.keys):
            record = self._call(self.store.status(key))
            assert_same_record(record, self.model.get(key), f"status of pause {slot}")


async def check_store_state_machine(
    store: TokenStore,
    *,
    supports_purge: bool = True,
    settings: Settings | None = None,
    racers: Sequence[TokenStore] = (),
    required_visits: frozenset[str] = REQUIRED_VISITS,
) -> collections.Counter[str]:
    """Run `TokenStoreMachine` against ``store`` from inside its event loop.

    Hypothesis runs in a worker thread; each store call is sent back to this loop (the one
    the store was created on) and awaited there, so connections bound to the loop keep
    working and no second loop is ever started.

    Args:
        store: A store created on the running loop; the machine owns its rows meanwhile.
        supports_purge: Whether the store implements ``purge`` (see
            `StoreConformance.supports_purge`).
        settings: Hypothesis settings (default: the active profile, no deadline).
        racers: Stores on the same data that batches of concurrent claims go through
            (default: ``store`` itself).
        required_visits: Transitions the run must have seen (default
            `REQUIRED_VISITS`); pass an empty set to skip the coverage check.

    Returns:
        How often each transition was seen.

    Raises:
        AssertionError: (from hypothesis) with the shortest failing sequence of steps; or
            when the run never reached one of ``required_visits``.
    """
    loop = asyncio.get_running_loop()

    def run(coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=CALL_TIMEOUT)

    machine = TokenStoreMachine.bind(store, run, supports_purge=supports_purge, racers=racers)
    await asyncio.to_thread(_tour, machine)
    await asyncio.to_thread(run_state_machine_as_test, machine, settings=settings)
    missing = sorted(required_visits - {what for what, n in machine.visits.items() if n})
    assert not missing, (
        f"the state machine never reached {', '.join(missing)} in {sum(machine.visits.values())} "
        "steps: raise stateful_step_count or the hypothesis profile's max_examples"
    )
    return machine.visits


def _tour(machine: type[TokenStoreMachine]) -> None:
    """One fixed walk through every transition, checked against the model like any other.

    Hypothesis then explores at random; the tour makes sure that a short run (a few steps
    per example against a slow database) still commits, releases, revokes and takes over.
    """
    walk = machine()
    try:
        walk.start([90, 95, 100, 105])
        # The first pause: claimed, refused to a stranger, committed, confirmed; then
        # neither released nor revoked. (A renew, commit, release or revoke picks the
        # claimed pauses first, then the redeemed ones.)
        walk.claim(0, 0, 0, timedelta(seconds=5), timedelta(0))
        walk.commit(0, "stranger", 1, timedelta(0))
        walk.commit_as_holder(0, timedelta(seconds=30))
        walk.commit(0, "holder", 0, timedelta(0))
        walk.release(0, "holder", 0)
        walk.revoke(0, 1, timedelta(0))
        walk.status_matches_the_model()
        # The second: claimed, renewed (never lowered), kept by a revoke while live, taken
        # over with another answer, scope and name, released.
        walk.claim(1, 1, 1, timedelta(seconds=5), timedelta(0))
        walk.claim(1, 0, 0, timedelta(seconds=5), timedelta(seconds=-30))  # expiry stays
        walk.renew(0, "holder", 0, timedelta(seconds=1))
        walk.status_matches_the_model()
        walk.renew(0, "holder", 0, timedelta(seconds=30, microseconds=1))
        walk.renew(0, "stranger", 1, timedelta(seconds=60))
        walk.revoke(0, 0, timedelta(0))
        walk.take_over(0, 0, 0, timedelta(seconds=5), timedelta(0))
        walk.status_matches_the_model()
        walk.release_as_holder(0)
        # Then a batch of concurrent claims, a revoke when the winner's lease ends, and a
        # revoke of a pause nobody claimed.
        walk.claim_batch(1, [0, 1, 0], timedelta(seconds=1), timedelta(microseconds=1))
        walk.revoke_after_lease_ends(0, 1, timedelta(microseconds=-1))
        walk.revoke(3, 0, timedelta(0))
        walk.status_matches_the_model()
    finally:
        walk.teardown()
    if machine.consumes:
        _consume_tour(machine)


def _consume_tour(machine: type[TokenStoreMachine]) -> None:
    """The fixed walk through one-call consumes, on pauses of its own."""
    walk = machine()
    try:
        walk.start([90, 95, 100, 105])
        # A batch of consumes of a fresh pause: one wins and redeems it.
        walk.consume_batch(0, [0, 1, 0], timedelta(seconds=1), timedelta(0))
        # A live claim refuses a consume; once its lease ends a consume takes it over.
        walk.claim(1, 0, 0, timedelta(seconds=5), timedelta(0))
        walk.consume(1, 1, 1, timedelta(seconds=5), timedelta(0))
        walk.consume_after_lease_ends(0, 1, 1, timedelta(seconds=5), timedelta(microseconds=1))
        # A fresh pause consumed alone, then its redemption met by a claim and a consume.
        walk.consume(2, 0, 0, timedelta(seconds=5), timedelta(seconds=-30))
        walk.claim(2, 1, 1, timedelta(seconds=5), timedelta(0))
        walk.consume(2, 0, 0, timedelta(seconds=5), timedelta(seconds=30))
        # A revoked pause refuses it.
        walk.revoke(3, 0, timedelta(0))
        walk.consume(3, 0, 0, timedelta(seconds=5), timedelta(0))
        walk.status_matches_the_model()
    finally:
        walk.teardown()
