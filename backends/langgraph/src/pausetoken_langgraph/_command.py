"""``pausetoken demo``: the LangGraph demo, added to the ``pausetoken`` command line.

pausetoken-langgraph registers it in the ``pausetoken.commands`` entry-point group, the way
any distribution adds a command; the command line imports this module only when ``demo``
runs.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pausetoken.cli import (
    EXIT_OK,
    EXIT_REFUSED,
    FunctionCommand,
    check_store_url,
    console,
    require_rich,
)
from pausetoken.exceptions import CommandLineError
from pausetoken_langgraph._demo import run_demo
from pausetoken_langgraph._serve import serve_demo

if TYPE_CHECKING:
    import argparse

__all__ = ["demo"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir", metavar="DIR", help="keep the SQLite files here (default: a temporary directory)"
    )
    parser.add_argument(
        "--store", metavar="URL", help="token store URL (default: a SQLite file in the directory)"
    )
    parser.add_argument(
        "--checkpointer",
        metavar="URL",
        help="postgresql://... for LangGraph's AsyncPostgresSaver, or sqlite:///PATH "
        "(default: SQLite in the directory)",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="pause once, serve the approval page on 127.0.0.1 and print its link; resume "
        "when it is answered",
    )
    parser.add_argument(
        "--port", type=int, default=0, metavar="PORT", help="with --serve: the port (default: free)"
    )
    parser.add_argument(
        "--keep-serving",
        action="store_true",
        help="with --serve: keep serving after the answer, until Ctrl-C",
    )


def _run(args: argparse.Namespace) -> int:
    require_rich("demo")
    if args.store:
        check_store_url(args.store, where="--store")
    if not args.serve and (args.port or args.keep_serving):
        msg = "--port and --keep-serving go with --serve"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    if not 0 <= args.port <= 65535:  # noqa: PLR2004
        msg = "--port takes 0 (a free port) to 65535"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    with tempfile.TemporaryDirectory(prefix="pausetoken-demo-") as scratch:
        directory = Path(args.dir) if args.dir else Path(scratch)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create --dir {directory}: {exc.strerror or type(exc).__name__}"
            raise CommandLineError(msg, code=CommandLineError.CLI_USAGE) from exc
        if args.serve:
            passed = asyncio.run(
                serve_demo(
                    directory=directory,
                    store_url=args.store,
                    checkpointer_url=args.checkpointer,
                    console=console(),
                    port=args.port,
                    keep_serving=args.keep_serving,
                )
            )
        else:
            passed = asyncio.run(
                run_demo(
                    directory=directory,
                    store_url=args.store,
                    checkpointer_url=args.checkpointer,
                    console=console(),
                )
            )
    return EXIT_OK if passed else EXIT_REFUSED


demo: Final = FunctionCommand(
    "run a LangGraph approval flow end to end on SQLite", _arguments, _run
)
