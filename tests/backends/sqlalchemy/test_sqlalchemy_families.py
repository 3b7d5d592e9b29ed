"""The engine families: which one serves a URL, what each holds, and the revoke retry."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from pausetoken.exceptions import StoreUnavailable
from pausetoken.plugins import PauseRecord, PauseState
from pausetoken_sqlalchemy import SQLAlchemyStore
from pausetoken_sqlalchemy._connections import PooledConnections, SharedConnection
from pausetoken_sqlalchemy._engines import family_for_url, family_of
from pausetoken_sqlalchemy._sqlite import SqliteStatements

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("url", "family", "drivername"),
    [
        ("sqlite:///t.db", "sqlite", "sqlite+aiosqlite"),
        ("postgresql://u@h/db", "postgresql", "postgresql+asyncpg"),
        ("postgres://u@h/db", "postgresql", "postgresql+asyncpg"),
        ("mysql+asyncmy://u@h/db", "mysql", "mysql+asyncmy"),
        ("mariadb://u@h/db", "mysql", "mariadb+asyncmy"),
    ],
)
def test_each_url_is_served_by_its_engine_family_on_its_driver(
    url: str, family: str, drivername: str
) -> None:
    parsed, found = family_for_url(url)
    assert (found.name, parsed.drivername) == (family, drivername)


async def test_an_engine_the_application_made_is_served_by_its_family(tmp_path: Path) -> None:
    engine = create_async_engine(f"mariadb+asyncmy://u@127.0.0.1:1/db?x={tmp_path.name}")
    try:
        assert family_of(engine).name == "mysql"
    finally:
        await engine.dispose()


async def test_sqlite_shares_one_connection_and_servers_hold_a_pool(tmp_path: Path) -> None:
    async with SQLAlchemyStore.from_url(f"sqlite+aiosqlite:///{tmp_path}/t.db") as store:
        assert isinstance(store._connections, SharedConnection)
    async with SQLAlchemyStore.from_url("postgresql+asyncpg://u@127.0.0.1:1/db") as store:
        assert isinstance(store._connections, PooledConnections)


# -- the revoke retry, written once for every engine -----------------------------------------

_REVOKED = PauseRecord(
    pause_key="key",
    state=PauseState.REVOKED,
    scope_hash="a" * 64,
    name="approval",
    expires_at=datetime(2030, 1, 1, tzinfo=UTC),
    response_hash=None,
    lease_id=None,
    lease_until=None,
)


def _revoking(answers: list[PauseRecord | None], stamps: list[int]) -> SqliteStatements:
    statements = SqliteStatements('"t"')

    async def revoke_once(_conn: Any, _key: bytes, *, stamp: int, **_values: Any) -> Any:
        stamps.append(stamp)
        return answers.pop(0)

    statements._revoke_once = revoke_once  # type: ignore[method-assign]
    return statements


async def _revoke(statements: SqliteStatements) -> PauseRecord:
    return await statements.revoke(
        None, b"key", scope_hash="a" * 64, name="approval", expires_at_us=1, now_us=0
    )


async def test_a_revoke_whose_row_vanished_before_it_was_read_is_made_again() -> None:
    stamps: list[int] = []
    statements = _revoking([None, None, _REVOKED], stamps)
    assert await _revoke(statements) is _REVOKED
    assert len(stamps) == len(set(stamps)) == 3  # every attempt writes a fresh stamp


async def test_a_revoke_whose_row_keeps_vanishing_fails_closed() -> None:
    stamps: list[int] = []
    statements = _revoking([None] * 10, stamps)
    with pytest.raises(StoreUnavailable, match="kept changing"):
        await _revoke(statements)
    assert len(stamps) == 4
