"""Fixtures for the Pydantic AI integration tests: token stores, services, an agent.

Every test that takes ``store`` runs on SQLite (a file in ``tmp_path``) and on the
PostgreSQL server named by ``PAUSETOKEN_TEST_POSTGRESQL_URL`` (skipped without it, unless
``CI=true``). Each test's tokens carry a namespace of their own, so tests sharing the
PostgreSQL table never meet each other's pauses.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai_support import Ledger, build_agent

import servers
from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken_pydantic_ai import ConversationCheckpoints, register
from scaffolding import Clock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from pydantic_ai import Agent

    from pausetoken import TokenStore


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}"
    found = servers.variable("POSTGRESQL_URL")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PAUSETOKEN_TEST_POSTGRESQL_URL is required in CI")
        pytest.skip("PAUSETOKEN_TEST_POSTGRESQL_URL is not set")
    return found


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[TokenStore]:
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
def conversations() -> InMemoryConversationStore:
    return InMemoryConversationStore()


@pytest.fixture
def clock() -> Clock:
    return Clock(time.time())  # tokens carry real times


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def agent(ledger: Ledger) -> Agent[None, Any]:
    return build_agent(ledger)


@pytest.fixture
def make_tokens(
    store: TokenStore, conversations: InMemoryConversationStore, clock: Clock
) -> Callable[..., PauseTokens]:
    """Services sharing one key set, one token store and one conversation store: workers."""
    keys = KeyRing.generate()
    namespace = f"refunds-{secrets.token_hex(4)}"

    def make(*, keyring: KeyRing | None = None) -> PauseTokens:
        tokens = PauseTokens(
            signer=JoseSigner(keyring or keys),
            store=store,
            checkpoints=ConversationCheckpoints(conversations, namespace=namespace),
            clock=clock,
        )
        register(tokens)
        return tokens

    return make
