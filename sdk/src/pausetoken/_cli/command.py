"""What a ``pausetoken`` subcommand is: the protocol every command follows, built in or not.

A distribution adds a command by naming an object that follows `Command` in the
``pausetoken.commands`` entry-point group; the entry point's name is what the user types.
`FunctionCommand` builds such an object from two functions, which is how the built-in
commands are made too.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable

# The public names are pausetoken.cli's, which lists them in its __all__.

#: The entry-point group distributions add commands to.
GROUP: Final = "pausetoken.commands"

#: Exit status of a command that did its work.
EXIT_OK: Final = 0
#: Exit status of a command whose token was refused or whose check failed.
EXIT_REFUSED: Final = 1
#: Exit status of a usage or configuration error (what a ``ConfigurationError`` becomes).
EXIT_USAGE: Final = 2


@runtime_checkable
class Command(Protocol):
    """One ``pausetoken`` subcommand.

    Any object with these three members is a command: an instance of `FunctionCommand`, of
    a class of your own, or a module.
    """

    @property
    def help(self) -> str:
        """One line for the command's ``--help`` (and the listing of built-in commands)."""
        ...

    def arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare the command's arguments on its own parser.

        Called only when the command is chosen, so an installed command is imported only
        when it runs.
        """
        ...

    def run(self, args: argparse.Namespace) -> int:
        """Do the work and return the exit status (`EXIT_OK`, `EXIT_REFUSED`, ...).

        A [`PauseTokenError`][pausetoken.exceptions.PauseTokenError] raised here is
        reported with its code and what to do about it; a
        [`ConfigurationError`][pausetoken.exceptions.ConfigurationError] exits with
        `EXIT_USAGE`, any other with `EXIT_REFUSED`.
        """
        ...


@attrs.frozen
class FunctionCommand:
    """A `Command` made of a help line and two functions.

    Examples:
        >>> import argparse
        >>> def arguments(parser: argparse.ArgumentParser) -> None:
        ...     parser.add_argument("--name", default="world")
        >>> def run(args: argparse.Namespace) -> int:
        ...     print(f"hello {args.name}")
        ...     return EXIT_OK
        >>> hello = FunctionCommand("say hello", arguments, run)
        >>> isinstance(hello, Command)
        True

    Attributes:
        help: One line for ``--help``.
        arguments: Declares the command's arguments on its parser (it may add nested
            subcommands of its own).
        run: Does the work; returns the exit status.
    """

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def debug_parent() -> argparse.ArgumentParser:
    """``--debug``, accepted before or after any subcommand: a parent of every parser.

    A command that adds nested subcommands of its own gives them this parent too.
    """
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug",
        action="store_true",
        # Suppressed default: a subcommand's parser never resets a --debug given before it.
        default=argparse.SUPPRESS,
        help="show tracebacks on errors",
    )
    return debug
