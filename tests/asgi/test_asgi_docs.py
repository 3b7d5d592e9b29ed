"""The code blocks of the HTTP pages run (they need Starlette and httpx).

How blocks run, and how a deliberately partial one is marked: ``tests/docs_blocks.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from docs_blocks import HTTP_PAGES, blocks_for, pages, run_block

if TYPE_CHECKING:
    from pathlib import Path

    from docs_blocks import Block

HTTP_BLOCKS = blocks_for(http=True)


@pytest.mark.parametrize("block", HTTP_BLOCKS, ids=[block.id for block in HTTP_BLOCKS])
def test_the_code_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_block(block, tmp_path, monkeypatch)


def test_every_http_page_exists_and_has_blocks() -> None:
    assert set(HTTP_PAGES) <= set(pages())
    assert {block.page for block in HTTP_BLOCKS} == set(HTTP_PAGES)
