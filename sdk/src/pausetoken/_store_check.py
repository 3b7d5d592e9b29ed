"""A quick conformance smoke for a configured store (``pausetoken store check URL``).

It calls the store's start-up ``check`` first, then exercises every protocol operation on
rows of its own, keyed by fresh random ids, so it is safe against a production table: its
rows expire ten minutes later (and go with the next purge), and its purge step removes only
rows that already expired, as ``store purge`` does.

Its concurrent claims go through fresh store instances (fresh connections) when it is given
a way to open them, each connected before all are released together: a claim that reads
and then writes is found out whether or not a connection pool was warm.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import attrs

from pausetoken._claims import new_jti
from pausetoken._race import race_tasks, warm_up
from pausetoken._store import ClaimOutcome, ClaimRequest, ClaimResult, TokenState
from pausetoken.exceptions import PauseTokenError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pausetoken._store import TokenStore

__all__ = ["StepResult", "check_store"]

_SCOPE = "0" * 64
_ANSWER = "a" * 64
_OTHER = "b" * 64
#: When the check's rows expire (engines with TTLs drop them by themselves).
_KEEP = timedelta(minutes=10)


@attrs.frozen
class StepResult:
    """One step of :func:`check_store`.

    Attributes:
        name: What was checked.
        passed: Whether the store behaved as the protocol says.
        detail: What was seen (an outcome or an error code), never data from other rows.
    """

    name: str
    passed: bool
    detail: str


class _Smoke:
    def __init__(
        self, store: TokenStore, now: datetime, opener: Callable[[], TokenStore] | None
    ) -> None:
        self.store = store
        self.opener = opener
        self.now = now
        self.expires = now + _KEEP

    def request(self, key: str, answer: str = _ANSWER, *, lease: str | None = None) -> ClaimRequest:
        return ClaimRequest(
            pause_key=key,
            scope_hash=_SCOPE,
            name="pausetoken-store-check",
            response_hash=answer,
            expires_at=self.expires,
            lease_id=lease or secrets.token_urlsafe(16),
            lease_until=self.now + timedelta(minutes=5),
            now=self.now,
        )

    async def lifecycle(self) -> str:
        key = new_jti()
        first = self.request(key)
        outcomes = [
            (await self.store.claim(first)).outcome,
            (await self.store.claim(self.request(key))).outcome,
        ]
        if outcomes != [ClaimOutcome.CLAIMED, ClaimOutcome.IN_PROGRESS]:
            return _fail(f"claim, claim again: {_names(outcomes)}")
        refused = await self.holder_only(key, first)
        if refused:
            return _fail(refused)
        replays = [
            (await self.store.claim(self.request(key))).outcome,
            (await self.store.claim(self.request(key, _OTHER))).outcome,
        ]
        if replays != [ClaimOutcome.REDEEMED_SAME, ClaimOutcome.REDEEMED_OTHER]:
            return _fail(f"claims after commit: {_names(replays)}")
        return "claimed, in progress, renewed, committed (twice), same answer, other answer"

    async def holder_only(self, key: str, first: ClaimRequest) -> str | None:
        """Which of renew and commit, by the holder and by another lease, went wrong."""
        store, lease, stranger = self.store, first.lease_id, "not-the-holder"
        later = first.lease_until + timedelta(minutes=1)
        checks: list[tuple[str, Callable[[], Awaitable[bool]], bool]] = [
            ("renew by another lease", lambda: store.renew(key, stranger, later), False),
            ("renew by the lease holder", lambda: store.renew(key, lease, later), True),
            ("commit by another lease", lambda: store.commit(key, stranger, self.expires), False),
            ("commit by the lease holder", lambda: store.commit(key, lease, self.expires), True),
            ("repeated commit by the holder", lambda: store.commit(key, lease, self.expires), True),
        ]
        for what, call, expected in checks:
            if await call() is not expected:
                return what
        return None

    async def release(self) -> str:
        key = new_jti()
        first = self.request(key)
        await self.store.claim(first)
        if not await self.store.release(key, first.lease_id):
            return _fail("the holder could not release")
        again = (await self.store.claim(self.request(key))).outcome
        if again is not ClaimOutcome.CLAIMED:
            return _fail(f"claim after release: {again.value}")
        return "released, then claimed again"

    async def revoke(self) -> str:
        key, live = new_jti(), new_jti()
        name = "pausetoken-store-check"
        record = await self.store.revoke(key, _SCOPE, name, self.expires, self.now)
        outcome = (await self.store.claim(self.request(key))).outcome
        status = await self.store.status(key)
        if record.state is not TokenState.REVOKED or outcome is not ClaimOutcome.REVOKED:
            return _fail(f"revoked then claimed: {outcome.value}")
        if status is None or status.state is not TokenState.REVOKED:
            return _fail("status after revoke")
        await self.store.claim(self.request(live))
        kept = await self.store.revoke(live, _SCOPE, name, self.expires, self.now)
        if kept.state is not TokenState.CLAIMED:
            return _fail(f"revoke of a live claim: {kept.state.value}")
        return "revoked, claim refused, status revoked, live claim kept"

    async def race(self, concurrency: int) -> str:
        key = new_jti()
        requests = [self.request(key) for _ in range(concurrency)]
        racers: list[TokenStore] = []
        try:
            if self.opener is None:
                await warm_up(self.store, concurrency)
                racers = [self.store] * concurrency
            else:
                for _ in range(concurrency):
                    racers.append(self.opener())
                for racer in racers:
                    await racer.check()
                await asyncio.gather(*(warm_up(racer, 1) for racer in racers))
            results = await race_tasks(
                [_claim(racer, request) for racer, request in zip(racers, requests, strict=True)]
            )
        finally:
            if self.opener is not None:
                for racer in racers:
                    await racer.aclose()
        winners = sum(result.outcome is ClaimOutcome.CLAIMED for result in results)
        if winners != 1:
            return _fail(f"{winners} of {concurrency} concurrent claims won")
        return f"1 of {concurrency} concurrent claims won"

    async def purge(self) -> str:
        # Only rows whose tokens can no longer verify: never reopens a replay window.
        deleted = await self.store.purge(self.now)
        return f"{deleted} expired row(s) removed"


async def check_store(
    store: TokenStore,
    *,
    concurrency: int = 20,
    now: datetime | None = None,
    opener: Callable[[], TokenStore] | None = None,
) -> list[StepResult]:
    """Run the smoke against ``store`` and report each step.

    Steps: the store's start-up ``check``, the claim/renew/commit life cycle, release,
    revoke, ``concurrency`` concurrent claims of one pause, and a purge of rows that already
    expired. A step that raises is reported with the error's code and the remaining steps
    still run.

    Args:
        store: The store to check.
        concurrency: How many claims race for one pause.
        now: The current time (default: the system clock).
        opener: Opens another store on the same data (``lambda: open_store(url)``); the
            concurrent claims then go one per fresh store, each connected before the race.
            Without it they go through ``store``, after opening ``concurrency``
            connections on it.

    Returns:
        One result per step, in order.
    """
    smoke = _Smoke(store, now or datetime.now(UTC), opener)
    steps: list[tuple[str, Callable[[], Awaitable[str]]]] = [
        ("check", lambda: _check(store)),
        ("claim, commit and replays", smoke.lifecycle),
        ("release", smoke.release),
        ("revoke", smoke.revoke),
        ("concurrent claims", lambda: smoke.race(concurrency)),
        ("purge", smoke.purge),
    ]
    results = []
    for name, step in steps:
        try:
            detail = await step()
        except PauseTokenError as exc:
            results.append(StepResult(name, passed=False, detail=exc.code))
            continue
        passed = not detail.startswith(_FAILED)
        results.append(StepResult(name, passed=passed, detail=detail.removeprefix(_FAILED)))
    return results


_FAILED = "FAILED: "


def _fail(detail: str) -> str:
    return _FAILED + detail


def _names(outcomes: list[ClaimOutcome]) -> str:
    return ", ".join(outcome.value for outcome in outcomes)


async def _check(store: TokenStore) -> str:
    await store.check()
    return "ready"


def _claim(store: TokenStore, request: ClaimRequest) -> Callable[[], Awaitable[ClaimResult]]:
    return lambda: store.claim(request)
