"""ThreadCheckpoints and the thread state stores: what a token's pause is, compare and set."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pausetoken import CheckpointReader, PendingInterrupt
from pausetoken.exceptions import (
    CheckpointLost,
    CheckpointNotFound,
    ConfigurationError,
    StaleToken,
    StoreUnavailable,
)
from pausetoken.testing.strategies import json_objects
from pausetoken_agui import (
    Answered,
    MemoryThreadStates,
    SQLThreadStates,
    ThreadCheckpoints,
    ThreadState,
    ThreadStates,
    Waiting,
)

if TYPE_CHECKING:
    from pathlib import Path

WAITING = Waiting("i-1", "agui:refund", {"order": "o-1", "cents": 5}, "input_required")


def test_the_reader_is_a_checkpoint_reader_registered_as_agui() -> None:
    reader = ThreadCheckpoints(MemoryThreadStates())
    assert isinstance(reader, CheckpointReader)
    assert isinstance(reader.states, ThreadStates)
    (found,) = [ep for ep in entry_points(group="pausetoken.checkpoints") if ep.name == "agui"]
    assert found.load() is ThreadCheckpoints


def test_the_reader_is_not_built_from_settings() -> None:
    with pytest.raises(ConfigurationError):
        ThreadCheckpoints.from_url("agui://")
    with pytest.raises(ConfigurationError):
        ThreadCheckpoints(MemoryThreadStates(), namespace="")


async def test_bind_and_pending_read_the_stored_payload() -> None:
    states = MemoryThreadStates()
    await states.save("t", ThreadState("c-1", "r-1", waiting=(WAITING,)), replaces=None)
    reader = ThreadCheckpoints(states)
    bound = await reader.bind(thread_id="t", payload=None, interrupt_id="i-1")
    assert bound == PendingInterrupt("t", "c-1", "i-1", WAITING.value)
    pending = await reader.pending(thread_id="t", checkpoint_id="c-1", interrupt_id="i-1")
    assert pending == bound
    with pytest.raises(ConfigurationError):
        await reader.bind(thread_id="t", payload=None)


async def test_a_thread_that_moved_on_or_does_not_wait_is_stale() -> None:
    states = MemoryThreadStates()
    await states.save("t", ThreadState("c-1", "r-1", waiting=(WAITING,)), replaces=None)
    reader = ThreadCheckpoints(states)
    with pytest.raises(StaleToken):
        await reader.bind(thread_id="t", payload=None, interrupt_id="i-1", checkpoint_id="c-0")
    with pytest.raises(StaleToken):
        await reader.pending(thread_id="t", checkpoint_id="c-0", interrupt_id="i-1")
    with pytest.raises(StaleToken):
        await reader.pending(thread_id="t", checkpoint_id="c-1", interrupt_id="i-2")


async def test_an_unknown_thread_is_lost_in_memory_and_not_found_elsewhere(tmp_path: Path) -> None:
    with pytest.raises(CheckpointLost):
        await ThreadCheckpoints(MemoryThreadStates()).pending(
            thread_id="t", checkpoint_id="c", interrupt_id="i"
        )
    states = SQLThreadStates(f"sqlite+aiosqlite:///{tmp_path / 'threads.db'}")
    try:
        reader = ThreadCheckpoints(states)
        assert reader.persistent
        with pytest.raises(CheckpointNotFound):
            await reader.pending(thread_id="t", checkpoint_id="c", interrupt_id="i")
    finally:
        await states.aclose()


async def test_states_are_replaced_only_from_the_checkpoint_expected(
    states: SQLThreadStates, thread: str
) -> None:
    for store in (MemoryThreadStates(), states):
        first = ThreadState("c-1", "r-1", waiting=(WAITING,))
        assert await store.save(thread, first, replaces=None)
        assert not await store.save(thread, first, replaces=None)
        assert not await store.save(thread, ThreadState("c-2", "r-2"), replaces="c-0")
        assert await store.load(thread) == first
        assert await store.save(thread, ThreadState("c-2", "r-2"), replaces="c-1")
        assert not await store.save(thread, ThreadState("c-3", "r-3"), replaces="c-1")
        assert await store.load(thread) == ThreadState("c-2", "r-2")
        assert await store.load(thread + "-none") is None


async def test_an_unreachable_state_store_is_unavailable_without_its_parameters() -> None:
    # Nothing listens on port 1: the connection is refused at once.
    states = SQLThreadStates("postgresql+asyncpg://postgres@127.0.0.1:1/none")
    try:
        with pytest.raises(StoreUnavailable) as refused:
            await states.save("t", ThreadState("c", "r", waiting=(WAITING,)), replaces=None)
        assert "o-1" not in str(refused.value)
    finally:
        await states.aclose()


def test_a_state_that_does_not_read_back_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable):
        ThreadState.from_text('{"checkpoint_id": "c"}')


_ids = st.text(min_size=1, max_size=12)
_waiting = st.builds(
    Waiting,
    _ids,
    _ids,
    json_objects(),
    _ids,
    st.none() | st.text(max_size=20),
    st.none() | _ids,
    st.none() | _ids,
)


@settings(max_examples=50, deadline=None)
@given(
    checkpoint=_ids,
    waiting=st.lists(_waiting, max_size=3).map(tuple),
    answered=st.lists(
        st.builds(
            Answered, _ids, _ids, _ids, json_objects(), st.lists(_waiting, max_size=2).map(tuple)
        ),
        max_size=3,
    ).map(tuple),
    fenced=st.booleans(),
)
def test_a_state_reads_back_as_it_was_written(
    checkpoint: str, waiting: tuple[Waiting, ...], answered: tuple[Answered, ...], fenced: bool
) -> None:
    inner = ThreadState(checkpoint, "r", waiting=waiting, answered=answered)
    state = ThreadState("fence", "r2", answered=answered, resuming=inner) if fenced else inner
    assert ThreadState.from_text(state.to_text()) == state
