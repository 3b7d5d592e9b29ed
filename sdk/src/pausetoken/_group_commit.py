"""Group commit: the operations waiting at one moment, sent to the store as one call.

Under concurrency most of a fast store's cost per operation is fixed, not per row: one
statement to parse and plan or one script to run, one round trip, one wake-up of the
driver's reader. `GroupCommit` queues the operations its callers submit and has at most
``max_in_flight`` senders running; each sender takes everything waiting (up to
``max_batch`` operations, at most one per key) and sends it in one call. Nothing waits for
a batch to fill: an operation submitted while a sender is free leaves on the event loop's
next turn, so a lone caller pays one task switch, and under load the batches grow by
themselves to what arrived during the previous call.

A caller that gives up (cancelled, or its deadline passed) before its operation was taken
is dropped from the queue and never sent; once it was taken, the call runs to its end and
its result is discarded. A batch whose call fails fails every operation in it with the
same exception.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop, Future, Task
    from collections.abc import Awaitable, Callable, Hashable, Sequence

A = TypeVar("A")
R = TypeVar("R")

__all__ = ["GroupCommit"]


class GroupCommit(Generic[A, R]):
    """Send the operations waiting at one moment as one store call.

    A store that can run many operations of one kind in one call (a multi-row
    statement, a pipeline of scripts) makes one and awaits it per operation:

    ```python
    class MyStore:
        def __init__(self, client):
            self._client = client
            self._consumes = GroupCommit(self._consume_many, key=lambda r: r.pause_key)

        async def consume(self, request):
            return await self._consumes(request)

        async def _consume_many(self, requests):
            # One call for all of them; one result per request, in their order.
            return await self._client.consume_all(requests)

        async def aclose(self):
            await self._consumes.drain()  # what was submitted is sent and answered
            ...
    ```

    Args:
        send: Runs one batch: the operations in the order they were submitted (no two with
            the same key), returning their results in the same order. What it raises is
            raised to every caller in the batch.
        key: The key of an operation. Two operations with the same key never share a batch
            (a statement may not update one row twice); the later one goes in a later batch.
        max_batch: Operations one batch holds at most.
        max_in_flight: Batches being sent at once at most (as many connections as the store
            may use for them).

    Raises:
        ValueError: ``max_batch`` or ``max_in_flight`` is below 1.
    """

    def __init__(
        self,
        send: Callable[[Sequence[A]], Awaitable[Sequence[R]]],
        *,
        key: Callable[[A], Hashable],
        max_batch: int = 64,
        max_in_flight: int = 2,
    ) -> None:
        """Group the calls of ``send`` (see the class docstring for the arguments)."""
        if max_batch < 1 or max_in_flight < 1:
            msg = "max_batch and max_in_flight must be at least 1"
            raise ValueError(msg)
        self._send = send
        self._key = key
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._waiting: deque[tuple[A, Future[R]]] = deque()
        self._senders: set[Task[None]] = set()
        self._loop: AbstractEventLoop | None = None

    async def __call__(self, operation: A) -> R:
        """Submit ``operation`` and wait for its result (or its batch's exception)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # Used on another event loop: what waited or ran on the old one is gone with it.
            self._loop = loop
            self._waiting.clear()
            self._senders = set()
        result: Future[R] = loop.create_future()
        self._waiting.append((operation, result))
        if len(self._senders) < self._max_in_flight:
            self._senders.add(loop.create_task(self._sender()))
        # A cancelled caller cancels its future, which the senders then skip.
        return await result

    @property
    def waiting(self) -> int:
        """Operations submitted and not yet taken into a batch (cancelled ones included)."""
        return len(self._waiting)

    async def drain(self) -> None:
        """Wait until every operation submitted so far was sent and answered."""
        if self._loop is not asyncio.get_running_loop():
            return  # nothing was submitted on this event loop
        while self._senders:
            await asyncio.wait(set(self._senders))

    async def _sender(self) -> None:
        senders = self._senders
        try:
            while batch := self._take():
                await self._run(batch)
        finally:
            # Right after the last check of the queue, with no switch in between (a done
            # callback would run a turn later): an operation submitted after it always finds
            # a free sender.
            senders.discard(asyncio.current_task())  # type: ignore[arg-type,unused-ignore]

    def _take(self) -> list[tuple[A, Future[R]]]:
        """Up to ``max_batch`` waiting operations, one per key, oldest first."""
        taken: dict[Hashable, tuple[A, Future[R]]] = {}
        later: list[tuple[A, Future[R]]] = []
        waiting = self._waiting
        while waiting and len(taken) < self._max_batch:
            entry = waiting.popleft()
            if entry[1].done():  # its caller gave up before it was taken
                continue
            key = self._key(entry[0])
            if key in taken:
                later.append(entry)
            else:
                taken[key] = entry
        waiting.extendleft(reversed(later))
        return list(taken.values())

    async def _run(self, batch: list[tuple[A, Future[R]]]) -> None:
        try:
            results = await self._send([operation for operation, _ in batch])
        except Exception as exc:  # noqa: BLE001 - handed to every caller, not swallowed
            _fail(batch, exc)
            return
        except BaseException:
            for _, result in batch:
                result.cancel()
            raise
        if len(results) != len(batch):
            _fail(batch, RuntimeError(f"a batch of {len(batch)} got {len(results)} results"))
            return
        for (_, result), value in zip(batch, results, strict=True):
            if not result.done():
                result.set_result(value)


def _fail(batch: list[tuple[A, Future[R]]], exc: Exception) -> None:
    """Fail every operation of ``batch`` whose caller still waits with ``exc``."""
    for _, result in batch:
        if not result.done():
            result.set_exception(exc)
