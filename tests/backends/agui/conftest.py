"""Fixtures for the AG-UI integration tests: token stores, thread states, services.

Every test that takes ``engine`` runs with the token store and the thread states on SQLite
(a file in ``tmp_path``) and on the PostgreSQL server named by
``PAUSETOKEN_TEST_POSTGRESQL_URL`` (skipped without it, unless ``CI=true``). Each test's
tokens carry a namespace of their own and its threads ids of their own, so tests sharing
the PostgreSQL tables never meet each other's pauses.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import TYPE_CHECKING, Any

import pytest
from agui_support import REFUND, RefundAgent

import servers
from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken_agui import AgUi, SQLThreadStates, ThreadCheckpoints
from scaffolding import Clock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from pausetoken import TokenStore


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'pausetoken.db'}"
    url = servers.variable("POSTGRESQL_URL")
    if url is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PAUSETOKEN_TEST_POSTGRESQL_URL is required in CI")
        pytest.skip("PAUSETOKEN_TEST_POSTGRESQL_URL is not set")
    return url


@pytest.fixture
async def store(engine: str) -> AsyncIterator[TokenStore]:
    opened = open_store(engine)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
async def states(engine: str) -> AsyncIterator[SQLThreadStates]:
    opened = SQLThreadStates(engine)
    try:
        await opened.load("-")  # the table exists before workers race to create it
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
def clock() -> Clock:
    # Real time: the tokens carry a real iat.
    return Clock(time.time())


@pytest.fixture
def thread() -> str:
    """A thread id no other test uses (the PostgreSQL tables are shared)."""
    return f"thread-{secrets.token_hex(6)}"


@pytest.fixture
def agent() -> RefundAgent:
    return RefundAgent()


@pytest.fixture
def make_agui(store: TokenStore, states: SQLThreadStates, clock: Clock) -> Callable[..., AgUi]:
    """Adapters over services sharing one key set, token store and thread states: workers."""
    keys = KeyRing.generate()
    namespace = f"refunds-{secrets.token_hex(4)}"

    def make(**options: Any) -> AgUi:
        service = PauseTokens(
            signer=JoseSigner(keys),
            store=options.pop("store", store),
            checkpoints=ThreadCheckpoints(states, namespace=namespace),
            clock=clock,
            **options,
        )
        return AgUi(service, [REFUND])

    return make


@pytest.fixture
def agui(make_agui: Callable[..., AgUi]) -> AgUi:
    return make_agui()
