"""How commands write: tables with rich (the ``[cli]`` extra), JSON, and notes for people.

Standard output carries what a command produces (a table, JSON, a status, a count); what is
said to the person running it goes to standard error. rich is imported only by the commands
that draw, when they draw, so ``keygen``, ``status``, ``revoke`` and every ``--json`` output
work without it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import TYPE_CHECKING, Final

from pausetoken.exceptions import CommandLineError

if TYPE_CHECKING:
    import argparse

    from rich.console import Console

__all__ = ["cell", "console", "json_argument", "print_json", "require_rich", "say"]

#: Width of tables written to a pipe or a file rather than a terminal.
PIPED_WIDTH: Final = 200
#: Longest value shown in a table cell; longer values are cut with an ellipsis.
MAX_CELL: Final = 160


def require_rich(command: str, *modules: str, json_ok: bool = False) -> None:
    """Refuse, before any work, a command that draws with rich when rich is missing.

    Args:
        command: The command as typed after ``pausetoken`` (``"store check"``).
        *modules: rich modules the command needs besides ``rich.console``, ``rich.table``
            and ``rich.text``.
        json_ok: The command has a ``--json`` output, which needs no rich.

    Raises:
        ConfigurationError: ``cli_rich_missing``.
    """
    try:
        for module in ("rich.console", "rich.table", "rich.text", *modules):
            importlib.import_module(module)  # rich is an optional extra
    except ImportError as exc:
        msg = f"`pausetoken {command}` draws its output with rich, which is not installed"
        if json_ok:
            msg += " (its --json output needs no rich)"
        raise CommandLineError(msg, code=CommandLineError.CLI_RICH_MISSING) from exc


def console(*, stderr: bool = False) -> Console:
    """A rich console on standard output (or error), as wide as a pipe's reader needs.

    Args:
        stderr: Draw on standard error (progress bars) instead of standard output.

    Returns:
        The console; call `require_rich()` first.
    """
    from rich.console import Console  # noqa: PLC0415 - rich is an optional extra

    # Bound at call time so redirected streams (and tests capturing them) are honoured.
    stream = sys.stderr if stderr else sys.stdout
    # Piped output is read by programs and people alike: wide rows instead of folded cells.
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(file=stream, highlight=False, width=PIPED_WIDTH if piped else None)


def say(text: str) -> None:
    """Write a message for people to standard error (standard output stays machine-readable)."""
    sys.stderr.write(text + "\n")


def print_json(value: object) -> None:
    """Print ``value`` as JSON on standard output."""
    # ASCII only: control characters of hostile values arrive escaped, never raw.
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=True, default=str) + "\n")


def json_argument(parser: argparse.ArgumentParser) -> None:
    """Declare ``--json`` on a command's parser."""
    parser.add_argument(
        "--json", action="store_true", help="print JSON on standard output (needs no rich)"
    )


def cell(value: object) -> str:
    """Render a header or claim value safely: no markup, no control characters."""
    if value is None:
        return "-"
    if isinstance(value, str) and value.isprintable():
        text = value
    else:
        text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"
