"""A stateful model of the store state machine, driving any ``TokenStore``.

Hypothesis chooses a sequence of claims (fresh or repeated answers, with leases of various
lengths), time steps, commits and releases (by the holder, by old holders, by strangers),
revocations and purges; after every step the store's ``status`` of every token must equal
the model's.
"""

# ruff: noqa: S101 - the machine is a test; pytest rewrites its asserts

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs
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
from pausetoken._store import ClaimOutcome, ClaimRequest, TokenState

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from hypothesis import settings as Settings  # noqa: N812

    from pausetoken._store import TokenRecord, TokenStore

__all__ = ["TokenStoreMachine", "check_store_state_machine"]

T = TypeVar("T")

_SLOTS = 4  # three tokens, and the third's case-swapped twin
_ANSWERS = (hashlib.sha256(b"yes").hexdigest(), hashlib.sha256(b"no").hexdigest())
_SCOPE = hashlib.sha256(b"state machine scope").hexdigest()
_NAME = "approval"
# Few distinct durations, so that leases end exactly "now" as often as before or after.
_SECONDS = st.sampled_from([0, 1, 2, 5, 30])
#: Seconds a single store call may take before the machine gives up on it.
CALL_TIMEOUT = 60.0


@attrs.frozen
class _Row:
    state: TokenState
    expires_at: datetime
    response_hash: str | None = None
    lease_id: str | None = None
    lease_until: datetime | None = None


