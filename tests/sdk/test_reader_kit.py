"""The checkpoint reader kit against the in-memory reader, and against readers it must fail."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest

from pausetoken import Interrupt, MemoryCheckpoints, PendingInterrupt
from pausetoken.exceptions import StaleToken
from pausetoken.testing import PausedRun, ReaderConformance

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

REFUND = Interrupt("refund", payload=dict, response=dict)


class TestMemoryCheckpoints(ReaderConformance):
    @pytest.fixture
    async def reader(self) -> AsyncIterator[MemoryCheckpoints]:
        reader = MemoryCheckpoints()
        yield reader
        await reader.aclose()

    async def pause(self, reader: Any) -> PausedRun:
        thread_id = f"thread-{uuid.uuid4().hex}"
        reader.advance(thread_id)
        return PausedRun(REFUND, {"order": "o-1"}, {"approved": True}, thread_id=thread_id)

    async def move_on(self, reader: Any, paused: PausedRun) -> None:
        reader.advance(paused.thread_id)


class NeverMovesOn(MemoryCheckpoints):
    """A reader that confirms every pause it ever bound, whatever the run did since."""

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        try:
            return await super().pending(
                thread_id=thread_id, checkpoint_id=checkpoint_id, interrupt_id=interrupt_id
            )
        except StaleToken:
            return PendingInterrupt(thread_id, checkpoint_id, interrupt_id, {"order": "o-1"})


class _KitOverNeverMovesOn(TestMemoryCheckpoints):
    @pytest.fixture
    def reader(self) -> MemoryCheckpoints:  # type: ignore[override]
        return NeverMovesOn()


@pytest.mark.parametrize(
    "test",
    [
        "test_after_the_run_moved_on_its_pause_is_stale",
        "test_a_token_of_a_run_that_moved_on_is_refused_before_the_body",
        "test_a_takeover_after_an_unconfirmed_commit_never_runs_the_body_twice",
        "test_pending_of_another_interrupt_is_stale",
    ],
)
async def test_the_kit_fails_a_reader_that_never_sees_the_run_move_on(test: str) -> None:
    kit = _KitOverNeverMovesOn()
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        await getattr(kit, test)(NeverMovesOn())
