"""The LangGraph example and the code blocks of the pages that need the backends run.

How blocks run, and how a deliberately partial one is marked: ``tests/docs_blocks.py``.
This session installs pausetoken-sqlalchemy and pausetoken-langgraph, which those pages use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from docs_blocks import ROOT, blocks_for, run_block, write_key_file

if TYPE_CHECKING:
    from pathlib import Path

    from docs_blocks import Block

BACKEND_BLOCKS = blocks_for(backends=True)
APPROVAL = ROOT / "examples" / "langgraph_approval.py"


@pytest.mark.parametrize("block", BACKEND_BLOCKS, ids=[block.id for block in BACKEND_BLOCKS])
def test_the_code_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_block(block, tmp_path, monkeypatch)


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAUSETOKEN_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the example starts three interpreters
    return {**env, **extra}


@pytest.mark.slow
def test_the_approval_example_mints_in_one_process_and_resumes_in_another(tmp_path: Path) -> None:
    keys = write_key_file(tmp_path / "keys.json")
    done = subprocess.run(
        [sys.executable, str(APPROVAL), "--dir", str(tmp_path / "run")],
        env=_environment(PAUSETOKEN_KEYS_FILE=str(keys)),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "PASS: every step as expected"
    assert not [line for line in lines if line.startswith("FAIL")]
    minted, resumed = (int(line.split()[2]) for line in lines if line.startswith("PASS process"))
    assert len({minted, resumed, os.getpid()}) == 3  # three OS processes
    assert (tmp_path / "run" / "refunds-paid.txt").read_text() == "order-42\n"


@pytest.mark.slow
def test_the_approval_steps_run_one_by_one_and_refuse_a_second_answer(tmp_path: Path) -> None:
    keys = write_key_file(tmp_path / "keys.json")
    env = _environment(PAUSETOKEN_KEYS_FILE=str(keys))

    def step(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(APPROVAL), *args, "--dir", str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    minted = step("mint", "--order", "order-7")
    assert minted.returncode == 0, minted.stderr
    token = json.loads(minted.stdout)["token"]
    first = step("resume", token, '{"approved": false}')
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["status"] == "rejected"
    other = step("resume", token, '{"approved": true}')
    assert other.returncode == 1
    assert json.loads(other.stdout)["refused"] == "already_redeemed"
    assert not (tmp_path / "refunds-paid.txt").exists()


@pytest.mark.slow
def test_a_step_without_a_key_file_says_how_to_make_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(APPROVAL), "mint", "--dir", str(tmp_path)],
        env=_environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1
    assert "pausetoken keygen -o FILE" in done.stderr
