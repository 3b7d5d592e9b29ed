"""``check()`` at start-up and the operation timeout: a misconfigured store is a
``ConfigurationError`` naming the cause, an unreachable one ``StoreUnavailable``, and no
operation outlives its ``timeout``, connecting included."""

from __future__ import annotations

import asyncio
import secrets
import socket
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy_support import claim_request, new_pause_key

from pausetoken.exceptions import ConfigurationError, StoreUnavailable
from pausetoken_sqlalchemy import SCHEMA_TABLE_NAME, SQLAlchemyStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

PASSWORD = "s3cr3t-Pw-x9"
TIMEOUT = 1.5


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["postgresql", "mysql"])
def engine_name(request: pytest.FixtureRequest) -> str:
    """Servers only (overrides the conftest's engines): these need a network or users."""
    return str(request.param)


async def _admin(url: str, *statements: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


@pytest.fixture
async def read_only_url(engine_name: str, url: str, table_name: str) -> AsyncIterator[str]:
    """A URL for a user who may read the store's tables but not write them."""
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as owner:
        await owner.check()
    user = f"pt_ro_{secrets.token_hex(4)}"
    tables = f"{table_name}, {SCHEMA_TABLE_NAME}"
    if engine_name == "postgresql":
        create = [f"CREATE ROLE {user} LOGIN", f"GRANT SELECT ON {tables} TO {user}"]
        drop = [f"REVOKE ALL ON {tables} FROM {user}", f"DROP ROLE {user}"]
        ro_url = make_url(url).set(username=user, password=None)
    else:
        database = make_url(url).database
        create = [
            f"CREATE USER '{user}'@'%' IDENTIFIED BY '{PASSWORD}'",
            f"GRANT SELECT ON {database}.* TO '{user}'@'%'",
        ]
        drop = [f"DROP USER '{user}'@'%'"]
        ro_url = make_url(url).set(username=user, password=PASSWORD)
    await _admin(url, *create)
    try:
        yield ro_url.render_as_string(hide_password=False)
    finally:
        await _admin(url, *drop)


# -- check() -------------------------------------------------------------------------------


async def test_check_names_a_database_that_does_not_exist(url: str) -> None:
    missing = f"nope_{secrets.token_hex(4)}"
    wrong = make_url(url).set(database=missing).render_as_string(hide_password=False)
    async with SQLAlchemyStore.from_url(wrong, timeout=10) as store:
        with pytest.raises(ConfigurationError) as caught:
            await store.check()
    assert caught.value.code == "store_misconfigured"
    assert missing in caught.value.detail
    assert "does not exist" in caught.value.detail
    assert "\n" not in caught.value.detail


async def test_check_of_a_port_nobody_listens_on_is_unavailable(url: str) -> None:
    refused = make_url(url).set(host="127.0.0.1", port=_free_port(), password=PASSWORD)
    async with SQLAlchemyStore.from_url(refused, timeout=10) as store:
        with pytest.raises(StoreUnavailable) as caught:
            await store.check()
    assert PASSWORD not in str(caught.value)


async def test_check_refuses_a_user_who_may_only_read(read_only_url: str, table_name: str) -> None:
    async with SQLAlchemyStore.from_url(read_only_url, table_name=table_name) as store:
        with pytest.raises(ConfigurationError) as caught:
            await store.check()
    assert caught.value.code == "store_misconfigured"
    assert "permission denied" in caught.value.detail
    assert PASSWORD not in str(caught.value)
    assert "\n" not in caught.value.detail


@pytest.mark.parametrize("engine_name", ["mysql"])  # trust authentication on PostgreSQL here
async def test_check_names_a_wrong_password_without_showing_it(
    read_only_url: str, table_name: str
) -> None:
    wrong = make_url(read_only_url).set(password="not-" + PASSWORD)
    async with SQLAlchemyStore.from_url(wrong, table_name=table_name) as store:
        with pytest.raises(ConfigurationError) as caught:
            await store.check()
    assert caught.value.code == "store_misconfigured"
    assert "authentication failed" in caught.value.detail
    assert PASSWORD not in str(caught.value)


async def test_check_names_a_sqlite_file_that_cannot_be_opened(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/no/such/directory/tokens.db"
    async with SQLAlchemyStore.from_url(url) as store:
        with pytest.raises(ConfigurationError) as caught:
            await store.check()
    assert caught.value.code == "store_misconfigured"
    assert "unable to open" in caught.value.detail


# -- timeout: a network partition ----------------------------------------------------------


@pytest.fixture
async def black_hole() -> AsyncIterator[int]:
    """A loopback port that accepts connections and never sends a byte back."""
    accepted: list[asyncio.StreamWriter] = []

    async def swallow(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


@pytest.mark.slow  # five operations, each waiting out its timeout
async def test_every_operation_fails_closed_within_its_timeout_in_a_partition(
    url: str, table_name: str, black_hole: int
) -> None:
    silent = make_url(url).set(host="127.0.0.1", port=black_hole)
    now = _now()
    async with SQLAlchemyStore.from_url(silent, table_name=table_name, timeout=TIMEOUT) as store:
        for name, op in [
            ("check", store.check),
            ("claim", lambda: store.claim(claim_request(new_pause_key(), now=now))),
            ("status", lambda: store.status(new_pause_key())),
            ("ensure_schema", store.ensure_schema),
            ("claim again", lambda: store.claim(claim_request(new_pause_key(), now=now))),
        ]:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable) as caught:
                await asyncio.wait_for(op(), TIMEOUT * 10)  # a hang fails here, not forever
            took = time.monotonic() - started
            assert took < TIMEOUT * 3, (name, took)
            assert "timed out" in caught.value.detail, name
