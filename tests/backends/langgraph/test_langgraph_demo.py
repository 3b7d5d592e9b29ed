"""`pausetoken demo`: every step checks itself and the exit status says so."""

from __future__ import annotations

import asyncio
import secrets
import sys
from typing import TYPE_CHECKING, Any

from langgraph.types import Command
from langgraph_support import postgresql_url

from pausetoken._cli import main
from pausetoken_langgraph import Resumed, _demo

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_the_demo_passes_every_step_on_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["demo", "--dir", str(tmp_path / "demo")])

    out = capsys.readouterr().out
    assert status == 0, out
    assert "PASS: 9/9 steps" in out
    assert "FAIL" not in out
    assert (tmp_path / "demo" / "checkpoints.db").exists()
    assert (tmp_path / "demo" / "tokens.db").exists()


def test_the_demo_passes_on_postgresql_checkpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    conninfo = postgresql_url()
    schema = f"pt_demo_{secrets.token_hex(6)}"

    async def admin(statement: str) -> None:
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            await conn.execute(statement)

    asyncio.run(admin(f"CREATE SCHEMA {schema}"))
    scoped = psycopg.conninfo.make_conninfo(conninfo, options=f"-c search_path={schema}")
    try:
        status = main(["demo", "--dir", str(tmp_path), "--checkpointer", _as_url(scoped)])
    finally:
        asyncio.run(admin(f"DROP SCHEMA {schema} CASCADE"))
    out = capsys.readouterr().out
    assert status == 0, out
    assert "AsyncPostgresSaver" in out


def _as_url(conninfo: str) -> str:
    from urllib.parse import quote

    import psycopg

    parts = psycopg.conninfo.conninfo_to_dict(conninfo)
    host, port, user = parts.get("host", "localhost"), parts.get("port", "5432"), parts["user"]
    password = f":{quote(str(parts['password']), safe='')}" if parts.get("password") else ""
    options = quote(str(parts["options"]), safe="")
    return f"postgresql://{user}{password}@{host}:{port}/{parts['dbname']}?options={options}"


def test_a_demo_step_that_misbehaves_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def unprotected(tokens: Any, graph: Any, token: str, response: Any, **_: Any) -> Any:
        # Resumes whatever is pending, without redeeming anything.
        state = await graph.aget_state({"configurable": {"thread_id": _thread(graph)}})
        ids = [pause.id for pause in state.interrupts]
        config = {"configurable": {"thread_id": _thread(graph)}}
        output = await graph.ainvoke(Command(resume=dict.fromkeys(ids, response)), config)
        return Resumed(output, replayed=False)

    threads: list[str] = []
    real_mint = _demo.mint_pending

    async def remember(tokens: Any, graph: Any, config: Any, **kwargs: Any) -> Any:
        threads.append(config["configurable"]["thread_id"])
        return await real_mint(tokens, graph, config, **kwargs)

    def _thread(graph: Any) -> str:
        return threads[-1]

    monkeypatch.setattr(_demo, "resume", unprotected)
    monkeypatch.setattr(_demo, "mint_pending", remember)

    status = main(["demo", "--dir", str(tmp_path)])

    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL a tampered token is refused" in out
    assert "FAIL: " in out


def test_the_demo_without_the_langgraph_distribution_names_the_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pausetoken_langgraph._demo", None)

    status = main(["demo", "--dir", str(tmp_path)])

    err = capsys.readouterr().err
    assert status == 2
    assert 'pip install "pausetoken[langgraph' in err
    assert "pausetoken-langgraph[sqlite]" in err


def test_an_unusable_checkpointer_url_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["demo", "--dir", str(tmp_path), "--checkpointer", "mongodb://nowhere"])

    assert status == 2
    assert "--checkpointer" in capsys.readouterr().err
