"""Fixtures for the MCP integration tests: token stores, tool call records, workers.

Every test that takes ``store`` runs on SQLite (a file in ``tmp_path``) and on the
PostgreSQL server named by ``PAUSETOKEN_TEST_POSTGRESQL_URL`` (skipped without it, unless
``CI=true``); the tool calls are kept in the same database. Each test's tokens carry a
namespace of their own, so tests sharing the PostgreSQL tables never meet.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import TYPE_CHECKING

import pytest

import servers
from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken_mcp import SQLToolCalls, ToolApprovals, ToolCallCheckpoints
from scaffolding import Clock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from pausetoken import TokenStore


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}"
    found = servers.variable("POSTGRESQL_URL")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PAUSETOKEN_TEST_POSTGRESQL_URL is required in CI")
        pytest.skip("PAUSETOKEN_TEST_POSTGRESQL_URL is not set")
    return found


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[TokenStore]:
    opened = open_store(database_url)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
async def calls(database_url: str) -> AsyncIterator[SQLToolCalls]:
    opened = SQLToolCalls(database_url)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
def clock() -> Clock:
    # Real time: the approval page's tokens carry a real iat.
    return Clock(time.time())


@pytest.fixture
def make_approvals(
    store: TokenStore, calls: SQLToolCalls, clock: Clock
) -> Callable[..., ToolApprovals]:
    """Guards on services sharing one key set, one token store and one record: workers."""
    keys = KeyRing.generate()
    namespace = f"refunds-{secrets.token_hex(4)}"

    def make(*, token_store: TokenStore | None = None, **options: object) -> ToolApprovals:
        service = PauseTokens(
            signer=JoseSigner(keys),
            store=token_store or store,
            checkpoints=ToolCallCheckpoints(calls, namespace=namespace),
            clock=clock,
            **options,  # type: ignore[arg-type]
        )
        return ToolApprovals(service, approval_url="https://app.example/approve")

    return make
