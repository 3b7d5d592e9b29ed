"""The checkpoint reader conformance kit: what every reader must do, as a pytest mixin."""

# ruff: noqa: S101 - this module is a test suite; pytest rewrites its asserts

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import pytest

from pausetoken._claims import Claims, Scope
from pausetoken._hashing import hash_payload
from pausetoken._keys import KeyRing
from pausetoken._memory_store import MemoryStore, MemoryStoreWarning
from pausetoken._reader_api import CheckpointReader, PendingInterrupt
from pausetoken._service import PauseTokens
from pausetoken._signers import JoseSigner
from pausetoken.exceptions import (
    CheckpointLost,
    CheckpointNotFound,
    CommitUnconfirmed,
    StaleToken,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pausetoken._interrupt import Interrupt
    from pausetoken._store_api import TokenStore

__all__ = ["PausedRun", "ReaderConformance"]

#: The scope the kit mints and redeems under.
_SCOPE = Scope(tenant_id="conformance")


@attrs.frozen
class PausedRun:
    """A run the runtime paused, as `ReaderConformance.pause` describes it to the kit.

    Attributes:
        interrupt: The kind to mint with: an [`Interrupt`][pausetoken.Interrupt] (the kit
            registers it) or the name of one `ReaderConformance.register` registers.
        payload: The payload ``mint()`` receives for the pause.
        response: An answer the kind accepts.
        thread_id: The run's thread, as ``mint()`` receives it.
        interrupt_id: The interrupt id ``mint()`` receives, if the runtime names it.
        checkpoint_id: The checkpoint ``mint()`` receives, if the runtime names it.
        tool_call_id: The tool call ``mint()`` receives, if any.
    """

    interrupt: Interrupt[Any, Any] | str
    payload: Any = attrs.field(repr=False)
    response: Any = attrs.field(repr=False)
    thread_id: str
    interrupt_id: str | None = None
    checkpoint_id: str | None = None
    tool_call_id: str | None = None


def _memory_store() -> MemoryStore:
    # The kit's services share one process on purpose; the warning is for applications.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        return MemoryStore()


class _Clock:
    """Seconds since the epoch that tests move by hand."""

    def __init__(self) -> None:
        self.now = time.time()  # tokens carry real times

    def __call__(self) -> float:
        return self.now


class _Body:
    """A redemption's body, counting its runs; then (``then``) the run goes on, as it would."""

    def __init__(self, then: Callable[[], Awaitable[None]] | None = None) -> None:
        self.runs = 0
        self._then = then

    async def __call__(self) -> None:
        self.runs += 1
        if self._then is not None:
            await self._then()


class _CommitNeverArrives:
    """A store whose commits never reach the engine; the clock passes the lease meanwhile."""

    def __init__(self, store: TokenStore, clock: _Clock, lease_s: float) -> None:
        self._store = store
        self._clock = clock
        self._lease_s = lease_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit(self, *args: Any, **kwargs: Any) -> bool:
        del args, kwargs
        self._clock.now += self._lease_s * 3
        msg = "the store cannot be reached"
        raise StoreUnavailable(msg)


class ReaderConformance:
    """What every [`CheckpointReader`][pausetoken.CheckpointReader] must do, as a pytest mixin.

    Subclass it in a ``Test...`` class and override:

    * the fixture ``reader``, which yields a reader over a fresh runtime (and closes it);
    * `pause()`, which pauses a new run in that runtime and describes it (`PausedRun`);
    * `move_on()`, which lets the paused run go on past the pause the way the runtime's
      integration does after an answer (resumes it and saves the new state);
    * `register()`, when `PausedRun.interrupt` names a kind the integration registers.

    The kit mints through a [`PauseTokens`][pausetoken.PauseTokens] service reading the
    reader (on a `MemoryStore`), and checks that a token binds the current pause, that
    the reader tells a pause that is still waiting from one the run moved past, and that a
    worker taking over a claim whose commit went unconfirmed is refused once the run moved
    on, so a body never runs twice.

    Attributes:
        unknown_thread_errors: What ``pending()`` may raise for a thread the runtime does
            not know (a reader over state that does not persist raises ``CheckpointLost``).

    Examples:
        ```python
        class TestMyReader(ReaderConformance):
            @pytest.fixture
            async def reader(self):
                reader = MyReader(MyRuntime())
                yield reader
                await reader.aclose()

            async def pause(self, reader):
                run = await reader.runtime.start("refund order 42")  # pauses for approval
                return PausedRun(APPROVAL, run.question, {"approved": True}, thread_id=run.id)

            async def move_on(self, reader, paused):
                await reader.runtime.resume(paused.thread_id, {"approved": True})
        ```
    """

    unknown_thread_errors: ClassVar[tuple[type[Exception], ...]] = (
        CheckpointNotFound,
        CheckpointLost,
    )

    # -- what a subclass provides -------------------------------------------------------------

    @pytest.fixture
    def reader(self) -> CheckpointReader:
        """Override: yield a reader over a fresh runtime (and close it after the test)."""
        msg = f"{type(self).__name__} must override the 'reader' fixture"
        raise NotImplementedError(msg)

    async def pause(self, reader: CheckpointReader) -> PausedRun:
        """Override: pause a new run in the reader's runtime and describe it."""
        msg = f"{type(self).__name__} must override pause()"
        raise NotImplementedError(msg)

    async def move_on(self, reader: CheckpointReader, paused: PausedRun) -> None:
        """Override: let the paused run go on past its pause, as after an answer."""
        msg = f"{type(self).__name__} must override move_on()"
        raise NotImplementedError(msg)

    def register(self, service: PauseTokens) -> None:
        """Override when `PausedRun.interrupt` is a name: register the integration's kinds."""

    # -- helpers ------------------------------------------------------------------------------

    def _service(
        self,
        reader: CheckpointReader,
        *,
        store: TokenStore | None = None,
        clock: Callable[[], float] | None = None,
        keys: KeyRing | None = None,
    ) -> PauseTokens:
        service = PauseTokens(
            signer=JoseSigner(keys or KeyRing.generate()),
            store=store if store is not None else _memory_store(),
            checkpoints=reader,
            clock=clock or _Clock(),
        )
        self.register(service)
        return service

    @staticmethod
    def _kind(service: PauseTokens, paused: PausedRun) -> Interrupt[Any, Any]:
        if isinstance(paused.interrupt, str):
            return service.interrupt(paused.interrupt)
        return service.register(paused.interrupt)

    async def _mint(self, service: PauseTokens, paused: PausedRun) -> str:
        event = await service.mint(
            self._kind(service, paused),
            paused.payload,
            scope=_SCOPE,
            thread_id=paused.thread_id,
            run_id=paused.thread_id,
            interrupt_id=paused.interrupt_id,
            checkpoint_id=paused.checkpoint_id,
            tool_call_id=paused.tool_call_id,
        )
        return event.token

    async def _paused(self, reader: CheckpointReader) -> tuple[PauseTokens, PausedRun, str]:
        """A service reading ``reader``, a new run paused, and the token minted for it."""
        service = self._service(reader)
        paused = await self.pause(reader)
        return service, paused, await self._mint(service, paused)

    async def _minted_claims(self, reader: CheckpointReader) -> Claims:
        """The verified claims of a token minted for a new run's pause."""
        service, _paused, token = await self._paused(reader)
        return service.verify(token)

    @staticmethod
    async def _pending(
        reader: CheckpointReader, claims: Claims, **instead: str
    ) -> PendingInterrupt:
        """``pending()`` of the pause ``claims`` names, with ``instead`` of any of its ids."""
        where = {
            "thread_id": claims.thread_id,
            "checkpoint_id": claims.checkpoint_id,
            "interrupt_id": claims.interrupt_id,
        }
        return await reader.pending(**(where | instead))

    async def _redeem(
        self,
        service: PauseTokens,
        token: str,
        paused: PausedRun,
        body: Callable[[], Awaitable[None]],
    ) -> bool:
        """Redeem ``token``, running ``body`` unless it is a replay; whether it was one."""
        expect = self._kind(service, paused)
        async with service.redeem(
            token, paused.response, scope=_SCOPE, expect=expect
        ) as redemption:
            if not redemption.replayed:
                await body()
            return redemption.replayed

    # -- the pause a token binds ----------------------------------------------------------------

    async def test_a_minted_token_names_a_pause_the_reader_confirms(
        self, reader: CheckpointReader
    ) -> None:
        service, paused, token = await self._paused(reader)
        claims = service.verify(token)
        assert claims.thread_id == paused.thread_id
        assert claims.checkpoint_id, "bind() returned no checkpoint id"
        assert claims.interrupt_id, "bind() returned no interrupt id"
        if paused.interrupt_id is not None:
            assert claims.interrupt_id == paused.interrupt_id
        found = await self._pending(reader, claims)
        assert isinstance(found, PendingInterrupt)
        assert (found.thread_id, found.checkpoint_id, found.interrupt_id) == (
            claims.thread_id,
            claims.checkpoint_id,
            claims.interrupt_id,
        )
        # The token binds the hash of what the reader stores for the pause.
        assert hash_payload(found.value) == claims.request_hash

    async def test_pending_is_repeatable_and_changes_nothing(
        self, reader: CheckpointReader
    ) -> None:
        claims = await self._minted_claims(reader)
        first = await self._pending(reader, claims)
        second = await self._pending(reader, claims)
        assert hash_payload(first.value) == hash_payload(second.value)
        assert first == second

    async def test_pending_of_an_unknown_thread_is_not_found(
        self, reader: CheckpointReader
    ) -> None:
        claims = await self._minted_claims(reader)
        with pytest.raises(self.unknown_thread_errors):
            await self._pending(reader, claims, thread_id=f"{claims.thread_id}-nobody-knows")

    async def test_pending_of_another_interrupt_is_stale(self, reader: CheckpointReader) -> None:
        claims = await self._minted_claims(reader)
        with pytest.raises(StaleToken):
            await self._pending(reader, claims, interrupt_id=f"{claims.interrupt_id}-never-asked")

    async def test_pending_of_another_checkpoint_is_refused(self, reader: CheckpointReader) -> None:
        claims = await self._minted_claims(reader)
        with pytest.raises((StaleToken, CheckpointNotFound)):
            await self._pending(reader, claims, checkpoint_id=f"{claims.checkpoint_id}-elsewhere")

    # -- the run moved on ---------------------------------------------------------------------

    async def test_after_the_run_moved_on_its_pause_is_stale(
        self, reader: CheckpointReader
    ) -> None:
        service, paused, token = await self._paused(reader)
        claims = service.verify(token)
        await self.move_on(reader, paused)
        with pytest.raises(StaleToken):
            await self._pending(reader, claims)

    async def test_a_token_of_a_run_that_moved_on_is_refused_before_the_body(
        self, reader: CheckpointReader
    ) -> None:
        service, paused, token = await self._paused(reader)
        await self.move_on(reader, paused)
        body = _Body()
        with pytest.raises(StaleToken):
            await self._redeem(service, token, paused, body)
        assert body.runs == 0

    async def test_a_redeemed_pause_answers_a_retry_without_running_the_body(
        self, reader: CheckpointReader
    ) -> None:
        service, paused, token = await self._paused(reader)
        body = _Body(then=lambda: self.move_on(reader, paused))
        assert await self._redeem(service, token, paused, body) is False
        assert await self._redeem(service, token, paused, body) is True
        assert body.runs == 1

    async def test_a_takeover_after_an_unconfirmed_commit_never_runs_the_body_twice(
        self, reader: CheckpointReader
    ) -> None:
        # The first worker's body runs and the run moves on, but its commit never reaches
        # the store and its lease ends. A second worker may then claim the pause; the
        # reader must see the run moved on, so the body does not run again.
        clock, store, keys = _Clock(), _memory_store(), KeyRing.generate()
        second = self._service(reader, store=store, clock=clock, keys=keys)
        lease_s = second.lease.total_seconds()
        first = self._service(
            reader, store=_CommitNeverArrives(store, clock, lease_s), clock=clock, keys=keys
        )
        paused = await self.pause(reader)
        token = await self._mint(first, paused)
        body = _Body(then=lambda: self.move_on(reader, paused))
        with pytest.raises(CommitUnconfirmed):
            await self._redeem(first, token, paused, body)
        with pytest.raises(StaleToken):
            await self._redeem(second, token, paused, body)
        assert body.runs == 1

    async def test_aclose_may_be_called_twice(self, reader: CheckpointReader) -> None:
        await reader.aclose()
        await reader.aclose()
