"""Which commands ``pausetoken`` has: its own, and those installed distributions add.

Installed commands are read from the ``pausetoken.commands`` entry-point group by the same
`PluginLoader` as backends are: by name only, a command's module imported when the command
is chosen, never to list it, so a distribution that fails to import disturbs its own
command and nothing else (keyring's lesson). Two providers of one name are an error when
that name is chosen, never a silent pick; pausetoken's own commands count as one provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Final, TypeGuard

import attrs

from pausetoken import exceptions as errors
from pausetoken._cli import backends, bench, keygen, store, tokens
from pausetoken._cli.command import GROUP, Command
from pausetoken._install import install_hint
from pausetoken._loader import BackendInfo, PluginLoader

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["COMMANDS", "KNOWN", "Builtin", "Catalog"]


@attrs.frozen
class Builtin:
    """A command that comes with pausetoken itself.

    Attributes:
        name: What the user types.
        command: The command.
    """

    name: str
    command: Command


#: pausetoken's own commands, in the order ``--help`` lists them (installed ones follow).
COMMANDS: Final[tuple[Builtin, ...]] = (
    Builtin("keygen", keygen.KEYGEN),
    Builtin("inspect", tokens.INSPECT),
    Builtin("status", tokens.STATUS),
    Builtin("revoke", tokens.REVOKE),
    Builtin("backends", backends.BACKENDS),
    Builtin("store", store.STORE),
    Builtin("bench", bench.BENCH),
)

#: Commands pausetoken knows of but does not ship, with where they come from (the model is
#: fsspec's ``known_implementations``): choosing one that is not installed says what to install.
KNOWN: Final[Mapping[str, str]] = {
    "demo": "provided by pausetoken-langgraph: "
    + install_hint("pausetoken[langgraph,sqlite,cli]", "pausetoken-langgraph[sqlite]"),
}

_BUILT_IN: Final = "pausetoken (built in)"


class _CommandLoader(PluginLoader[Command]):
    """The ``pausetoken.commands`` entry points: objects following `Command`."""

    not_installed_code: ClassVar[errors.Code] = errors.BackendNotInstalled.COMMAND_NOT_INSTALLED
    ambiguous_code: ClassVar[errors.Code] = errors.AmbiguousBackend.AMBIGUOUS_COMMAND
    import_failed_code: ClassVar[errors.Code] = errors.PluginError.COMMAND_IMPORT_FAILED

    def explain(self, info: BackendInfo, exc: Exception) -> errors.PauseTokenError | None:
        """An import error names the module it misses."""
        if not isinstance(exc, ImportError):
            return None
        missing = getattr(exc, "name", None) or "a module"
        msg = f"{self.where(info)} cannot be imported: {type(exc).__name__} for {missing!r}"
        return errors.ConfigurationError(msg, code=self.import_failed_code)

    def check(self, info: BackendInfo, found: object) -> Command:
        """``found`` if it has a help line, ``arguments`` and ``run``."""
        if not _is_command(found):
            msg = f"{self.where(info)} is not a command: it needs help, arguments and run"
            raise errors.PluginError(msg, code=errors.PluginError.COMMAND_INVALID)
        return found


def _is_command(found: object) -> TypeGuard[Command]:
    return (
        isinstance(found, Command)
        and isinstance(found.help, str)
        and callable(found.arguments)
        and callable(found.run)
    )


@attrs.frozen
class Catalog:
    """The commands of this installation: pausetoken's own and the installed ones.

    Attributes:
        builtins: pausetoken's own commands.
        installed: The installed commands, read when first asked for.
    """

    builtins: tuple[Builtin, ...]
    installed: PluginLoader[Command]

    @classmethod
    def discover(cls, builtins: tuple[Builtin, ...] = COMMANDS) -> Catalog:
        """The catalog of this installation's ``pausetoken.commands`` entry points.

        They are read on first use, by name only: nothing is imported.

        Returns:
            The catalog.
        """
        return cls(builtins, _CommandLoader("commands", GROUP, "command", KNOWN))

    def names(self) -> list[str]:
        """Every command, as ``--help`` lists them: pausetoken's own, then installed ones."""
        own = [builtin.name for builtin in self.builtins]
        return own + sorted(name for name in self.installed.discover() if name not in own)

    def summary(self, name: str) -> str:
        """One line about the command ``name`` that imports nothing of it."""
        for builtin in self.builtins:
            if builtin.name == name:
                return builtin.command.help
        providers = " and ".join(info.provider for info in self.installed.discover()[name])
        return f"from {providers}: see pausetoken {name} --help"

    def choose(self, name: str) -> Command | None:
        """The command ``name``, imported now if it is an installed one.

        Returns:
            The command, or ``None`` when no command has that name.

        Raises:
            BackendNotInstalled: ``command_not_installed`` for a command pausetoken knows of
                whose distribution is not installed (the message names the install line).
            AmbiguousBackend: ``ambiguous_command`` when two distributions (or a
                distribution and pausetoken itself) register the name.
            ConfigurationError: ``command_import_failed`` when it fails to import,
                ``command_invalid`` when what it names is not a `Command`.
        """
        builtin = next((b.command for b in self.builtins if b.name == name), None)
        installed = self.installed.find(name, others=[_BUILT_IN] if builtin is not None else [])
        return builtin if installed is None else self.installed.load(installed)
