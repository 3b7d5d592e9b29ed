"""ToolCallCheckpoints passes the checkpoint reader kit, on every record of tool calls.

The kit's pause is a tool call's ``approval`` pause, made the way the server makes it: the
guard's first round (`ToolApprovals.gate`) records the call ``WAITING`` and sends the
approval link. The run moves on the way the server moves it after an answer: the approver
approves on the page (`ToolApprovals.answer_from_page`), so the call is ``APPROVED`` and
the approval pause is behind it. The reader is read over `SQLToolCalls` (SQLite and
PostgreSQL, with the server's tokens in the same database) and over `MemoryToolCalls`.

The call's ``run`` pause is outside the kit's reach: its token is minted in the first round,
while the call waits for its approval, and is pending only once the call was approved. The
last test shows the reader confirms it exactly between the approval and the tool's start.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import warnings
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from mcp_support import ARGS, first_round, page_answer
from mcp_types import ElicitResult

from pausetoken import (
    JoseSigner,
    KeyRing,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    PendingInterrupt,
)
from pausetoken.exceptions import StaleToken
from pausetoken.testing import PausedRun, ReaderConformance
from pausetoken_mcp import (
    APPROVAL_ID,
    ELICITATION_KEY,
    RUN_ID,
    TOOL_APPROVAL,
    Approved,
    CallState,
    MemoryToolCalls,
    ToolApprovals,
    ToolCallCheckpoints,
    register,
)
from scaffolding import ACME, Clock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pausetoken import TokenStore
    from pausetoken_mcp import SQLToolCalls

ACCEPTED: Any = {ELICITATION_KEY: ElicitResult(action="accept")}


@attrs.define
class Server:
    """The MCP server around the reader: its guard, and the approval link of each call."""

    approvals: ToolApprovals
    rounds: dict[str, tuple[str, str]] = attrs.field(factory=dict, repr=False)

    @classmethod
    def around(cls, reader: ToolCallCheckpoints, store: TokenStore, clock: Clock) -> Server:
        service = PauseTokens(
            signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=reader, clock=clock
        )
        return cls(ToolApprovals(service, approval_url="https://app.example/approve"))

    async def ask(self) -> str:
        """A tool call's first round: the call is recorded, waiting; returns its id."""
        token, state = first_round(
            await self.approvals.gate(None, None, "refund", ARGS, scope=ACME, approver="alice")
        )
        call_id: str = json.loads(state)["call"]
        self.rounds[call_id] = token, state
        return call_id

    async def answer(self, call_id: str, decision: str = "approve") -> None:
        """The approver answers on the page, through the call's approval link."""
        token, _ = self.rounds[call_id]
        await self.approvals.answer_from_page(page_answer(token, decision))

    async def run(self, call_id: str) -> None:
        """The client's next round: the approved call is redeemed and its tool started."""
        _, state = self.rounds[call_id]
        step = await self.approvals.gate(
            state, ACCEPTED, "refund", ARGS, scope=ACME, approver="alice"
        )
        assert isinstance(step, Approved)
        async with step.redeem() as run:
            await run.run(asyncio.sleep(0))


def _reader(calls: Any) -> ToolCallCheckpoints:
    # Each test names its server: tests sharing the PostgreSQL tables never meet.
    return ToolCallCheckpoints(calls, namespace=f"refunds-{secrets.token_hex(4)}")


class _KitOverTheServer(ReaderConformance):
    """The kit's pause and move on, through the server's guard (the reader fixture builds it)."""

    # Set by the ``reader`` fixture: pytest runs a class's fixtures on the test's instance.
    server: Server

    def register(self, service: PauseTokens) -> None:
        register(service)

    async def pause(self, reader: Any) -> PausedRun:
        call_id = await self.server.ask()
        record = await reader.calls.load(call_id)
        assert record is not None
        assert record.state is CallState.WAITING
        return PausedRun(
            TOOL_APPROVAL.name,
            record.payload,
            {"type": "approve"},
            thread_id=call_id,
            interrupt_id=APPROVAL_ID,
            checkpoint_id=call_id,
        )

    async def move_on(self, reader: Any, paused: PausedRun) -> None:
        await self.server.answer(paused.thread_id)
        record = await reader.calls.load(paused.thread_id)
        assert record is not None
        assert record.state is CallState.APPROVED


class TestToolCallCheckpointsOnSQL(_KitOverTheServer):
    @pytest.fixture
    async def reader(
        self, calls: SQLToolCalls, store: TokenStore, clock: Clock
    ) -> AsyncIterator[ToolCallCheckpoints]:
        reader = _reader(calls)
        self.server = Server.around(reader, store, clock)
        yield reader
        await reader.aclose()


class TestToolCallCheckpointsInMemory(_KitOverTheServer):
    @pytest.fixture
    async def reader(self, clock: Clock) -> AsyncIterator[ToolCallCheckpoints]:
        with warnings.catch_warnings():  # one process on purpose
            warnings.simplefilter("ignore", MemoryStoreWarning)
            store = MemoryStore()
        reader = _reader(MemoryToolCalls())
        self.server = Server.around(reader, store, clock)
        yield reader
        await reader.aclose()
        await store.aclose()


async def test_the_run_pause_is_pending_from_the_approval_to_the_tool_start(
    calls: SQLToolCalls, store: TokenStore, clock: Clock
) -> None:
    reader = _reader(calls)
    server = Server.around(reader, store, clock)
    approved, rejected = await server.ask(), await server.ask()

    async def pending(call_id: str, interrupt_id: str) -> PendingInterrupt:
        return await reader.pending(
            thread_id=call_id, checkpoint_id=call_id, interrupt_id=interrupt_id
        )

    with pytest.raises(StaleToken):  # minted, but not pending before the approval
        await pending(approved, RUN_ID)
    await server.answer(approved)
    assert (await pending(approved, RUN_ID)).interrupt_id == RUN_ID
    await server.run(approved)
    await server.answer(rejected, "reject")
    for call_id in (approved, rejected):
        for interrupt_id in (APPROVAL_ID, RUN_ID):
            with pytest.raises(StaleToken):
                await pending(call_id, interrupt_id)
