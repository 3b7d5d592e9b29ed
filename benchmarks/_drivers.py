"""Raw driver connections for the baselines: what a hand-written store would open."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import URL


async def connect(family: str, url: URL, *, wal: bool = False) -> Any:
    """One autocommit connection on the raw async driver of ``family``.

    ``postgresql`` (asyncpg), ``mysql`` (asyncmy) or ``sqlite`` (aiosqlite, with a busy
    timeout, and in WAL mode with ``wal``). Drivers are imported here, so a benchmark of
    another engine runs without them.
    """
    if family == "postgresql":
        import asyncpg  # type: ignore[import-untyped]  # noqa: PLC0415

        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return await asyncpg.connect(dsn)
    if family == "mysql":
        import asyncmy  # noqa: PLC0415

        return await asyncmy.connect(
            host=url.host,
            port=url.port or 3306,
            user=url.username,
            password=url.password or "",
            db=url.database,
            autocommit=True,
        )
    import aiosqlite  # noqa: PLC0415

    conn = await aiosqlite.connect(url.database or "", isolation_level=None)
    await conn.execute("PRAGMA busy_timeout = 30000")
    if wal:
        await conn.execute("PRAGMA journal_mode = WAL")
    return conn
