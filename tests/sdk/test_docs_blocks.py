"""The code in the READMEs and the documentation runs, and so does the core's example.

How blocks run, and how a deliberately partial one is marked: ``tests/docs_blocks.py``.
Pages that need the backends run in ``tests/backends/langgraph/test_langgraph_examples.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from docs_blocks import (
    BACKEND_PAGES,
    EXAMPLES,
    HTTP_PAGES,
    PRELUDES,
    ROOT,
    blocks,
    blocks_for,
    pages,
    run_block,
)
from pausetoken._install import PUBLISHED

if TYPE_CHECKING:
    from pathlib import Path

    from docs_blocks import Block

CORE_BLOCKS = blocks_for(backends=False)


@pytest.mark.parametrize("block", CORE_BLOCKS, ids=[block.id for block in CORE_BLOCKS])
def test_the_code_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_block(block, tmp_path, monkeypatch)


def test_blocks_are_found_on_every_page_that_has_them() -> None:
    for page in pages():
        fences = (ROOT / page).read_text(encoding="utf-8").count("```python")
        assert len(blocks(page)) == fences, page
    assert len(CORE_BLOCKS) >= 10


def test_the_lists_of_pages_and_examples_name_files_that_exist() -> None:
    assert BACKEND_PAGES | HTTP_PAGES | set(PRELUDES) <= set(pages())
    shipped = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob("examples/*.py"))
    assert sorted(EXAMPLES) == shipped


def test_a_partial_block_is_only_compiled_and_must_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = "<!-- docs-test: not run: a shape, not a program -->\n```python\nundefined()\n```\n"
    [block] = blocks("page.md", page)
    assert block.not_run == "a shape, not a program"
    run_block(block, tmp_path, monkeypatch)  # compiled, not run
    with pytest.raises(ValueError, match="REASON"):
        blocks("page.md", page.replace(": a shape, not a program", ""))
    [broken] = blocks("page.md", page.replace("undefined()", "undefined("))
    with pytest.raises(SyntaxError):
        run_block(broken, tmp_path, monkeypatch)


@pytest.mark.slow
def test_the_quickstart_runs_on_the_key_file_keygen_wrote(tmp_path: Path) -> None:
    keygen = [sys.executable, "-m", "pausetoken", "keygen", "-o", "pausetoken-keys.json"]
    subprocess.run(keygen, cwd=tmp_path, check=True, timeout=60)
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for line in (
        "tampered: refused token_signature_invalid",
        "foreign:  refused scope_mismatch",
        "replay:   refused already_redeemed",
    ):
        assert line in done.stdout


@pytest.mark.slow
def test_the_quickstart_without_a_key_file_says_how_to_make_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert "pausetoken keygen -o pausetoken-keys.json" in done.stderr


# -- install lines ---------------------------------------------------------------------------

_PIP_INSTALL = re.compile(r"pip install ([^`\n&;|]*)")
_UNPUBLISHED = re.compile(r'(?<![./\w-])"?(pausetoken(?:-[a-z]+)?)(\[|"|\s|$)')


@pytest.mark.skipif(PUBLISHED, reason="published: both forms of install line resolve")
@pytest.mark.parametrize("page", pages())
def test_install_lines_name_what_resolves_from_a_checkout(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    wrong = [
        line.group(0) for line in _PIP_INSTALL.finditer(text) if _UNPUBLISHED.search(line.group(1))
    ]
    assert wrong == [], f"{page} installs distributions that are not published yet"
