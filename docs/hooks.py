"""mkdocs hooks: tables that are read from the code instead of being kept by hand.

``<!-- pausetoken:error-summary -->`` and ``<!-- pausetoken:error-codes -->`` build the
Errors page: a table of the classes with what to do about each, then one section per class
listing every code it declares (``codes``) with its meaning and what to do (``actions``).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from pausetoken import exceptions

ERROR_SUMMARY_MARKER = "<!-- pausetoken:error-summary -->"
ERROR_CODES_MARKER = "<!-- pausetoken:error-codes -->"

# Sphinx roles in docstrings (":meth:`~pausetoken.PauseTokens.status`") read as code here.
_ROLE = re.compile(r":[a-z]+:`~?(?:[\w.]+\.)?([^`.]+)`")
# Declared meanings and actions are plain text: these characters would read as Markdown.
_PLAIN = str.maketrans({"[": "\\[", "]": "\\]", "*": "\\*", "<": "&lt;", "`": "\\`"})


def _plain(text: str) -> str:
    """Plain text as Markdown that shows it as written."""
    return text.translate(_PLAIN)


def error_classes() -> list[type[Any]]:
    """Every public error class of ``pausetoken.exceptions``, in the order it defines them."""
    return [
        value
        for name, value in vars(exceptions).items()
        if name in exceptions.__all__
        and inspect.isclass(value)
        and issubclass(value, exceptions.PauseTokenError)
    ]


def _description(cls: type[Any]) -> str:
    """The first paragraph of the class's docstring, on one line."""
    first = (inspect.getdoc(cls) or "").strip().split("\n\n", 1)[0]
    return _ROLE.sub(r"``\1``", " ".join(first.split()))


def error_summary() -> str:
    """One row per error class: its HTTP status, title and what to do about it."""
    rows = [
        "| Error | HTTP status | Title | What to do |",
        "|---|---:|---|---|",
    ]
    for cls in error_classes():
        name = cls.__name__
        rows.append(
            f"| [`{name}`](#{name.lower()}) | {cls.http_status} | {cls.title} | "
            f"{_plain(cls.action)} |"
        )
    return "\n".join(rows)


def _shared_codes() -> dict[str, list[type[Any]]]:
    """Codes declared by more than one class, with those classes."""
    owners: dict[str, list[type[Any]]] = {}
    for cls in error_classes():
        for code in cls.codes:
            owners.setdefault(code, []).append(cls)
    return {code: classes for code, classes in owners.items() if len(classes) > 1}


def error_codes() -> str:
    """One section per error class with every code it declares, its meaning and action."""
    shared = _shared_codes()
    parts = []
    for cls in error_classes():
        name = cls.__name__
        bases = ", ".join(f"`{base.__name__}`" for base in cls.__bases__)
        parts += [
            f"### {name}",
            "",
            (
                f"[`{name}`][pausetoken.exceptions.{name}]: HTTP **{cls.http_status}**, "
                f'title "{cls.title}", derives from {bases}. {_description(cls)}'
            ),
            "",
            f"**What to do:** {_plain(cls.action)}",
            "",
            "| `code` | Meaning | What to do |",
            "|---|---|---|",
        ]
        for code, meaning in cls.codes.items():
            also = [other for other in shared.get(code, []) if other is not cls]
            note = "".join(
                f" (Also a code of [`{o.__name__}`](#{o.__name__.lower()}), {o.http_status}.)"
                for o in also
            )
            parts.append(f"| `{code}` | {_plain(meaning)}{note} | {_plain(cls.actions[code])} |")
        parts.append("")
    return "\n".join(parts).rstrip("\n")


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    """Replace the markers of generated tables."""
    if ERROR_SUMMARY_MARKER in markdown:
        markdown = markdown.replace(ERROR_SUMMARY_MARKER, error_summary())
    if ERROR_CODES_MARKER in markdown:
        markdown = markdown.replace(ERROR_CODES_MARKER, error_codes())
    return markdown
