"""The OpenAI Agents SDK page's code blocks and the example run.

The page's blocks are marked as not run for the core session (it does not install the
Agents SDK); this session does, and runs them as ``tests/docs_blocks.py`` runs any block.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import attrs
import pytest

from docs_blocks import ROOT, blocks, run_block

if TYPE_CHECKING:
    from pathlib import Path

    from docs_blocks import Block

PAGE_BLOCKS = [attrs.evolve(block, not_run=None) for block in blocks("docs/openai-agents.md")]
EXAMPLE = ROOT / "examples" / "openai_agents_approval.py"


def test_the_page_has_code_to_run() -> None:
    assert PAGE_BLOCKS


@pytest.mark.parametrize("block", PAGE_BLOCKS, ids=[block.id for block in PAGE_BLOCKS])
def test_the_code_block_runs(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_block(block, tmp_path, monkeypatch)
    printed = capsys.readouterr().out
    # The tool ran once although the decision was sent twice.
    assert printed.count("refund paid:") == 1
    assert "The refund is done." in printed


@pytest.mark.slow
def test_the_example_runs_every_step_as_expected(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAUSETOKEN_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "PASS: every step as expected"
    assert not [line for line in lines if line.startswith("FAIL")]
    assert (tmp_path / "pausetoken.db").exists()
