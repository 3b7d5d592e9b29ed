"""ThreadCheckpoints passes the checkpoint reader kit, over the thread states the adapter writes.

The kit's pause is the refund agent's first run, ended the way the adapter ends it:
`AgUi.run` without resume entries stores the thread at a new checkpoint waiting on the
``refund-1`` interrupt, with the refund as JSON. The kit mints with exactly what the adapter
minted with (the thread, the interrupt id, the checkpoint, the stored payload). The thread
moves on the way the adapter moves it after an answer: `AgUi.resume` with the resume entry
answering that interrupt fences the thread off the answered checkpoint, runs the agent, and
stores the new state. Every check runs twice: once the agent completes (nothing is pending
any more), and once it asks for the same refund again under the same interrupt id, so that
only the checkpoint tells the old pause from the new one. The adapter has its own service
(keys, token store) over the same reader, so its tokens and the kit's never meet; both read
the same thread states.

The reader is read over `MemoryThreadStates` (an unknown thread is ``CheckpointLost``) and
over `SQLThreadStates` on SQLite and PostgreSQL (``CheckpointNotFound``). Two more tests
pin the fence itself: while the resumed agent runs the pause is already stale, and when the
agent fails the thread is put back so the reader confirms the pause again.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import pytest
from agui_support import APPROVE, REFUND, RefundAgent, answer, interrupts, resume, start

from pausetoken import JoseSigner, KeyRing, MemoryStore, PauseTokens, PendingInterrupt
from pausetoken.exceptions import CheckpointLost, CheckpointNotFound, StaleToken
from pausetoken.testing import PausedRun, ReaderConformance
from pausetoken_agui import (
    METADATA_KEY,
    AgUi,
    MemoryThreadStates,
    Outcome,
    Resumption,
    ThreadCheckpoints,
)
from scaffolding import ACME

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ag_ui.core import Interrupt as AguiInterrupt

    from pausetoken import Claims
    from pausetoken_agui import SQLThreadStates

pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")

#: The answer the kit redeems: the resume entry's status and payload, as the adapter binds it.
APPROVED: Any = {"status": "resolved", "payload": APPROVE}
#: What a resumed run does: complete, or ask for the same refund again under the same id.
RESUMED_RUNS = ["completes", "asks-again"]


@attrs.define
class Server:
    """The agent server around the reader: its adapter, its agent, each thread's interrupt.

    With ``asks_again``, a resumed run ends asking for the same refund under the same
    interrupt id (``refund-1``) as the run that paused.
    """

    agui: AgUi
    agent: RefundAgent
    asks_again: bool
    asked: dict[str, AguiInterrupt] = attrs.field(factory=dict, repr=False)

    @classmethod
    def around(cls, reader: ThreadCheckpoints, *, asks_again: bool) -> Server:
        service = PauseTokens(
            signer=JoseSigner(KeyRing.generate()), store=MemoryStore(), checkpoints=reader
        )
        return cls(AgUi(service, [REFUND]), RefundAgent(), asks_again)

    async def run(self, resumption: Resumption) -> Outcome:
        """The refund agent; with ``asks_again``, a resumed run pauses as the first did."""
        outcome = await self.agent(resumption)
        if resumption.answers and self.asks_again:
            first = await self.agent(Resumption(resumption.input))  # what a new run asks
            return attrs.evolve(outcome, asks=first.asks)
        return outcome

    async def pause(self) -> PausedRun:
        """A new thread's first run, ended with the refund interrupt by the adapter."""
        thread = f"thread-{secrets.token_hex(6)}"  # the PostgreSQL table is shared
        (interrupt,) = interrupts(await self.agui.run(start(thread), self.run, scope=ACME))
        self.asked[thread] = interrupt
        state = await self.agui.states.load(thread)
        assert state is not None
        waiting = state.find(interrupt.id)
        assert waiting is not None
        return PausedRun(
            REFUND.interrupt,
            waiting.value,
            APPROVED,
            thread_id=thread,
            interrupt_id=interrupt.id,
            checkpoint_id=state.checkpoint_id,
        )

    async def move_on(self, thread: str) -> None:
        """The client approves: the adapter fences the thread, runs the agent, stores it."""
        entry = answer(self.asked[thread], APPROVE)
        finished = await self.agui.resume(resume(thread, entry), self.run, scope=ACME)
        assert finished.result == {"refunded": True}
        if self.asks_again:
            (self.asked[thread],) = interrupts(finished)
            assert self.asked[thread].id == entry.interrupt_id

    def claims(self, thread: str) -> Claims:
        """The claims of the token the adapter sent with the thread's interrupt."""
        metadata = self.asked[thread].metadata
        assert metadata is not None
        return self.agui.service.verify(metadata[METADATA_KEY]["token"])


