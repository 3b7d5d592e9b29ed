"""The claim a redemption holds while its body runs, renewed in the background."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pausetoken._hashing import fingerprint
from pausetoken.exceptions import LeaseLost

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pausetoken._store_api import TokenStore

__all__ = ["Lease"]

logger = logging.getLogger("pausetoken.service")

_T = TypeVar("_T")

# After a failed renewal, try again this soon (or at the usual interval if that is sooner).
_RETRY_RENEWAL_S: Final = 0.5


class Lease:
    """The claim a redemption holds while the body of ``redeem()`` runs.

    The service renews it in the background every third of the lease, so only a worker that
    died (or stalled for longer than the lease) lets it lapse for another worker to take
    over. When a renewal finds the claim gone (taken over after it lapsed, or revoked), or
    the lease reaches its end without a renewal having landed, the lease is *lost*: `lost`
    turns true, `ensure_held()` raises, and `run()` cancels what it runs.

    The end is kept by a timer of its own, whatever the renewal is doing: a renewal blocked on
    a store that stopped answering is abandoned after a third of the lease (or at its end, if
    sooner) and tried again, and the body is cancelled when the lease ends, however long the
    store's own ``timeout`` is. Another worker may take the pause over only ``leeway`` after
    that end (by its own clock), so with clocks within ``leeway`` of each other the two
    bodies never run at the same time.

    Side effects in the body should still be idempotent: a lease protects against a second
    worker resuming the pause, not against the first one crashing half-way.

    Examples:
        ```python
        async with tokens.redeem(token, answer, scope=scope) as done:
            if not done.replayed:
                await done.lease.run(resume_the_run(done.response))
        ```
    """

    def __init__(
        self,
        *,
        store: TokenStore,
        pause_key: str,
        lease_id: str,
        until: datetime,
        length: timedelta,
        clock: Callable[[], float],
        on_renewal: Callable[[str], None] | None = None,
    ) -> None:
        """Hold ``lease_id`` on ``pause_key`` until ``until`` (renewed by `keep()`).

        ``on_renewal`` is told how each renewal went: ``renewed``, ``retrying`` or ``lost``.
        """
        self._store = store
        self._pause_key = pause_key
        self._lease_id = lease_id
        self._until = until
        self._length = length
        self._clock = clock
        self._lost = False
        self._timer: asyncio.TimerHandle | None = None
        self._keeper: asyncio.Task[None] | None = None
        # Fires at the lease's end (moved on by renewals): loses the lease if it lapsed.
        self._deadline: asyncio.TimerHandle | None = None
        self._on_renewal = on_renewal
        # The tasks awaiting run(), and those this lease cancelled because it was lost.
        self._runners: set[asyncio.Task[Any]] = set()
        self._cancelled: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        state = "lost" if self.lost else f"until={self._until.isoformat()}"
        return f"Lease(pause=<{fingerprint(self._pause_key)}>, {state})"

    @property
    def lost(self) -> bool:
        """Whether the claim was lost while the body ran."""
        return self._lost

    @property
    def until(self) -> datetime:
        """When the claim lapses unless renewed again."""
        return self._until

    def ensure_held(self) -> None:
        """Call before an irreversible side effect.

        Raises:
            LeaseLost: the claim was lost; another worker may be resuming the pause.
        """
        if self.lost:
            raise LeaseLost

    async def run(self, awaitable: Awaitable[_T]) -> _T:
        """Await ``awaitable``; cancel it and raise `LeaseLost` if the lease is lost.

        The awaitable runs in the calling task, as a plain ``await`` would: losing the
        lease cancels that task the way ``asyncio.timeout()`` does, and the cancellation
        becomes `LeaseLost` here. A cancellation of the caller's own stays a cancellation.

        Raises:
            LeaseLost: the claim was lost before ``awaitable`` finished (it was cancelled).
        """
        self.ensure_held()
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - an await always runs in a task under asyncio
            msg = "Lease.run() must be awaited in an asyncio task"
            raise RuntimeError(msg)
        self._runners.add(task)
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self._withdraw_cancel(task):
                raise LeaseLost from None
            raise
        finally:
            self._runners.discard(task)
            # A body that swallowed the cancellation and returned leaves none pending.
            self._withdraw_cancel(task)

    def _withdraw_cancel(self, task: asyncio.Task[Any]) -> bool:
        """Withdraw this lease's cancellation of ``task``: whether it was the only one."""
        if task not in self._cancelled:
            return False
        self._cancelled.discard(task)
        return task.uncancel() == 0

    # -- the service's side -----------------------------------------------------------------

    def keep(self, *, at_once: bool = False) -> None:
        """Start renewing in the background, unless this lease is renewed already.

        The service calls this after the claim, before a body runs. The first renewal is a
        timer, not a task: most bodies end long before it fires, and a timer costs far less
        to set up and cancel. ``at_once`` renews right away, then every third of the lease:
        for a commit being retried by a redemption that kept no lease until then.
        """
        if self._timer is not None or self._keeper is not None:
            return
        if at_once:
            self._watch_deadline()
            self._start_renewing()
            return
        interval = self._interval()
        # A lease with more than an interval left cannot end before the first renewal is
        # due, so one timer does for both: `_start_renewing` watches the end from then on.
        if self._left() <= interval:
            self._watch_deadline()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(interval, self._start_renewing)

    def _watch_deadline(self) -> None:
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(max(0.0, self._left()), self._at_deadline)

    def _at_deadline(self) -> None:
        self._deadline = None
        if self.lost:
            return
        if not self.lapsed():  # a renewal moved the end on: watch the new one
            self._watch_deadline()
            return
        self._lose("lease lost: no renewal reached the store before the lease ended")
        keeper = self._keeper
        if keeper is not None:
            keeper.cancel()  # a renewal still blocked on the store is abandoned

    def _start_renewing(self) -> None:
        self._timer = None
        if self._deadline is None:
            self._watch_deadline()
        self._keeper = asyncio.get_running_loop().create_task(self._renew_until_stopped())

    async def stop(self) -> None:
        """Stop renewing (after commit or release)."""
        for handle in (self._timer, self._deadline):
            if handle is not None:
                handle.cancel()
        self._timer = self._deadline = None
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper

    def _interval(self) -> float:
        return self._length.total_seconds() / 3

    def lapsed(self) -> bool:
        """Whether the lease's end passed by this worker's clock."""
        return self._left() <= 0

    def _left(self) -> float:
        """Seconds until the lease's end, by this worker's clock."""
        return self._until.timestamp() - self._clock()

    def _lose(self, why: str) -> None:
        if not self.lost:
            logger.error(why, extra={"pause": fingerprint(self._pause_key)})
            self._lost = True
            # Only once: run() refuses to start after this, so every runner is cancelled here.
            self._cancelled = set(self._runners)
            for task in self._cancelled:
                task.cancel()
            self._tell("lost")

    def _tell(self, outcome: str) -> None:
        if self._on_renewal is not None:
            self._on_renewal(outcome)

    async def _renew_until_stopped(self) -> None:
        # The first interval already passed on the timer that started this task. Renewals
        # keep to a fixed schedule (a slow one does not push the next one back), and an
        # attempt is abandoned after an interval, or when the lease ends if that is sooner,
        # whatever the store's own timeout: the next attempt may reach it by another route.
        loop = asyncio.get_running_loop()
        interval = self._interval()
        due = loop.time()
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            started = loop.time()
            until = datetime.fromtimestamp(self._clock(), tz=UTC) + self._length
            try:
                async with asyncio.timeout(min(interval, self._left())):
                    held = await self._store.renew(self._pause_key, self._lease_id, until)
            except Exception as exc:  # noqa: BLE001 - a failed renewal is retried, then logged
                if self.lapsed():
                    self._lose("lease lost: no renewal reached the store before the lease ended")
                    return
                due = started + min(interval, _RETRY_RENEWAL_S)
                logger.warning(
                    "lease renewal failed; retrying (%s)",
                    type(exc).__name__,
                    extra={"pause": fingerprint(self._pause_key)},
                )
                self._tell("retrying")
                continue
            if not held:
                self._lose("lease lost: the claim was taken over or revoked")
                return
            self._until = max(self._until, until)
            self._tell("renewed")
            due = started + interval
