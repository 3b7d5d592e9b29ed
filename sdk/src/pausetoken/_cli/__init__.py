"""The ``pausetoken`` command line, one module per concern.

- `command`: what a subcommand is (the `Command` protocol) and the exit statuses;
- `catalog`: which commands there are, built in or installed through ``pausetoken.commands``;
- `main`: choosing, parsing, running and reporting;
- `output` and `hints`: how commands write, and what they say about errors;
- one module per command or family: `keygen`, `tokens` (inspect, status, revoke, with
  `token_input`), `store`, `backends`, `bench`.

Command authors use the public `pausetoken.cli`.
"""

from __future__ import annotations

from pausetoken._cli.catalog import COMMANDS
from pausetoken._cli.main import build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
