"""The ``pausetoken`` entry point: choose the command, parse its arguments, report its errors.

Only the chosen command is loaded and declares its arguments; the others are listed by
name (`Catalog`), so ``pausetoken --help`` imports no command's module. Exit statuses: 0
success, 1 a token was refused (or a check failed), 2 a usage or configuration error.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import TYPE_CHECKING, Any, Final

from pausetoken._cli.catalog import Catalog
from pausetoken._cli.command import EXIT_REFUSED, EXIT_USAGE, GROUP, Command, debug_parent
from pausetoken._cli.output import say
from pausetoken.exceptions import ConfigurationError, PauseTokenError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_parser", "main"]

#: Exit status after Ctrl-C, as shells report a process ended by SIGINT.
EXIT_INTERRUPTED: Final = 130


class _Version(argparse.Action):
    """``--version``: pausetoken's and its plugins' distributions, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show the versions of pausetoken and its plugins, then exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        import importlib.metadata  # noqa: PLC0415
        import platform  # noqa: PLC0415

        from pausetoken._registry import GROUPS  # noqa: PLC0415

        # Every distribution that plugs into pausetoken: backends and commands alike.
        plugins = {
            dist.name: dist.version
            for group in (*GROUPS.values(), GROUP)
            for entry_point in importlib.metadata.entry_points(group=group)
            if (dist := entry_point.dist) is not None and dist.name != "pausetoken"
        }
        try:
            own = importlib.metadata.version("pausetoken")
        except importlib.metadata.PackageNotFoundError:
            own = "unknown"
        shown = ", ".join(f"{name} {version}" for name, version in sorted(plugins.items()))
        line = f"pausetoken {own}{f' ({shown})' if shown else ''}"
        sys.stdout.write(f"{line}, Python {platform.python_version()}\n")
        parser.exit()


def build_parser(
    catalog: Catalog | None = None, *, chosen: str | None = None
) -> argparse.ArgumentParser:
    """The argument parser for ``pausetoken``.

    Args:
        catalog: The commands (default: those of this installation).
        chosen: The command the arguments name: it alone is loaded and declares its
            arguments; the others are listed by name.

    Returns:
        The parser; the chosen `Command` is in the parsed arguments' ``command``.

    Raises:
        PauseTokenError: The chosen command cannot be loaded (see `Catalog.choose`).
    """
    catalog = Catalog.discover() if catalog is None else catalog
    command = None if chosen is None else catalog.choose(chosen)
    parser = argparse.ArgumentParser(
        prog="pausetoken",
        description="Signed, single-use resume tokens for human-in-the-loop pauses.",
        parents=[debug_parent()],
    )
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name in catalog.names():
        if name != chosen or command is None:
            subparsers.add_parser(name, help=catalog.summary(name))
            continue
        sub = subparsers.add_parser(
            name, help=command.help, description=command.help, parents=[debug_parent()]
        )
        command.arguments(sub)
        sub.set_defaults(command=command)
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word (``pausetoken``'s own options take none)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _debug(argv: Sequence[str]) -> bool:
    """Whether ``--debug`` is given, read as the full parser reads it, before it exists."""
    try:
        known, _ = debug_parent().parse_known_args(argv)
    except SystemExit:  # --debug=value: the full parser reports it
        return False
    return bool(getattr(known, "debug", False))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pausetoken`` command line.

    Args:
        argv: The arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 success, 1 a token was refused or a check failed, 2 a usage or
        configuration error.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen(argv)
    label = chosen or "pausetoken"
    debug = _debug(argv)
    try:
        parser = build_parser(chosen=chosen)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits on --help, --version and usage errors
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        command: Command = args.command
        label = getattr(args, "label", label)  # "store check": a command's own action
        return command.run(args)
    except PauseTokenError as exc:
        from pausetoken._cli.hints import report  # noqa: PLC0415 - on errors only

        if debug:
            traceback.print_exc()
        report(exc, label)
        return EXIT_USAGE if isinstance(exc, ConfigurationError) else EXIT_REFUSED
    except KeyboardInterrupt:
        say(f"pausetoken {label}: interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            raise
        # The message of an unexpected error may quote its input; show only its type.
        say(f"pausetoken {label}: unexpected {type(exc).__name__}")
        say("hint: run again with --debug to see the traceback")
        return EXIT_REFUSED
