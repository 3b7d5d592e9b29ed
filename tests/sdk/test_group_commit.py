"""`GroupCommit`: the operations waiting at one moment go out as one store call."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausetoken.plugins import GroupCommit

if TYPE_CHECKING:
    from collections.abc import Sequence


class Store:
    """Records each batch it is sent; answers each operation with its key and value."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[str, int]]] = []
        self.gate: asyncio.Event | None = None
        self.fail: Exception | None = None

    async def send(self, batch: Sequence[tuple[str, int]]) -> list[str]:
        self.batches.append(list(batch))
        if self.gate is not None:
            await self.gate.wait()
        else:
            await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        return [f"{key}={value}" for key, value in batch]


def grouped(
    store: Store, *, max_batch: int = 8, max_in_flight: int = 2
) -> GroupCommit[tuple[str, int], str]:
    return GroupCommit(
        store.send, key=lambda op: op[0], max_batch=max_batch, max_in_flight=max_in_flight
    )


async def test_a_lone_operation_is_sent_at_once_in_a_batch_of_one() -> None:
    store = Store()
    assert await grouped(store)(("a", 1)) == "a=1"
    assert store.batches == [[("a", 1)]]


async def test_operations_waiting_together_share_batches_of_at_most_max_batch() -> None:
    store = Store()
    group = grouped(store, max_batch=4, max_in_flight=1)
    ops = [(f"k{i}", i) for i in range(10)]
    assert await asyncio.gather(*map(group, ops)) == [f"k{i}={i}" for i in range(10)]
    assert [len(batch) for batch in store.batches] == [4, 4, 2]
    assert [op for batch in store.batches for op in batch] == ops  # oldest first


@given(
    keys=st.lists(st.sampled_from("abcde"), min_size=1, max_size=30),
    max_batch=st.integers(1, 6),
    max_in_flight=st.integers(1, 3),
)
def test_every_operation_gets_its_own_result_and_no_batch_repeats_a_key(
    keys: list[str], max_batch: int, max_in_flight: int
) -> None:
    async def run() -> None:
        store = Store()
        group = grouped(store, max_batch=max_batch, max_in_flight=max_in_flight)
        ops = [(key, i) for i, key in enumerate(keys)]
        assert await asyncio.gather(*map(group, ops)) == [f"{k}={i}" for k, i in ops]
        assert sorted(op for batch in store.batches for op in batch) == sorted(ops)
        for batch in store.batches:
            assert 1 <= len(batch) <= max_batch
            assert len({key for key, _ in batch}) == len(batch)
        # Operations on one key leave in the order they were submitted.
        for key in set(keys):
            sent = [i for batch in store.batches for k, i in batch if k == key]
            assert sent == sorted(sent)

    asyncio.run(run())


async def test_no_more_batches_than_max_in_flight_are_sent_at_once() -> None:
    store = Store()
    store.gate = asyncio.Event()
    group = grouped(store, max_batch=1, max_in_flight=2)
    waiting = [asyncio.ensure_future(group((f"k{i}", i))) for i in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(store.batches) == 2
    assert group.waiting == 3
    store.gate.set()
    assert await asyncio.gather(*waiting) == [f"k{i}={i}" for i in range(5)]
    assert len(store.batches) == 5


async def test_a_failed_call_fails_every_operation_of_its_batch_with_its_error() -> None:
    store = Store()
    store.fail = ConnectionError("gone")
    group = grouped(store, max_in_flight=1)
    results = await asyncio.gather(*(group((k, 0)) for k in "abc"), return_exceptions=True)
    assert all(result is store.fail for result in results)
    store.fail = None
    assert await group(("a", 1)) == "a=1"  # the next batch is sent as usual


async def test_a_caller_who_gives_up_before_its_batch_leaves_is_never_sent() -> None:
    store = Store()
    store.gate = asyncio.Event()
    group = grouped(store, max_batch=8, max_in_flight=1)
    first = asyncio.ensure_future(group(("a", 1)))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert store.batches == [[("a", 1)]]
    gives_up = asyncio.ensure_future(group(("b", 2)))
    stays = asyncio.ensure_future(group(("c", 3)))
    await asyncio.sleep(0)
    gives_up.cancel()
    store.gate.set()
    assert await first == "a=1"
    assert await stays == "c=3"
    assert gives_up.cancelled()
    assert store.batches == [[("a", 1)], [("c", 3)]]


async def test_a_caller_who_gives_up_after_its_batch_left_leaves_the_others_their_results() -> None:
    store = Store()
    store.gate = asyncio.Event()
    group = grouped(store, max_in_flight=1)
    gives_up = asyncio.ensure_future(group(("a", 1)))
    stays = asyncio.ensure_future(group(("b", 2)))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert store.batches == [[("a", 1), ("b", 2)]]
    gives_up.cancel()
    store.gate.set()
    assert await stays == "b=2"
    assert gives_up.cancelled()


async def test_drain_waits_until_what_was_submitted_is_answered() -> None:
    store = Store()
    store.gate = asyncio.Event()
    group = grouped(store, max_batch=1, max_in_flight=1)
    waiting = [asyncio.ensure_future(group((k, 0))) for k in "abc"]
    await asyncio.sleep(0)
    draining = asyncio.ensure_future(group.drain())
    await asyncio.sleep(0)
    assert not draining.done()
    store.gate.set()
    await draining
    assert all(future.done() for future in waiting)
    assert len(store.batches) == 3


async def test_a_send_that_answers_the_wrong_number_of_results_fails_its_batch() -> None:
    async def short(batch: Sequence[int]) -> list[int]:
        return list(batch)[:-1]

    group: GroupCommit[int, int] = GroupCommit(short, key=lambda op: op, max_in_flight=1)
    results = await asyncio.gather(group(1), group(2), return_exceptions=True)
    assert all(isinstance(result, RuntimeError) for result in results)


def test_a_group_serves_one_event_loop_after_another() -> None:
    store = Store()
    group = grouped(store)
    assert asyncio.run(group(("a", 1))) == "a=1"
    assert asyncio.run(group(("a", 2))) == "a=2"


@pytest.mark.parametrize(("max_batch", "max_in_flight"), [(0, 1), (1, 0)])
def test_limits_below_one_are_refused(max_batch: int, max_in_flight: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        grouped(Store(), max_batch=max_batch, max_in_flight=max_in_flight)
