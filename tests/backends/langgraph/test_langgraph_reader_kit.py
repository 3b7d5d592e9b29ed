"""LangGraphCheckpoints passes the checkpoint reader kit, on every saver."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from langgraph.types import Command
from langgraph_support import APPROVAL, Effects, Graphs, thread

from pausetoken.testing import PausedRun, ReaderConformance
from pausetoken_langgraph import LangGraphCheckpoints, pending_interrupts, unwrap

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from langgraph.checkpoint.base import BaseCheckpointSaver


class TestLangGraphCheckpoints(ReaderConformance):
    @pytest.fixture
    async def reader(self, saver: BaseCheckpointSaver[Any]) -> AsyncIterator[LangGraphCheckpoints]:
        reader = LangGraphCheckpoints(Graphs(saver, Effects()).single())
        yield reader
        await reader.aclose()

    async def pause(self, reader: Any) -> PausedRun:
        config = thread()
        await reader.graph.ainvoke({"log": []}, config)
        thread_id = config["configurable"]["thread_id"]
        head = await reader.head(thread_id)
        ((interrupt_id, found),) = pending_interrupts(head.pending_writes).items()
        _, payload = unwrap(found.value)
        return PausedRun(
            APPROVAL,
            payload,
            {"approved": True},
            thread_id=thread_id,
            interrupt_id=interrupt_id,
            checkpoint_id=str(head.config["configurable"]["checkpoint_id"]),
        )

    async def move_on(self, reader: Any, paused: PausedRun) -> None:
        config = {"configurable": {"thread_id": paused.thread_id}}
        await reader.graph.ainvoke(
            Command(resume={paused.interrupt_id: {"approved": True}}), config
        )
