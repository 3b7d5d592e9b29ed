"""Which commands ``pausetoken`` has: its own, and those installed distributions add.

Installed commands are read from the ``pausetoken.commands`` entry-point group by name
only: a command's module is imported when the command is chosen, never to list it, so a
distribution that fails to import disturbs its own command and nothing else (keyring's
lesson). Two providers of one name are an error when that name is chosen, never a silent
pick; pausetoken's own commands count as one provider.
"""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING, Final, TypeGuard

import attrs

from pausetoken._cli import backends, bench, keygen, store, tokens
from pausetoken._cli.command import GROUP, Command
from pausetoken._install import install_hint
from pausetoken.exceptions import (
    AmbiguousBackend,
    BackendNotInstalled,
    ConfigurationError,
    PauseTokenError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["COMMANDS", "KNOWN", "Builtin", "Catalog", "Installed"]


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


@attrs.frozen
class Installed:
    """A command an installed distribution registers, before anything of it is imported.

    Attributes:
        name: What the user types (the entry point's name).
        target: Where it lives, as ``"module:attr"``.
        distribution: The distribution that registers it.
        version: That distribution's version.
    """

    name: str
    target: str
    distribution: str | None
    version: str | None
    _entry_point: importlib.metadata.EntryPoint = attrs.field(
        eq=False, repr=False, alias="entry_point"
    )

    @property
    def provider(self) -> str:
        """The distribution and its version, as messages name them."""
        return f"{self.distribution or '?'} {self.version or ''}".strip()

    def load(self) -> Command:
        """Import the command.

        Raises:
            ConfigurationError: ``command_import_failed`` when it fails to import,
                ``command_invalid`` when what it names is not a `Command`.
        """
        where = f"the command {self.name!r} ({self.target} from {self.provider})"
        try:
            found: object = self._entry_point.load()
        except PauseTokenError:
            raise
        except ImportError as exc:
            missing = getattr(exc, "name", None) or "a module"
            msg = f"{where} cannot be imported: {type(exc).__name__} for {missing!r}"
            raise ConfigurationError(msg, code="command_import_failed") from exc
        except Exception as exc:
            # Its message may say anything; --debug shows it with the traceback.
            msg = f"{where} failed to import: {type(exc).__name__}"
            raise ConfigurationError(msg, code="command_import_failed") from exc
        if not _is_command(found):
            msg = f"{where} is not a command: it needs help, arguments and run"
            raise ConfigurationError(msg, code="command_invalid")
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
        installed: Installed commands by name; a name two distributions register has two.
    """

    builtins: tuple[Builtin, ...]
    installed: Mapping[str, tuple[Installed, ...]]

    @classmethod
    def discover(cls, builtins: tuple[Builtin, ...] = COMMANDS) -> Catalog:
        """Read the ``pausetoken.commands`` entry points (names only; nothing is imported).

        Returns:
            The catalog.
        """
        found: dict[str, list[Installed]] = {}
        for entry_point in importlib.metadata.entry_points(group=GROUP):
            dist = entry_point.dist
            info = Installed(
                name=entry_point.name,
                target=entry_point.value,
                distribution=dist.name if dist is not None else None,
                version=dist.version if dist is not None else None,
                entry_point=entry_point,
            )
            same_name = found.setdefault(entry_point.name, [])
            # One distribution seen twice on sys.path is not a conflict.
            if all(other.distribution != info.distribution for other in same_name):
                same_name.append(info)
        return cls(builtins, {name: tuple(infos) for name, infos in found.items()})

    def names(self) -> list[str]:
        """Every command, as ``--help`` lists them: pausetoken's own, then installed ones."""
        own = [builtin.name for builtin in self.builtins]
        return own + sorted(name for name in self.installed if name not in own)

    def summary(self, name: str) -> str:
        """One line about the command ``name`` that imports nothing of it."""
        for builtin in self.builtins:
            if builtin.name == name:
                return builtin.command.help
        providers = " and ".join(info.provider for info in self.installed[name])
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
            ConfigurationError: ``command_import_failed`` or ``command_invalid`` (see
                `Installed.load`).
        """
        builtin = next((b.command for b in self.builtins if b.name == name), None)
        installed = self.installed.get(name, ())
        if builtin is not None and not installed:
            return builtin
        providers = [_BUILT_IN] if builtin is not None else []
        providers += [info.provider for info in installed]
        if len(providers) > 1:
            msg = (
                f"two distributions register the command {name!r}: {' and '.join(providers)}; "
                "uninstall one of them"
            )
            raise AmbiguousBackend(msg, code="ambiguous_command")
        if installed:
            return installed[0].load()
        if name in KNOWN:
            msg = f"the command {name!r} is not installed: it is {KNOWN[name]}"
            raise BackendNotInstalled(msg, code="command_not_installed")
        return None
