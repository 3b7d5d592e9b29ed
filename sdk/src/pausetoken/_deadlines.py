"""The operation timeout of a store: every operation on one timer.

``asyncio.timeout()`` arms and cancels a timer of the event loop for each operation, which
costs as much Python as the rest of a fast store's path (``benchmarks/stores.py`` holds that
path against the raw driver). Every operation of one store has the same timeout, so their
deadlines come in the order the operations start: `Deadlines` keeps them in a queue and
arms one timer, for the oldest operation still running. An operation that outlives its
deadline is cancelled and then fails with `TimeoutError`, exactly as under
``asyncio.timeout()``; the others only join and leave the queue.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop, Task, TimerHandle
    from collections.abc import Awaitable
    from typing import Any

T = TypeVar("T")

__all__ = ["Deadline", "Deadlines"]


class Deadline:
    """One running operation's deadline (see `Deadlines.start()`)."""

    __slots__ = ("cancelling", "expired", "task", "when")

    def __init__(self, when: float, task: Task[Any], cancelling: int) -> None:
        self.when = when
        #: The operation's task, ``None`` once the operation left.
        self.task: Task[Any] | None = task
        #: The task's pending cancellations when the operation started.
        self.cancelling = cancelling
        #: Whether the deadline passed (and the task was cancelled) while it ran.
        self.expired = False


class Deadlines:
    """Deadlines of operations that all get ``seconds``, on one timer per event loop.

    A store makes one and bounds each operation with `run()`, or with `start()` and
    `finish()` where it must tell a timeout from its own failures (to discard a
    connection, say):

    ```python
    class MyStore:
        def __init__(self, client, timeout=5.0):
            self._client = client
            self._deadlines = Deadlines(timeout)

        async def status(self, pause_key):
            # TimeoutError (turned into StoreUnavailable) once `timeout` seconds pass.
            row = await self._deadlines.run(self._client.get_row(pause_key))
            ...
    ```
    """

    def __init__(self, seconds: float) -> None:
        """Bound every operation to ``seconds``."""
        self._seconds = seconds
        self._running: deque[Deadline] = deque()
        self._loop: AbstractEventLoop | None = None
        self._timer: TimerHandle | None = None

    async def run(self, operation: Awaitable[T]) -> T:
        """Await ``operation``; `TimeoutError` if it outlives its deadline.

        As under ``asyncio.timeout()``, the operation is cancelled when its time is up and
        the `TimeoutError` is chained to that cancellation; a cancellation from anywhere else
        stays a cancellation.
        """
        deadline = self.start()
        try:
            result = await operation
        except asyncio.CancelledError as exc:
            if self.finish(deadline, cancelled=True):
                raise TimeoutError from exc
            raise
        except BaseException:
            self.finish(deadline, cancelled=False)
            raise
        self.finish(deadline, cancelled=False)
        return result

    def start(self) -> Deadline:
        """Start the current task's operation: it is cancelled if it outlives its deadline.

        Pair with `finish()` in a ``finally`` clause.
        """
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - the store only runs inside tasks
            msg = "a store operation must run inside a task"
            raise RuntimeError(msg)
        if loop is not self._loop:
            # A store reused on another event loop: what ran on the old one is gone with it.
            self._loop, self._timer = loop, None
            self._running.clear()
        deadline = Deadline(loop.time() + self._seconds, task, task.cancelling())
        self._running.append(deadline)
        if self._timer is None:
            self._timer = loop.call_at(deadline.when, self._expire, loop)
        return deadline

    def finish(self, deadline: Deadline, *, cancelled: bool) -> bool:
        """End the operation; whether its cancellation (``cancelled``) is a timeout.

        As ``asyncio.timeout()`` does, the cancellation this timer requested is withdrawn,
        and it counts as a timeout only if nobody else cancelled the task meanwhile.
        """
        task, deadline.task = deadline.task, None
        running = self._running
        while running and running[0].task is None:
            running.popleft()
        if not deadline.expired or task is None:  # in time, or finished already
            return False
        return task.uncancel() <= deadline.cancelling and cancelled

    def _expire(self, loop: AbstractEventLoop) -> None:
        if loop is not self._loop:
            return  # armed on an event loop the store no longer runs on
        self._timer = None
        now = loop.time()
        running = self._running
        while running:
            deadline = running[0]
            if deadline.task is None:
                running.popleft()
            elif deadline.when > now:
                self._timer = loop.call_at(deadline.when, self._expire, loop)
                return
            else:
                running.popleft()
                deadline.expired = True
                deadline.task.cancel()
