"""Adding a command to ``pausetoken``: what a command is, and what commands draw with.

A distribution adds ``pausetoken NAME`` by registering an object that follows `Command`
(help, arguments, run) under ``NAME`` in the ``pausetoken.commands`` entry-point group,
exactly as pausetoken-langgraph adds ``pausetoken demo``:

```toml
[project.entry-points."pausetoken.commands"]
hello = "acme_tools.cli:hello"
```

```python
from pausetoken.cli import EXIT_OK, FunctionCommand


def arguments(parser):
    parser.add_argument("--name", default="world")


def run(args):
    print(f"hello {args.name}")
    return EXIT_OK


hello = FunctionCommand("say hello", arguments, run)
```

The module is imported only when its command runs; ``pausetoken --help`` lists the
command by name with the distribution that provides it. Errors raised from ``run`` as
[`PauseTokenError`][pausetoken.exceptions.PauseTokenError] are reported like those of the
built-in commands. The documentation's Command line page, "Adding a command", says more.
"""

from __future__ import annotations

from pausetoken._cli.command import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    GROUP,
    Command,
    FunctionCommand,
    debug_parent,
)
from pausetoken._cli.output import console, require_rich
from pausetoken._cli.store import check_store_url

__all__ = [
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "GROUP",
    "Command",
    "FunctionCommand",
    "check_store_url",
    "console",
    "debug_parent",
    "require_rich",
]
