"""Fixtures for the LangGraph integration tests: checkpointers, stores, services, graphs.

Every test that takes ``saver`` runs on ``InMemorySaver``, ``AsyncSqliteSaver`` (a file in
``tmp_path``) and ``AsyncPostgresSaver`` on the server named by
``PAUSETOKEN_TEST_POSTGRESQL_URL`` (any SQLAlchemy-style ``postgresql+driver://`` URL; each
test gets its own schema, dropped afterwards). Without that variable the PostgreSQL case
skips with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_support import APPROVAL, SAVERS, Effects, Graphs, postgresql_schema

from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken_langgraph import LangGraphCheckpoints
from scaffolding import Clock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel

    from pausetoken import TokenStore


@pytest.fixture(params=SAVERS)
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    kind = request.param
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as found:
            yield found
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with (
            postgresql_schema() as scoped,
            AsyncPostgresSaver.from_conn_string(scoped) as found,
        ):
            await found.setup()
            yield found


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[TokenStore]:
    opened = open_store(f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}")
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
def clock() -> Clock:
    return Clock(1_900_000_000.0)


@pytest.fixture
def make_tokens(store: TokenStore, clock: Clock) -> Callable[..., PauseTokens]:
    keys = KeyRing.generate()

    def make(graph: Pregel[Any, Any, Any, Any], *, on: TokenStore | None = None) -> PauseTokens:
        tokens = PauseTokens(
            signer=JoseSigner(keys),
            store=on or store,
            checkpoints=LangGraphCheckpoints(graph),
            clock=clock,
        )
        tokens.register(APPROVAL)
        return tokens

    return make


@pytest.fixture
def effects() -> Effects:
    return Effects()


@pytest.fixture
def graphs(saver: BaseCheckpointSaver[Any], effects: Effects) -> Graphs:
    return Graphs(saver, effects)
