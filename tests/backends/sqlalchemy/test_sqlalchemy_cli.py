"""``pausetoken store check`` and ``store purge`` on the real engines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pausetoken._cli import main

if TYPE_CHECKING:
    import pytest


def test_store_check_passes_on_every_engine(
    url: str, table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "check", f"{url}?table_name={table_name}"]) == 0
    out = capsys.readouterr().out
    for step in ("check", "concurrent claims", "purge"):
        assert step in out
    assert "FAIL" not in out


def test_store_purge_runs_on_every_engine(
    url: str, table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"{url}?table_name={table_name}"
    assert main(["store", "check", target]) == 0
    capsys.readouterr()
    assert main(["store", "purge", target, "--before", "1h"]) == 0
    assert capsys.readouterr().out.strip() == "0"  # the check's rows are still live
