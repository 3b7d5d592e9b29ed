"""``pausetoken keygen``: a new key set, printed or written to a file only its owner reads."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final, get_args

from pausetoken._cli.command import EXIT_OK, FunctionCommand
from pausetoken._cli.output import say
from pausetoken.exceptions import CommandLineError

if TYPE_CHECKING:
    import argparse

__all__ = ["KEYGEN"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    from pausetoken._keys import Algorithm  # noqa: PLC0415 - loaded when the command runs

    parser.add_argument(
        "--alg",
        choices=get_args(Algorithm),
        default="HS256",
        help="HS256 (shared secret, the default), EdDSA or ES256 (key pairs), "
        "dir (a 256-bit key for sealed tokens)",
    )
    parser.add_argument("--kid", help="key id (default: a random one)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the key set to FILE, created readable only by you (mode 0600); "
        "an existing FILE is never overwritten",
    )


def _run(args: argparse.Namespace) -> int:
    from pausetoken._keys import KeyRing  # noqa: PLC0415 - loaded when the command runs
    from pausetoken._settings import ENV_PREFIX  # noqa: PLC0415

    keys_file = f"{ENV_PREFIX}KEYS_FILE"
    keys = KeyRing.generate(args.alg, kid=args.kid)
    text = json.dumps(keys.to_jwks(private=True), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        say(
            "pausetoken: this key set is secret. Save it to a file readable only by the "
            f"service (`pausetoken keygen -o FILE` does) and set {keys_file} to its path."
        )
        return EXIT_OK
    write_private_file(args.output, text)
    say(
        f"pausetoken: wrote the key set to {args.output} (mode 0600); set "
        f"{keys_file} to its path and keep it out of images and repositories."
    )
    return EXIT_OK


def write_private_file(path: str, text: str) -> None:
    """Create ``path`` with mode 0600 and write ``text``; never overwrite or follow a link.

    Raises:
        ConfigurationError: ``cli_output_exists`` when ``path`` exists (even as a dangling
            symbolic link), ``cli_output_unwritable`` when it cannot be created or written.
    """
    # O_EXCL: an existing file or symlink (even a dangling one) is refused, not replaced.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError as exc:
        msg = f"{path} exists; keygen never overwrites a file: choose another path"
        raise CommandLineError(msg, code=CommandLineError.CLI_OUTPUT_EXISTS) from exc
    except OSError as exc:
        msg = f"cannot create {path}: {exc.strerror or type(exc).__name__}"
        raise CommandLineError(msg, code=CommandLineError.CLI_OUTPUT_UNWRITABLE) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            if hasattr(os, "fchmod"):  # the umask can only remove bits; 0600 exactly
                os.fchmod(file.fileno(), 0o600)
            file.write(text)
    except OSError as exc:
        Path(path).unlink(missing_ok=True)  # no half-written key file left behind
        msg = f"cannot write {path}: {exc.strerror or type(exc).__name__}"
        raise CommandLineError(msg, code=CommandLineError.CLI_OUTPUT_UNWRITABLE) from exc


KEYGEN: Final = FunctionCommand(
    "print a new key set (JWKS), or write it to a private file with -o", _arguments, _run
)
