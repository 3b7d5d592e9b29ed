"""mkdocs hooks: tables that are read from the code instead of being kept by hand.

``<!-- pausetoken:errors -->`` in a page becomes the table of every error class in
:mod:`pausetoken.exceptions` with its code, HTTP status and meaning.
"""

from __future__ import annotations

import inspect
from typing import Any

from pausetoken import exceptions

ERRORS_MARKER = "<!-- pausetoken:errors -->"


def error_classes() -> list[type[Any]]:
    """Every public error class of ``pausetoken.exceptions``, in the order it defines them."""
    return [
        value
        for name, value in vars(exceptions).items()
        if name in exceptions.__all__
        and inspect.isclass(value)
        and issubclass(value, exceptions.PauseTokenError)
    ]


def errors_table() -> str:
    """The Markdown table of error classes: class, code, HTTP status, meaning."""
    rows = [
        "| Error | `code` | HTTP status | Meaning |",
        "|---|---|---:|---|",
    ]
    for cls in error_classes():
        summary = (inspect.getdoc(cls) or "").strip().splitlines()[0]
        rows.append(f"| `{cls.__name__}` | `{cls.default_code}` | {cls.http_status} | {summary} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    """Replace the markers of generated tables."""
    if ERRORS_MARKER in markdown:
        markdown = markdown.replace(ERRORS_MARKER, errors_table())
    return markdown
