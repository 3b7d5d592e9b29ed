"""The example and the code blocks of docs/agui.md run.

How blocks run: ``tests/docs_blocks.py``. The page's blocks need this distribution, which
only its own session installs, so they run here.
"""

from __future__ import annotations

import runpy
from typing import TYPE_CHECKING

import attrs
import pytest

from docs_blocks import ROOT, blocks, run_block

if TYPE_CHECKING:
    from pathlib import Path

    from docs_blocks import Block

PAGE = "docs/agui.md"
PAGE_BLOCKS = blocks(PAGE)
EXAMPLE = ROOT / "examples" / "agui_approval.py"


def test_the_page_has_a_runnable_block() -> None:
    assert PAGE_BLOCKS


@pytest.mark.parametrize("block", PAGE_BLOCKS, ids=[block.id for block in PAGE_BLOCKS])
def test_the_code_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Marked "not run" for the sessions without this distribution; run here in full.
    assert block.not_run is not None
    run_block(attrs.evolve(block, not_run=None), tmp_path, monkeypatch)


def test_the_example_checks_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "PASS: every step as expected"
    assert not [line for line in lines if line.startswith("FAIL")]
    assert len([line for line in lines if line.startswith("PASS ")]) == 10
