"""A MongoDB-protocol server for the Mongo store tests.

With ``PAUSETOKEN_TEST_MONGODB_URL`` set, the tests run against that server (a genuine
MongoDB). Otherwise the session starts ``nx-27017`` (a MongoDB wire-protocol server on
SQLite; no genuine MongoDB can be installed where CI runs) with an in-memory database on a
free loopback port, and stops it at the end. Every test class or test gets its own
collection, dropped at the end of the session.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from mongo_support import DATABASE, new_collection
from pymongo import AsyncMongoClient, MongoClient
from pymongo.errors import PyMongoError

import servers
from pausetoken_mongo import MongoStore
from private_servers import free_port, nx_27017_command

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator


def _wait_until_up(url: str, server: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if server.poll() is not None:
            pytest.fail(f"nx-27017 exited with {server.returncode} before it served")
        client: MongoClient[dict[str, object]] = MongoClient(url, serverSelectionTimeoutMS=500)
        try:
            client.admin.command("ping")
        except PyMongoError:
            if time.monotonic() > deadline:
                pytest.fail(f"nx-27017 did not answer within {seconds:g} s")
            time.sleep(0.1)
        else:
            return
        finally:
            client.close()


@pytest.fixture(scope="session")
def mongodb_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's URL: the configured one, or an nx-27017 started for the session."""
    configured = servers.variable("MONGODB_URL")
    if configured:
        yield configured
        return
    command = nx_27017_command()
    if command is None:
        reason = (
            f"{servers.PREFIX}MONGODB_URL is not set and nx-27017 is not installed "
            "(pip install nx-27017): no MongoDB server to test against"
        )
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(reason)
        pytest.skip(reason)
    where = tmp_path_factory.mktemp("nx-27017")
    port = free_port()
    args = [command, "--db", "memory", "--host", "127.0.0.1", "-p", str(port)]
    args += ["--log-file", str(where / "server.log"), "--pid-file", str(where / "server.pid")]
    with (where / "stdout.log").open("wb") as output:
        server = subprocess.Popen(args, stdout=output, stderr=subprocess.STDOUT)
    url = f"mongodb://127.0.0.1:{port}/{DATABASE}"
    try:
        _wait_until_up(url, server, 30)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="session")
def collections(mongodb_url: str) -> Iterator[list[str]]:
    """Collections the tests made, dropped once at the end of the session."""
    made: list[str] = []
    yield made

    async def drop() -> None:
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(mongodb_url)
        try:
            database = client.get_default_database(default=DATABASE)
            for name in made:
                await database.drop_collection(name)
        finally:
            await client.close()

    asyncio.run(drop())


@pytest.fixture
def collection(collections: list[str]) -> str:
    return new_collection(collections)


@pytest.fixture
async def store(mongodb_url: str, collection: str) -> AsyncIterator[MongoStore]:
    store = MongoStore.from_url(mongodb_url, collection=collection)
    await store.check()
    yield store
    await store.aclose()
