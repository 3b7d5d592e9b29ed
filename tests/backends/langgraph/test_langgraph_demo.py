"""`pausetoken demo`: every step checks itself and the exit status says so."""

from __future__ import annotations

import asyncio
import importlib.metadata
import secrets
import socket
import sys
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.types import Command
from langgraph_support import postgresql_url

from pausetoken import cli
from pausetoken._cli import main
from pausetoken._install import install_hint
from pausetoken_langgraph import Resumed, _demo

if TYPE_CHECKING:
    from pathlib import Path


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


def test_the_demo_is_a_command_the_langgraph_distribution_adds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    [entry_point] = importlib.metadata.entry_points(group=cli.GROUP, name="demo")
    assert entry_point.dist is not None
    assert entry_point.dist.name == "pausetoken-langgraph"
    assert isinstance(entry_point.load(), cli.Command)
    assert main(["--help"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["demo"]]
    assert "from pausetoken-langgraph" in line


def test_the_demo_without_rich_names_the_cli_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("rich", "rich.console", "rich.table", "rich.text"):
        monkeypatch.setitem(sys.modules, name, None)

    status = main(["demo", "--dir", str(tmp_path)])

    err = capsys.readouterr().err
    assert status == 2
    assert "error [cli_rich_missing] `pausetoken demo` draws its output with rich" in err
    assert f"hint: {install_hint('pausetoken[cli]')}" in err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "mongodb://nowhere",
            (
                "--checkpointer takes postgresql://USER@HOST/DB or sqlite:///PATH "
                "(got a mongodb:// URL)"
            ),
        ),
        (
            "postgresql+asyncpg://app@db/x",
            (
                "--checkpointer: LangGraph's AsyncPostgresSaver connects with psycopg; write "
                "postgresql://... (not postgresql+asyncpg://)"
            ),
        ),
        (
            "sqlite:////pausetoken-no-such-directory/checkpoints.db",
            (
                "--checkpointer sqlite:////pausetoken-no-such-directory/checkpoints.db: the "
                "directory /pausetoken-no-such-directory does not exist"
            ),
        ),
    ],
    ids=["other-scheme", "asyncpg", "missing-directory"],
)
def test_an_unusable_checkpointer_url_is_refused_before_anything_is_printed(
    url: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["demo", "--dir", str(tmp_path), "--checkpointer", url])

    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert f"pausetoken demo: error [cli_usage] {message}" in err
    assert "hint: Run pausetoken demo --help for the arguments." in err


def test_a_checkpointer_that_refuses_says_what_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langgraph.checkpoint.postgres.aio")
    port = _free_port()
    url = f"postgresql://app:hunter2@127.0.0.1:{port}/tokens"

    status = main(["demo", "--dir", str(tmp_path), "--checkpointer", url])

    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert (
        "pausetoken demo: error [demo_checkpointer_failed] cannot open the LangGraph "
        f"checkpointer (AsyncPostgresSaver postgresql://app:***@127.0.0.1:{port}/tokens)"
    ) in err
    assert f"cause: connection refused on 127.0.0.1:{port}" in err
    assert "unexpected" not in err
    assert "hunter2" not in err


def test_a_store_that_refuses_says_what_failed_before_anything_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()
    url = f"postgresql+asyncpg://app:hunter2@127.0.0.1:{port}/tokens"

    status = main(["demo", "--dir", str(tmp_path), "--store", url])

    out, err = capsys.readouterr()
    assert status == 1
    assert out == ""
    assert "pausetoken demo: error [store_unavailable]" in err
    assert f"cause: connection refused on 127.0.0.1:{port}" in err
    assert "hunter2" not in err


def test_a_postgres_store_url_suggests_postgresql(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["demo", "--dir", str(tmp_path), "--store", "postgres://app:hunter2@db/x"])

    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert (
        "error [unknown_backend] --store: postgres:// names no store; did you mean "
        "postgresql+asyncpg://app:***@db/x"
    ) in err
    assert "hunter2" not in err


def test_an_unusable_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("")

    status = main(["demo", "--dir", str(taken / "demo")])

    assert status == 2
    assert f"error [cli_usage] cannot create --dir {taken / 'demo'}: " in capsys.readouterr().err
