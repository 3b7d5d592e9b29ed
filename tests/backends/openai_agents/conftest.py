"""Fixtures for the OpenAI Agents SDK integration tests: stores, run states, services.

Every test that takes ``engine`` runs with the token store and the run states on SQLite (a
file in ``tmp_path``) and on the PostgreSQL server named by
``PAUSETOKEN_TEST_POSTGRESQL_URL``; without that variable the PostgreSQL case skips (and
fails on CI).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest
from agents import set_tracing_disabled
from openai_agents_support import POSTGRESQL_ENV, Refunds

import servers
from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken_openai_agents import AgentRunCheckpoints, SQLRunStates

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from agents import Agent

    from pausetoken import TokenStore

ENGINES = ("sqlite", "postgresql")


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    # Tracing would export to the network; the tests never reach it.
    set_tracing_disabled(disabled=True)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'pausetoken.db'}"
    url = servers.variable("POSTGRESQL_URL")
    if not url:
        reason = f"{POSTGRESQL_ENV} is not set: no PostgreSQL server to test against"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(reason)
        pytest.skip(reason)
    return url


@pytest.fixture
async def store(engine: str) -> AsyncIterator[TokenStore]:
    opened = open_store(engine)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
async def states(engine: str) -> AsyncIterator[SQLRunStates]:
    opened = SQLRunStates(engine)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
def keys() -> KeyRing:
    return KeyRing.generate()


@pytest.fixture
def make_tokens(
    store: TokenStore, states: SQLRunStates, keys: KeyRing
) -> Callable[..., PauseTokens]:
    def make(agent: Agent[Any], **options: Any) -> PauseTokens:
        return PauseTokens(
            signer=JoseSigner(keys),
            store=store,
            checkpoints=AgentRunCheckpoints(agent, states),
            **options,
        )

    return make


@pytest.fixture
def refunds() -> Refunds:
    return Refunds()