class _AgentServerRuns(ReaderConformance):
    """The kit's hooks over a `Server`; subclasses give the thread states."""

    server: Server

    def serve(self, reader: ThreadCheckpoints, request: pytest.FixtureRequest) -> ThreadCheckpoints:
        self.server = Server.around(reader, asks_again=request.param == "asks-again")
        return reader

    async def pause(self, reader: Any) -> PausedRun:
        assert reader is self.server.agui.reader
        return await self.server.pause()

    async def move_on(self, reader: Any, paused: PausedRun) -> None:
        assert reader is self.server.agui.reader
        await self.server.move_on(paused.thread_id)

    async def test_while_the_resumed_agent_runs_the_pause_is_already_stale(
        self, reader: ThreadCheckpoints
    ) -> None:
        paused = await self.pause(reader)
        claims = self.server.claims(paused.thread_id)
        where = {
            "thread_id": claims.thread_id,
            "checkpoint_id": claims.checkpoint_id,
            "interrupt_id": claims.interrupt_id,
        }
        agent = self.server.agent
        agent.gate = asyncio.Event()
        resumed = asyncio.create_task(self.move_on(reader, paused))
        await agent.started.wait()
        try:
            with pytest.raises(StaleToken):
                await reader.pending(**where)
        finally:
            agent.gate.set()
            await resumed
        with pytest.raises(StaleToken):
            await reader.pending(**where)
        assert agent.refunds == [("o-1", 500)]

    async def test_after_a_failed_run_the_reader_confirms_the_pause_again(
        self, reader: ThreadCheckpoints
    ) -> None:
        paused = await self.pause(reader)
        claims = self.server.claims(paused.thread_id)
        self.server.agent.fail = True
        with pytest.raises(RuntimeError):
            await self.move_on(reader, paused)
        found = await reader.pending(
            thread_id=claims.thread_id,
            checkpoint_id=claims.checkpoint_id,
            interrupt_id=claims.interrupt_id,
        )
        assert found == PendingInterrupt(
            paused.thread_id, claims.checkpoint_id, claims.interrupt_id, paused.payload
        )
        await self.move_on(reader, paused)  # the same answer, sent again, goes through
        assert self.server.agent.refunds == [("o-1", 500)]


class TestThreadCheckpointsInMemory(_AgentServerRuns):
    unknown_thread_errors: ClassVar[tuple[type[Exception], ...]] = (CheckpointLost,)

    @pytest.fixture(params=RESUMED_RUNS)
    async def reader(self, request: pytest.FixtureRequest) -> AsyncIterator[ThreadCheckpoints]:
        reader = self.serve(ThreadCheckpoints(MemoryThreadStates()), request)
        yield reader
        await reader.aclose()


class TestThreadCheckpointsInSQL(_AgentServerRuns):
    unknown_thread_errors: ClassVar[tuple[type[Exception], ...]] = (CheckpointNotFound,)

    @pytest.fixture(params=RESUMED_RUNS)
    async def reader(
        self, states: SQLThreadStates, request: pytest.FixtureRequest
    ) -> AsyncIterator[ThreadCheckpoints]:
        namespace = f"kit-{secrets.token_hex(4)}"
        reader = self.serve(ThreadCheckpoints(states, namespace=namespace), request)
        yield reader
        await reader.aclose()
