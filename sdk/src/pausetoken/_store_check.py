"""A quick conformance smoke for a configured store (``pausetoken store check URL``).

It exercises every protocol operation on rows of its own, keyed by fresh random ids, so it
is safe against a production table: its rows expire ten minutes later (and go with the next
purge), and its purge step removes only rows that already expired, as ``store purge`` does.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import attrs

from pausetoken._claims import new_jti
from pausetoken._store import ClaimOutcome, ClaimRequest, TokenState
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
    def __init__(self, store: TokenStore, now: datetime) -> None:
        self.store = store
        self.now = now
        self.expires = now + _KEEP

    def request(self, jti: str, answer: str = _ANSWER, *, lease: str | None = None) -> ClaimRequest:
        return ClaimRequest(
            jti=jti,
            scope_hash=_SCOPE,
            name="pausetoken-store-check",
            response_hash=answer,
            expires_at=self.expires,
            lease_id=lease or secrets.token_urlsafe(16),
            lease_until=self.now + timedelta(minutes=5),
            now=self.now,
        )

    async def lifecycle(self) -> str:
        jti = new_jti()
        first = self.request(jti)
        outcomes = [
            (await self.store.claim(first)).outcome,
            (await self.store.claim(self.request(jti))).outcome,
        ]
        if outcomes != [ClaimOutcome.CLAIMED, ClaimOutcome.IN_PROGRESS]:
            return _fail(f"claim, claim again: {_names(outcomes)}")
        if await self.store.commit(jti, "not-the-holder") or not await self.store.commit(
            jti, first.lease_id
        ):
            return _fail("commit by the lease holder only")
        replays = [
            (await self.store.claim(self.request(jti))).outcome,
            (await self.store.claim(self.request(jti, _OTHER))).outcome,
        ]
        if replays != [ClaimOutcome.REDEEMED_SAME, ClaimOutcome.REDEEMED_OTHER]:
            return _fail(f"claims after commit: {_names(replays)}")
        return "claimed, in progress, committed, same answer, other answer"

    async def release(self) -> str:
        jti = new_jti()
        first = self.request(jti)
        await self.store.claim(first)
        if not await self.store.release(jti, first.lease_id):
            return _fail("the holder could not release")
        again = (await self.store.claim(self.request(jti))).outcome
        if again is not ClaimOutcome.CLAIMED:
            return _fail(f"claim after release: {again.value}")
        return "released, then claimed again"

    async def revoke(self) -> str:
        jti = new_jti()
        record = await self.store.revoke(jti, _SCOPE, "pausetoken-store-check", self.expires)
        outcome = (await self.store.claim(self.request(jti))).outcome
        status = await self.store.status(jti)
        if record.state is not TokenState.REVOKED or outcome is not ClaimOutcome.REVOKED:
            return _fail(f"revoked then claimed: {outcome.value}")
        if status is None or status.state is not TokenState.REVOKED:
            return _fail("status after revoke")
        return "revoked, claim refused, status revoked"

    async def race(self, concurrency: int) -> str:
        jti = new_jti()
        results = await asyncio.gather(
            *(self.store.claim(self.request(jti)) for _ in range(concurrency))
        )
        winners = sum(result.outcome is ClaimOutcome.CLAIMED for result in results)
        if winners != 1:
            return _fail(f"{winners} of {concurrency} concurrent claims won")
        return f"1 of {concurrency} concurrent claims won"

    async def purge(self) -> str:
        # Only rows whose tokens can no longer verify: never reopens a replay window.
        deleted = await self.store.purge(self.now)
        return f"{deleted} expired row(s) removed"


async def check_store(
    store: TokenStore, *, concurrency: int = 20, now: datetime | None = None
) -> list[StepResult]:
    """Run the smoke against ``store`` and report each step.

    Steps: schema (when the store has ``ensure_schema``), the claim/commit life cycle,
    release, revoke, ``concurrency`` concurrent claims of one token, and a purge of rows
    that already expired. A step that raises is reported with the error's code and the
    remaining steps still run.

    Args:
        store: The store to check.
        concurrency: How many claims race for one token.
        now: The current time (default: the system clock).

    Returns:
        One result per step, in order.
    """
    smoke = _Smoke(store, now or datetime.now(UTC))
    steps: list[tuple[str, Callable[[], Awaitable[str]]]] = [
        ("schema", lambda: _ensure_schema(store)),
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


async def _ensure_schema(store: TokenStore) -> str:
    ensure = getattr(store, "ensure_schema", None)
    if ensure is None:
        return "nothing to create"
    await ensure()
    return "present"
