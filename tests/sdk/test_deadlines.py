"""The operation timeout on one timer: it behaves as ``asyncio.timeout()`` does."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import pytest

from pausetoken.plugins import Deadlines

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    Operation = Callable[[Deadlines, float], Coroutine[Any, Any, str]]

# Each test waits out real deadlines.
pytestmark = pytest.mark.slow

SECONDS = 0.2


async def _by_hand(deadlines: Deadlines, sleep: float) -> str:
    """Sleep inside an operation bounded with `Deadlines.start()` and `Deadlines.finish()`."""
    deadline = deadlines.start()
    try:
        await asyncio.sleep(sleep)
    except asyncio.CancelledError as exc:
        if deadlines.finish(deadline, cancelled=True):
            raise TimeoutError from exc
        raise
    deadlines.finish(deadline, cancelled=False)
    return "done"


async def _by_run(deadlines: Deadlines, sleep: float) -> str:
    """Sleep inside an operation bounded with `Deadlines.run()`."""
    await deadlines.run(asyncio.sleep(sleep))
    return "done"


@pytest.fixture(params=[_by_hand, _by_run], ids=["start-finish", "run"])
def operation(request: pytest.FixtureRequest) -> Operation:
    """An operation sleeping the seconds it is given, once per way of bounding it."""
    bound: Operation = request.param
    return bound


async def test_an_operation_that_outlives_its_deadline_times_out(operation: Operation) -> None:
    deadlines = Deadlines(SECONDS)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await operation(deadlines, 10)
    assert SECONDS <= time.monotonic() - started < SECONDS * 5


async def test_only_the_operations_that_outlive_their_deadlines_time_out(
    operation: Operation,
) -> None:
    deadlines = Deadlines(SECONDS)
    results = await asyncio.gather(
        operation(deadlines, 10),
        operation(deadlines, 0),
        operation(deadlines, SECONDS / 4),
        operation(deadlines, 10),
        return_exceptions=True,
    )
    assert [type(result).__name__ for result in results] == [
        "TimeoutError",
        "str",
        "str",
        "TimeoutError",
    ]


async def test_operations_started_later_get_their_own_full_time(operation: Operation) -> None:
    deadlines = Deadlines(SECONDS)
    first = asyncio.create_task(operation(deadlines, 10))
    await asyncio.sleep(SECONDS * 0.75)
    # Started when the first one has a quarter of its time left: it needs more than that.
    second = asyncio.create_task(operation(deadlines, SECONDS * 0.5))
    with pytest.raises(TimeoutError):
        await first
    assert await second == "done"


async def test_many_quick_operations_never_time_out(operation: Operation) -> None:
    deadlines = Deadlines(SECONDS)
    for _ in range(3):
        results = await asyncio.gather(*(operation(deadlines, 0) for _ in range(50)))
        assert results == ["done"] * 50
        await asyncio.sleep(SECONDS * 0.6)
    assert await operation(deadlines, SECONDS / 4) == "done"


async def test_a_cancellation_from_outside_stays_a_cancellation(operation: Operation) -> None:
    deadlines = Deadlines(SECONDS)
    task = asyncio.create_task(operation(deadlines, 10))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await operation(deadlines, 0) == "done"


async def test_a_timed_out_operation_leaves_its_task_uncancelled(operation: Operation) -> None:
    deadlines = Deadlines(SECONDS)
    with pytest.raises(TimeoutError):
        await operation(deadlines, 10)
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0
    assert await operation(deadlines, 0) == "done"


def test_a_store_reused_on_another_event_loop_still_times_out(operation: Operation) -> None:
    deadlines = Deadlines(SECONDS)
    with pytest.raises(TimeoutError):
        asyncio.run(operation(deadlines, 10))
    assert asyncio.run(operation(deadlines, 0)) == "done"
    with pytest.raises(TimeoutError):
        asyncio.run(operation(deadlines, 10))


async def test_run_gives_back_the_result_and_lets_errors_through(operation: Operation) -> None:
    deadlines = Deadlines(SECONDS)

    async def fails() -> None:
        raise KeyError("x")

    assert await deadlines.run(asyncio.sleep(0, result=42)) == 42
    with pytest.raises(KeyError):
        await deadlines.run(fails())
    assert await operation(deadlines, 0) == "done"


async def test_a_timeout_from_run_is_chained_to_the_cancellation() -> None:
    deadlines = Deadlines(SECONDS)
    with pytest.raises(TimeoutError) as caught:
        await deadlines.run(asyncio.sleep(10))
    assert isinstance(caught.value.__cause__, asyncio.CancelledError)
