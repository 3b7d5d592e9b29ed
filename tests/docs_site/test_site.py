"""The built documentation site: what a reader sees, checked in the HTML.

Run by the ``docs`` nox session after ``mkdocs build --strict``, with ``PAUSETOKEN_SITE_DIR``
naming the built site.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

SITE = Path(os.environ.get("PAUSETOKEN_SITE_DIR", "site"))
# Sphinx roles (``:class:`X```) that mkdocstrings would show as raw text.
RAW_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj):`")
# reStructuredText directives that were meant to become code blocks.
RAW_DIRECTIVE = re.compile(r"\.\. (?:code-block|code|doctest)::")


def pages() -> list[Path]:
    if not SITE.is_dir():
        pytest.fail(f"no built site at {SITE}: run mkdocs build first (nox -s docs does)")
    return sorted(SITE.rglob("*.html"))


def text_of(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_no_page_shows_a_raw_sphinx_role_or_directive() -> None:
    found = {
        str(page.relative_to(SITE)): hits
        for page in pages()
        if (hits := RAW_ROLE.findall(text_of(page)) + RAW_DIRECTIVE.findall(text_of(page)))
    }
    assert found == {}


def test_no_docstring_example_is_rendered_as_nested_quotes() -> None:
    reference = SITE / "reference" / "index.html"
    assert "<blockquote>" not in reference.read_text(encoding="utf-8")


def test_the_reference_opens_with_the_service() -> None:
    reference = (SITE / "reference" / "index.html").read_text(encoding="utf-8")
    objects = re.findall(r'<h3[^>]*id="(pausetoken[\w.]*)"', reference)
    assert objects[:2] == ["pausetoken.PauseTokens", "pausetoken.Settings"]


def test_build_code_is_not_published() -> None:
    assert not (SITE / "hooks.py").exists()
