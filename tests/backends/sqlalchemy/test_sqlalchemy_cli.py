"""``pausetoken store check`` and ``store purge`` on the real engines."""

from __future__ import annotations

import secrets
import socket
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy.engine import make_url

from pausetoken._cli import main
from pausetoken.exceptions import StoreMisconfigured

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def test_store_check_passes_on_every_engine(
    url: str, table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "check", f"{url}?table_name={table_name}"]) == 0
    out = capsys.readouterr().out
    for step in ("schema", "check", "concurrent claims", "purge"):
        assert step in out
    assert "FAIL" not in out
    assert "not run" not in out


def test_store_check_says_whether_it_created_the_schema(
    url: str, table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"{url}?table_name={table_name}"
    assert main(["store", "check", target]) == 0
    assert "created" in capsys.readouterr().out
    assert main(["store", "check", target]) == 0
    assert "already present" in capsys.readouterr().out


def test_store_purge_runs_on_every_engine(
    url: str, table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"{url}?table_name={table_name}"
    assert main(["store", "check", target]) == 0
    capsys.readouterr()
    assert main(["store", "purge", target, "--before", "1h"]) == 0
    assert capsys.readouterr().out.strip() == "0"  # the check's rows are still live


@pytest.fixture(params=["postgresql", "mysql"])
def server(request: pytest.FixtureRequest, url_for: Callable[[str], str]) -> str:
    """The URL of a database server (SQLite has none to be missing or to refuse)."""
    return url_for(str(request.param))


def test_store_check_of_a_missing_database_names_it(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server
    name = f"pt_missing_{secrets.token_hex(4)}"
    missing = make_url(url).set(database=name)
    target = missing.render_as_string(hide_password=False)
    assert main(["store", "check", target]) == 2
    captured = capsys.readouterr()
    said = (
        f'database "{name}" does not exist'
        if missing.get_backend_name() == "postgresql"
        else f"Unknown database '{name}'"
    )
    assert (
        f'pausetoken store check: error [store_misconfigured] stopped at step "schema": {said}'
    ) in captured.err
    assert said in captured.out
    assert captured.out.count("not run") == 6
    assert f"hint: {StoreMisconfigured.actions['store_misconfigured']}" in captured.err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_store_check_of_a_refused_connection_names_the_address(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server
    port = _free_port()
    target = make_url(url).set(host="127.0.0.1", port=port).render_as_string(hide_password=False)
    assert main(["store", "check", target]) == 1
    err = capsys.readouterr().err
    assert (
        "pausetoken store check: error [store_unavailable] stopped at step "
        f'"schema": connection refused on 127.0.0.1:{port}'
    ) in err
    assert "hint: check that the database server is running" in err


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda tmp: tmp / "no-such-directory" / "tokens.db",
            "unable to open database file: the directory {tmp}/no-such-directory does not exist",
        ),
        (lambda tmp: tmp, "unable to open database file"),
        (lambda tmp: _garbage(tmp / "garbage.db"), "file is not a database"),
    ],
    ids=["missing-directory", "a-directory", "not-a-database"],
)
def test_store_check_of_an_unusable_sqlite_file_says_why(
    make: object, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    assert main(["store", "check", f"sqlite+aiosqlite:///{path}"]) == 2
    err = capsys.readouterr().err
    assert (
        "pausetoken store check: error [store_misconfigured] stopped at step "
        f'"schema": {said.format(tmp=tmp_path)}'
    ) in err


def test_a_directory_named_as_the_sqlite_file_is_refused_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # aiosqlite stops a failed connection's thread without waiting for it: once the command's
    # event loop is closed, that thread raises "Event loop is closed" into whatever runs next.
    import aiosqlite

    attempts: list[object] = []
    connect = aiosqlite.connect

    def counted(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        return connect(*args, **kwargs)

    monkeypatch.setattr(aiosqlite, "connect", counted)
    assert main(["store", "check", f"sqlite+aiosqlite:///{tmp_path}"]) == 2
    assert attempts == []
    assert f"unable to open database file: {tmp_path} is a directory" in capsys.readouterr().err


def _garbage(path: Path) -> Path:
    path.write_bytes(secrets.token_bytes(4096))
    return path
