"""Lease: keep() renews it; run() runs a body until it ends, cancelled if the claim is lost.

The lease here is 30 ms long (the service refuses anything under a second), so a renewal
comes every 10 ms and each test takes a few of them.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, cast

import pytest

from pausetoken import Lease
from pausetoken.exceptions import LeaseLost

if TYPE_CHECKING:
    from pausetoken.plugins import TokenStore

LENGTH = timedelta(milliseconds=30)


class Renewals:
    """The store side of a lease: renewals hold until `refuse` is set.

    The first `hang` renewals never answer (a store cut off mid-call), whatever its timeout.
    """

    def __init__(self, *, hang: int = 0) -> None:
        self.refuse = False
        self.calls = 0
        self.hang = hang
        self.abandoned = 0

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        self.calls += 1
        if self.calls <= self.hang:
            try:
                await asyncio.Event().wait()
            finally:
                self.abandoned += 1
        return not self.refuse


def taken(
    renewals: Renewals, *, length: timedelta = LENGTH, left: timedelta | None = None
) -> Lease:
    """A lease of ``length`` just taken (``left`` of it remaining, all by default), not renewed."""
    return Lease(
        store=cast("TokenStore", renewals),  # renew() is all a lease calls
        pause_key="pause",
        lease_id="lease",
        until=datetime.now(UTC) + (length if left is None else left),
        length=length,
        clock=time.time,
    )


def held(renewals: Renewals) -> Lease:
    lease = taken(renewals)
    lease.keep()
    return lease


async def a_long_body_is_stopped(lease: Lease, *, within: float) -> None:
    """A body far longer than ``within`` seconds, run on ``lease``, ends in time with LeaseLost."""
    finished = False

    async def body() -> None:
        nonlocal finished
        await asyncio.sleep(5)
        finished = True

    with pytest.raises(LeaseLost):
        async with asyncio.timeout(within):  # a stuck lease fails the test with TimeoutError
            await lease.run(body())
    assert not finished


async def a_few_loop_steps() -> None:
    """Far less than a renewal interval: what was started at once has run by then."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_kept_at_once_the_lease_is_renewed_before_a_third_of_it_passed() -> None:
    renewals = Renewals()
    lease = taken(renewals)
    lease.keep(at_once=True)
    await a_few_loop_steps()
    assert renewals.calls == 1
    await lease.stop()


async def test_a_lease_already_kept_is_not_kept_a_second_time() -> None:
    renewals = Renewals()
    lease = held(renewals)  # its first renewal is a third of the lease away
    lease.keep(at_once=True)
    lease.keep()
    await a_few_loop_steps()
    assert renewals.calls == 0
    await lease.stop()


async def test_the_body_s_result_is_returned_and_renewals_go_on_while_it_runs() -> None:
    renewals = Renewals()
    lease = held(renewals)

    async def body() -> str:
        await asyncio.sleep(0.05)  # five renewal intervals
        return "done"

    assert await lease.run(body()) == "done"
    await lease.stop()
    assert renewals.calls >= 2
    assert not lease.lost


async def test_a_lost_claim_cancels_the_body_and_raises_lease_lost() -> None:
    renewals = Renewals()
    lease = held(renewals)
    finished = False

    async def body() -> None:
        nonlocal finished
        renewals.refuse = True  # another worker took the claim over
        await asyncio.sleep(5)
        finished = True

    with pytest.raises(LeaseLost):
        await lease.run(body())
    await lease.stop()
    assert lease.lost
    assert not finished
    # The caller's task carries no cancellation left over: it goes on awaiting.
    await asyncio.sleep(0)


async def test_a_renewal_that_never_answers_does_not_keep_the_body_past_the_lease_end() -> None:
    renewals = Renewals(hang=1_000)
    lease = held(renewals)
    # The renewal never returns: only the lease's end stops the body.
    await a_long_body_is_stopped(lease, within=4)
    assert lease.lapsed()
    await lease.stop()
    assert lease.lost
    assert renewals.abandoned == renewals.calls  # none left blocked on the store


async def test_a_renewal_that_never_answers_is_abandoned_and_the_next_one_keeps_the_claim() -> None:
    renewals = Renewals(hang=1)
    # An interval of 100 ms leaves room for a slow loop.
    lease = taken(renewals, length=timedelta(milliseconds=300))
    lease.keep()

    async def body() -> str:
        await asyncio.sleep(0.6)  # two leases
        return "done"

    assert await lease.run(body()) == "done"
    await lease.stop()
    assert not lease.lost
    assert renewals.abandoned == 1
    assert renewals.calls >= 3