class TokenStoreMachine(RuleBasedStateMachine):
    """Drives :attr:`store` and checks it against an in-memory model of the protocol.

    Bind it to a store with :meth:`bind` (or use :func:`check_store_state_machine`);
    every store call goes through :attr:`run`, which executes a coroutine on the loop the
    store belongs to and returns its result.
    """

    store: ClassVar[TokenStore]
    run: ClassVar[Callable[[Coroutine[Any, Any, Any]], Any]]
    supports_purge: ClassVar[bool] = True

    @classmethod
    def bind(
        cls,
        store: TokenStore,
        run: Callable[[Coroutine[Any, Any, Any]], Any],
        *,
        supports_purge: bool = True,
    ) -> type[TokenStoreMachine]:
        """A subclass of this machine that drives ``store`` through ``run``.

        Args:
            store: The store under test; its rows are the machine's to change.
            run: Runs a coroutine on the store's event loop and returns its result.
            supports_purge: Whether to exercise ``purge`` (and reset the store with it
                before each example).
        """
        return type(
            f"{type(store).__name__}Machine",
            (cls,),
            {"store": store, "run": staticmethod(run), "supports_purge": supports_purge},
        )

    def __init__(self) -> None:
        """Start an example with fresh token ids (so examples never see each other's rows)."""
        super().__init__()
        self.now = datetime.now(UTC).replace(microsecond=0)
        prefix = "aB" + new_jti()
        self.jtis = [f"{prefix}{i}" for i in range(_SLOTS - 1)]
        self.jtis.append(self.jtis[-1].swapcase())
        self.expires: list[datetime] = []
        self.model: dict[str, _Row] = {}
        self.leases: list[str] = []

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        result: T = type(self).run(coro)
        return result

    @initialize(ttls=st.lists(st.integers(60, 120), min_size=_SLOTS, max_size=_SLOTS))
    def start(self, ttls: list[int]) -> None:
        """Give each token its expiry; empty the store when it can purge."""
        self.expires = [self.now + timedelta(seconds=t) for t in ttls]
        if self.supports_purge:
            self._call(self.store.purge(self.now + timedelta(days=3650)))

    @rule(
        slot=st.integers(0, _SLOTS - 1),
        answer=st.sampled_from(_ANSWERS),
        lease_seconds=_SECONDS,
    )
    def claim(self, slot: int, answer: str, lease_seconds: int) -> None:
        """Claim a token with a new lease; the outcome must be the model's."""
        jti = self.jtis[slot]
        lease_id = f"lease-{len(self.leases)}-{self.jtis[0]}"
        self.leases.append(lease_id)
        request = ClaimRequest(
            jti=jti,
            scope_hash=_SCOPE,
            name=_NAME,
            response_hash=answer,
            expires_at=self.expires[slot],
            lease_id=lease_id,
            lease_until=self.now + timedelta(seconds=lease_seconds),
            now=self.now,
        )
        result = self._call(self.store.claim(request))
        row = self.model.get(jti)
        if row is None or (
            row.state is TokenState.CLAIMED
            and row.lease_until is not None
            and row.lease_until <= self.now
        ):
            assert result.outcome is ClaimOutcome.CLAIMED, result
            self.model[jti] = _Row(
                TokenState.CLAIMED, self.expires[slot], answer, lease_id, request.lease_until
            )
        elif row.state is TokenState.CLAIMED:
            assert result.outcome is ClaimOutcome.IN_PROGRESS, result
            assert result.lease_until == row.lease_until, result
        elif row.state is TokenState.REDEEMED:
            same = row.response_hash == answer
            expected = ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER
            assert result.outcome is expected, result
        else:
            assert result.outcome is ClaimOutcome.REVOKED, result

    @rule(seconds=_SECONDS)
    def advance(self, seconds: int) -> None:
        """Let time pass (only the injected clock moves)."""
        self.now += timedelta(seconds=seconds)

    def _lease(self, pick: int) -> str:
        # Index len(leases) stands for a lease nobody was ever given.
        return self.leases[pick] if pick < len(self.leases) else "lease-never-issued"

    def _holds(self, jti: str, lease_id: str) -> bool:
        row = self.model.get(jti)
        return row is not None and row.state is TokenState.CLAIMED and row.lease_id == lease_id

    @rule(slot=st.integers(0, _SLOTS - 1), pick=st.integers(0, 40))
    def commit(self, slot: int, pick: int) -> None:
        """Commit with some lease; only the holder's succeeds."""
        jti, lease_id = self.jtis[slot], self._lease(pick)
        expected = self._holds(jti, lease_id)
        assert self._call(self.store.commit(jti, lease_id)) is expected
        if expected:
            self.model[jti] = attrs.evolve(self.model[jti], state=TokenState.REDEEMED)

    @rule(slot=st.integers(0, _SLOTS - 1), pick=st.integers(0, 40))
    def release(self, slot: int, pick: int) -> None:
        """Release with some lease; only the holder's succeeds and forgets the claim."""
        jti, lease_id = self.jtis[slot], self._lease(pick)
        expected = self._holds(jti, lease_id)
        assert self._call(self.store.release(jti, lease_id)) is expected
        if expected:
            del self.model[jti]

    @rule(slot=st.integers(0, _SLOTS - 1))
    def revoke(self, slot: int) -> None:
        """Revoke: absent or claimed tokens become revoked, redeemed ones stay redeemed."""
        jti = self.jtis[slot]
        record = self._call(self.store.revoke(jti, _SCOPE, _NAME, self.expires[slot]))
        row = self.model.get(jti)
        if row is None or row.state is TokenState.CLAIMED:
            self.model[jti] = _Row(TokenState.REVOKED, self.expires[slot])
        assert record.jti == jti
        assert record.state is self.model[jti].state

    @precondition(lambda self: self.supports_purge)
    @rule(slot=st.integers(0, _SLOTS - 1), offset=st.integers(-2, 2))
    def purge(self, slot: int, offset: int) -> None:
        """Purge around a token's expiry; the count and the survivors must match."""
        before = self.expires[slot] + timedelta(seconds=offset)
        gone = [jti for jti, row in self.model.items() if row.expires_at < before]
        assert self._call(self.store.purge(before)) == len(gone)
        for jti in gone:
            del self.model[jti]

    @invariant()
    def status_matches_the_model(self) -> None:
        """Every token's stored record says what the model says."""
        for slot, jti in enumerate(self.jtis):
            record: TokenRecord | None = self._call(self.store.status(jti))
            row = self.model.get(jti)
            if row is None:
                assert record is None, (slot, record)
                continue
            assert record is not None, (slot, row)
            assert (record.jti, record.state) == (jti, row.state), (slot, record, row)
            assert record.expires_at == row.expires_at, (slot, record, row)
            assert (record.scope_hash, record.name) == (_SCOPE, _NAME), (slot, record)
            if row.state is TokenState.CLAIMED:
                held = (record.lease_id, record.lease_until, record.response_hash)
                assert held == (row.lease_id, row.lease_until, row.response_hash), slot
            elif row.state is TokenState.REDEEMED:
                assert record.response_hash == row.response_hash, (slot, record, row)


async def check_store_state_machine(
    store: TokenStore, *, supports_purge: bool = True, settings: Settings | None = None
) -> None:
    """Run :class:`TokenStoreMachine` against ``store`` from inside its event loop.

    Hypothesis runs in a worker thread; each store call is sent back to this loop (the one
    the store was created on) and awaited there, so connections bound to the loop keep
    working and no second loop is ever started.

    Args:
        store: A store created on the running loop; the machine owns its rows meanwhile.
        supports_purge: Whether the store implements ``purge`` (see
            :attr:`StoreConformance.supports_purge`).
        settings: Hypothesis settings (default: the active profile, no deadline).

    Raises:
        AssertionError: (from hypothesis) with the shortest failing sequence of steps.
    """
    loop = asyncio.get_running_loop()

    def run(coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=CALL_TIMEOUT)

    machine = TokenStoreMachine.bind(store, run, supports_purge=supports_purge)
    await asyncio.to_thread(run_state_machine_as_test, machine, settings=settings)
