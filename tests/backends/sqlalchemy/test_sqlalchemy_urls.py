"""The store's URL: never shown with a secret, and options nobody takes refused at once."""

from __future__ import annotations

import json
import os
import socket
from typing import TYPE_CHECKING

import pytest

import servers
from pausetoken.exceptions import ConfigurationError, PauseTokenError
from pausetoken_sqlalchemy import SQLAlchemyStore

if TYPE_CHECKING:
    from pathlib import Path

SECRET = "pw-S3cret-in-the-query"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def shown(error: PauseTokenError) -> list[str]:
    return [str(error), error.detail, repr(error), json.dumps(error.to_problem())]


@pytest.mark.parametrize("family", ["postgresql+asyncpg", "mysql+asyncmy"])
async def test_a_password_in_the_query_is_hidden_in_the_repr_and_in_errors(family: str) -> None:
    url = f"{family}://app@127.0.0.1:{free_port()}/db?password={SECRET}"
    store = SQLAlchemyStore.from_url(url, timeout=2)
    try:
        assert SECRET not in repr(store)
        assert "password=***" in repr(store)
        with pytest.raises(PauseTokenError) as caught:
            await store.check()
        for text in shown(caught.value):
            assert SECRET not in text
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://app@127.0.0.1/db?sslmodee=require",
        "mysql+asyncmy://app@127.0.0.1/db?charsett=utf8mb4",
        "sqlite+aiosqlite:///tokens.db?journal=wal",
    ],
)
def test_an_option_the_driver_does_not_take_is_refused_when_the_store_is_opened(
    url: str,
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        SQLAlchemyStore.from_url(url)
    assert caught.value.code == "store_misconfigured"


@pytest.mark.parametrize(
    ("server", "options"),
    [
        ("POSTGRESQL_URL", "ssl=disable&command_timeout=5"),
        ("MYSQL_URL", "charset=utf8mb4&connect_timeout=5"),
        (None, "timeout=5"),
    ],
)
async def test_options_the_driver_takes_are_accepted(
    server: str | None, options: str, tmp_path: Path
) -> None:
    # Accepted by the driver itself: the store connects and answers with them.
    if server is None:
        url = f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}"
    else:
        found = servers.variable(server)
        if found is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"PAUSETOKEN_TEST_{server} is required in CI")
            pytest.skip(f"PAUSETOKEN_TEST_{server} is not set")
        url = found
    store = SQLAlchemyStore.from_url(f"{url}{'&' if '?' in url else '?'}{options}")
    try:
        await store.ensure_schema()
        await store.check()
        assert await store.status("no-such-pause") is None
    finally:
        await store.aclose()