class DeafRenewals(Renewals):
    """A store whose renewal never answers and ignores being cancelled, until `let_go`."""

    def __init__(self) -> None:
        super().__init__()
        self.let_go = asyncio.Event()

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        self.calls += 1
        while not self.let_go.is_set():
            try:
                await self.let_go.wait()
            except asyncio.CancelledError:  # deaf to it: only the lease's end can stop the body
                self.abandoned += 1
        raise asyncio.CancelledError  # let go: the cancellations it heard end it at last


async def test_a_renewal_deaf_to_cancellation_does_not_keep_the_body_past_the_lease_end() -> None:
    renewals = DeafRenewals()
    lease = held(renewals)
    try:
        # The renewal is stuck: only the lease's end stops the body.
        await a_long_body_is_stopped(lease, within=4)
        assert lease.lapsed()
        assert lease.lost
        assert renewals.calls == 1  # stuck in the first renewal all along
    finally:
        renewals.let_go.set()
        await lease.stop()


async def test_a_lease_kept_with_less_than_a_renewal_interval_left_ends_at_its_end() -> None:
    # A claim that took most of its lease: the lease ends before its first renewal is due.
    renewals = Renewals()
    # A renewal every second; the lease ends long before the first.
    lease = taken(renewals, length=timedelta(seconds=3), left=timedelta(milliseconds=20))
    lease.keep()
    await a_long_body_is_stopped(lease, within=0.9)
    assert renewals.calls == 0
    assert lease.lost
    await lease.stop()


async def test_a_body_that_swallows_the_cancellation_keeps_its_result() -> None:
    renewals = Renewals()
    lease = held(renewals)

    async def body() -> str:
        renewals.refuse = True
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "cleaned up"
        return "slept"

    assert await lease.run(body()) == "cleaned up"
    await lease.stop()
    assert lease.lost
    await asyncio.sleep(0)  # no cancellation is pending on the caller


async def test_the_body_s_own_error_propagates_unchanged() -> None:
    lease = held(Renewals())

    async def body() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await lease.run(body())
    await lease.stop()


async def test_cancelling_the_caller_cancels_the_body_and_is_not_a_lost_lease() -> None:
    lease = held(Renewals())
    started = asyncio.Event()
    cancelled = False

    async def body() -> None:
        nonlocal cancelled
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled = True
            raise

    caller = asyncio.create_task(lease.run(body()))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await lease.stop()
    assert cancelled
    assert not lease.lost


async def test_a_claim_lost_after_the_body_ended_does_not_touch_the_caller() -> None:
    renewals = Renewals()
    lease = held(renewals)

    async def body() -> int:
        return 1

    assert await lease.run(body()) == 1
    renewals.refuse = True
    await asyncio.sleep(0.05)  # a renewal finds the claim gone
    assert lease.lost
    await asyncio.sleep(0)  # and this task was not cancelled for it
    await lease.stop()


async def test_run_refuses_to_start_once_the_claim_is_lost() -> None:
    renewals = Renewals()
    renewals.refuse = True
    lease = held(renewals)
    await asyncio.sleep(0.05)
    assert lease.lost
    started = False

    async def body() -> None:
        nonlocal started
        started = True

    work = body()
    with pytest.raises(LeaseLost):
        await lease.run(work)
    work.close()
    await lease.stop()
    assert not started


async def test_a_lost_claim_inside_the_body_s_own_timeout_is_still_lease_lost() -> None:
    renewals = Renewals()
    lease = held(renewals)

    async def body() -> None:
        renewals.refuse = True
        async with asyncio.timeout(5):  # the body's own limit, far off
            await asyncio.sleep(5)

    with pytest.raises(LeaseLost):
        await lease.run(body())
    await lease.stop()


async def test_the_body_s_own_timeout_stays_a_timeout_while_the_claim_holds() -> None:
    lease = held(Renewals())

    async def body() -> None:
        async with asyncio.timeout(0.02):
            await asyncio.sleep(5)

    with pytest.raises(TimeoutError):
        await lease.run(body())
    await lease.stop()
    assert not lease.lost


async def test_a_lost_claim_cancels_every_task_of_a_task_group_in_the_body() -> None:
    renewals = Renewals()
    lease = held(renewals)
    finished: list[int] = []

    async def child(number: int) -> None:
        await asyncio.sleep(5)
        finished.append(number)

    async def body() -> None:
        async with asyncio.TaskGroup() as group:
            for number in range(3):
                group.create_task(child(number))
            renewals.refuse = True

    with pytest.raises(LeaseLost):
        await lease.run(body())
    await lease.stop()
    assert finished == []
