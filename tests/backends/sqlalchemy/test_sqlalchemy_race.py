"""Eight OS processes claim the same tokens: exactly one ``CLAIMED`` per token, none lost.

Every process opens the store by URL on a table that does not exist yet, so the schema
creation races too. ``PAUSETOKEN_RACE_TOKENS`` sets the number of tokens (default 2,000,
the figure the store is held to); starting the eight interpreters costs more than the claims.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from sqlalchemy import func, select
from sqlalchemy_support import new_pause_key

from pausetoken.testing import race_processes
from pausetoken_sqlalchemy import SQLAlchemyStore

PROCESSES = 8
TOKENS = int(os.environ.get("PAUSETOKEN_RACE_TOKENS") or 2000)


@pytest.mark.slow  # eight interpreters and 2,000 claims each
async def test_processes_racing_for_the_same_tokens_get_exactly_one_winner_each(
    url: str, table_name: str
) -> None:
    keys = [new_pause_key() for _ in range(TOKENS)]
    counts = await asyncio.to_thread(
        race_processes,
        url,
        keys,
        processes=PROCESSES,
        # Every claim of a process shares one SQLite connection: the last of 2,000 waits
        # behind the others, longer than the default per-operation timeout.
        options={"table_name": table_name, "timeout": 120},
        timeout=600,
    )
    assert counts == dict.fromkeys(keys, 1)

    store = SQLAlchemyStore.from_url(url, table_name=table_name)
    try:
        async with store.engine.connect() as conn:
            query = select(store.table.c.state, func.count()).group_by(store.table.c.state)
            rows = (await conn.execute(query)).all()
    finally:
        await store.aclose()
    assert [tuple(row) for row in rows] == [("claimed", TOKENS)]
