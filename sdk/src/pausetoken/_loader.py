"""Plugins found through entry points: listed by name, imported when chosen, checked once.

A `PluginLoader` serves one entry-point group. The registry keeps one per kind of backend
(``pausetoken.stores``, ``pausetoken.signers``, ``pausetoken.checkpoints``), the command line
one for ``pausetoken.commands``. As with SQLAlchemy's ``PluginLoader``, what a loader has
discovered, imported and been given in code is state of the instance, forgotten by
`PluginLoader.clear()`.

Discovery reads entry points by name only, once, and imports nothing; choosing a name
imports that plugin alone, so one broken plugin never disturbs the others (keyring's
lesson). Two distributions providing one name are an error when the name is chosen, never a
silent pick. What differs between groups is a subclass's: the codes it raises, how it tells
an import failure (`PluginLoader.explain`) and what a plugin must be (`PluginLoader.check`).
"""

from __future__ import annotations

import abc
import importlib
import importlib.metadata
import logging
import re
import threading
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import attrs

from pausetoken.exceptions import (
    AmbiguousBackend,
    BackendNotInstalled,
    Code,
    ConfigurationError,
    PauseTokenError,
    PluginError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["BackendInfo", "PluginLoader", "is_target"]

# Its log records are the registry's: operations.md lists them under that logger's name.
logger = logging.getLogger("pausetoken.registry")

T = TypeVar("T")

_TARGET = re.compile(
    r"^(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<attr>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\Z",
    re.ASCII,
)
_NAME = re.compile(r"^[a-z][a-z0-9_.\-]*\Z")


@attrs.frozen
class BackendInfo:
    """One backend as discovered or registered, before or after it is imported.

    The command line lists the commands installed distributions add the same way.

    Attributes:
        name: The name it is chosen by (a store's URL family, a signer's name).
        kind: ``"stores"``, ``"signers"`` or ``"checkpoints"`` (``"commands"`` for a
            command of the command line).
        target: Where it lives, as ``"module:attr"``.
        distribution: The installed distribution that registers it (``None`` when it was
            registered in code with `register_store()`).
        version: That distribution's version.
    """

    name: str
    kind: str
    target: str
    distribution: str | None
    version: str | None
    # What to import: an entry point, a "module:attr" string, or the object itself.
    _source: object = attrs.field(eq=False, repr=False, alias="source")
    _loader: PluginLoader[Any] = attrs.field(eq=False, repr=False, alias="loader")

    @property
    def provider(self) -> str:
        """The distribution and its version, as messages name them (``?`` for none)."""
        return f"{self.distribution or '?'} {self.version or ''}".strip()

    @property
    def importable(self) -> bool:
        """Whether the backend imports and declares a supported ``api_version``.

        Computed on access, by importing the backend (listing never imports anything).
        """
        try:
            self.load()
        except ConfigurationError as exc:
            logger.debug("backend %s/%s is not importable: %s", self.kind, self.name, exc.code)
            return False
        return True

    def load(self) -> object:
        """Import the backend (once, until `reset_registry()`) and check it is of its kind.

        Returns:
            The backend's factory (normally its class): a
            [`StoreFactory`][pausetoken.plugins.StoreFactory],
            [`SignerFactory`][pausetoken.plugins.SignerFactory] or
            [`ReaderFactory`][pausetoken.plugins.ReaderFactory], as its kind says.

        Raises:
            BackendNotInstalled: a module it needs is missing (the message says what to
                install when pausetoken knows).
            ConfigurationError: it fails to import (code ``backend_import_failed``), or its
                ``api_version`` is missing or unsupported or it lacks its kind's factory
                method (code ``backend_api_version``).
        """
        return self._loader.load(self)


def is_target(text: str) -> bool:
    """Whether ``text`` names an object as ``"package.module:attribute"``."""
    return _TARGET.match(text) is not None


def _parse_target(target: str) -> re.Match[str]:
    match = _TARGET.match(target)
    if match is None:
        msg = f"a backend target is 'package.module:attribute' (got {target!r})"
        raise ConfigurationError(msg)
    return match


def _import_target(target: str) -> object:
    match = _parse_target(target)
    obj: Any = importlib.import_module(match["module"])
    try:
        for part in match["attr"].split("."):
            obj = getattr(obj, part)
    except AttributeError as exc:
        msg = f"{match['module']!r} has no attribute {match['attr']!r}"
        raise PluginError(msg, code=PluginError.BACKEND_IMPORT_FAILED) from exc
    return obj


@attrs.define(eq=False, repr=False)
class PluginLoader(abc.ABC, Generic[T]):
    """The plugins of one entry-point group, and those registered in code for it.

    Attributes:
        kind: What the group holds, as listings name it (``"stores"``, ``"commands"``).
        group: The entry-point group (``"pausetoken.stores"``).
        noun: One of them, as messages name it (``"store"``, ``"checkpoint reader"``).
        known: Names pausetoken knows of but does not ship, each with what provides it and
            how to install that (the model is fsspec's ``known_implementations``).
    """

    #: The codes a subclass raises with `BackendNotInstalled`, `AmbiguousBackend` and
    #: `ConfigurationError` when a name's distribution is missing, has two providers, or
    #: its plugin fails to import.
    not_installed_code: ClassVar[Code]
    ambiguous_code: ClassVar[Code]
    import_failed_code: ClassVar[Code]

    kind: str
    group: str
    noun: str
    known: Mapping[str, str]
    # Re-entrant: register() holds it while discover() takes it.
    _lock: threading.RLock = attrs.field(factory=threading.RLock, init=False)
    # name -> every distribution's entry point of that name (more than one is ambiguous).
    _discovered: dict[str, tuple[BackendInfo, ...]] | None = attrs.field(default=None, init=False)
    # (name, distribution, target) -> the imported and checked plugin.
    _loaded: dict[tuple[str, str | None, str], T] = attrs.field(factory=dict, init=False)
    # name -> a plugin registered in code (it shadows entry points of that name).
    _registered: dict[str, BackendInfo] = attrs.field(factory=dict, init=False)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.group}>"

    def clear(self) -> None:
        """Forget discovered entry points, imported plugins and registrations."""
        with self._lock:
            self._discovered = None
            self._loaded.clear()
            self._registered.clear()

    def discover(self) -> Mapping[str, tuple[BackendInfo, ...]]:
        """The group's entry points by name: read once, by name only (nothing is imported).

        Returns:
            Each name and the distributions registering it (one, unless two claim it).
        """
        with self._lock:
            if self._discovered is not None:
                return self._discovered
            found: dict[str, list[BackendInfo]] = {}
            for entry_point in importlib.metadata.entry_points(group=self.group):
                dist = entry_point.dist
                info = BackendInfo(
                    name=entry_point.name,
                    kind=self.kind,
                    target=entry_point.value,
                    distribution=dist.name if dist is not None else None,
                    version=dist.version if dist is not None else None,
                    source=entry_point,
                    loader=self,
                )
                same_name = found.setdefault(entry_point.name, [])
                # One distribution seen twice on sys.path is not a conflict.
                if all(other.distribution != info.distribution for other in same_name):
                    same_name.append(info)
            self._discovered = {name: tuple(infos) for name, infos in found.items()}
            return self._discovered

    def available(self) -> list[BackendInfo]:
        """The installed and registered plugins, sorted by name, then distribution."""
        discovered = self.discover()
        with self._lock:
            registered = dict(self._registered)
        infos = [
            info for name, infos in discovered.items() if name not in registered for info in infos
        ]
        infos.extend(registered.values())
        return sorted(infos, key=lambda b: (b.name, b.distribution or ""))

    def find(self, name: str, *, others: Sequence[str] = ()) -> BackendInfo | None:
        """The one plugin named ``name``, not yet imported.

        Args:
            name: The name it is chosen by.
            others: Who provides ``name`` outside this loader (pausetoken's own commands):
                with any, an installed plugin of that name is ambiguous, and none is no error.

        Returns:
            The plugin, or ``None`` when nothing of this group has that name.

        Raises:
            AmbiguousBackend: two distributions (or one and ``others``) provide ``name``.
            BackendNotInstalled: ``name`` is known to pausetoken, but its distribution is not
                installed (the message says what to install).
        """
        with self._lock:
            registered = self._registered.get(name)
        if registered is not None:
            return registered
        candidates = self.discover().get(name, ())
        providers = [*others, *(candidate.provider for candidate in candidates)]
        if len(providers) > 1:
            msg = (
                f"two distributions register the {self.noun} {name!r}: "
                f"{' and '.join(providers)}; uninstall one of them"
            )
            raise AmbiguousBackend(msg, code=self.ambiguous_code)
        if candidates:
            return candidates[0]
        hint = self.known.get(name)
        if hint is not None and not others:
            msg = f"the {self.noun} {name!r} is not installed: it is {hint}"
            raise BackendNotInstalled(msg, code=self.not_installed_code)
        return None

    def register(self, name: str, target: object, *, replace: bool = False) -> None:
        """Register ``target`` (the plugin, or ``"module:attr"``) as ``name``, in code.

        Raises:
            AmbiguousBackend: ``name`` is already registered or installed and ``replace`` is
                false.
            ConfigurationError: ``name`` is not a valid lower-case name or ``target`` is a
                string that is not ``"module:attr"``.
        """
        if not _NAME.match(name):
            msg = f"a {self.noun} name is lower-case letters, digits and '_.-' (got {name!r})"
            raise ConfigurationError(msg)
        info = self.given(target, name=name)
        with self._lock:
            if not replace:
                installed = self.discover().get(name, ())
                existing = self._registered.get(name)
                if existing is not None or installed:
                    source = (
                        "registered in code"
                        if existing is not None
                        else f"installed by {installed[0].distribution}"
                    )
                    msg = (
                        f"a {self.noun} named {name!r} is already {source}; "
                        "pass replace=True to shadow it"
                    )
                    raise AmbiguousBackend(msg, code=self.ambiguous_code)
            self._registered[name] = info
            self._loaded.pop((name, None, info.target), None)

    def given(self, target: object, *, name: str | None = None) -> BackendInfo:
        """A plugin given in code, as itself or as ``"module:attr"`` (imported when loaded).

        Args:
            target: The plugin, or where it lives.
            name: What it is chosen by (default: its target).

        Raises:
            ConfigurationError: ``target`` is a string that is not ``"module:attr"``.
        """
        if isinstance(target, str):
            target_name = _parse_target(target).string  # the whole of target, checked
        else:
            module = getattr(target, "__module__", "?")
            target_name = f"{module}:{getattr(target, '__qualname__', type(target).__qualname__)}"
        return BackendInfo(
            name=target_name if name is None else name,
            kind=self.kind,
            target=target_name,
            distribution=None,
            version=None,
            source=target,
            loader=self,
        )

    def load(self, info: BackendInfo) -> T:
        """Import the plugin ``info`` describes (once, until `clear()`) and `check` it.

        Raises:
            PauseTokenError: what `explain` or `check` says, or a
                [`ConfigurationError`][pausetoken.exceptions.ConfigurationError] with the
                class's ``import_failed_code`` when it fails to import otherwise.
        """
        key = (info.name, info.distribution, info.target)
        with self._lock:
            if key in self._loaded:
                return self._loaded[key]
        plugin = self.check(info, self._import(info))
        with self._lock:
            self._loaded[key] = plugin
        return plugin

    def _import(self, info: BackendInfo) -> object:
        source = info._source  # noqa: SLF001 - a record's source is its loader's business
        if not isinstance(source, importlib.metadata.EntryPoint | str):
            return source
        logger.debug(
            "loading %s backend %r from %s", info.kind, info.name, info.distribution or "code"
        )
        try:
            if isinstance(source, str):
                return _import_target(source)
            return source.load()
        except PauseTokenError:
            raise
        except Exception as exc:
            error = self.explain(info, exc)
            if error is None:
                # Its message may say anything; a traceback (--debug) shows it.
                msg = f"{self.where(info)} failed to import: {type(exc).__name__}"
                error = ConfigurationError(msg, code=self.import_failed_code)
            raise error from exc

    def where(self, info: BackendInfo) -> str:
        """The plugin as messages name it: its name, target and provider."""
        return f"the {self.noun} {info.name!r} ({info.target} from {info.provider})"

    def explain(self, info: BackendInfo, exc: Exception) -> PauseTokenError | None:
        """The error to raise for ``exc``, which importing ``info`` raised.

        Returns:
            The error, or ``None`` for "failed to import" with the type of ``exc``.
        """
        del info, exc
        return None

    @abc.abstractmethod
    def check(self, info: BackendInfo, found: object) -> T:
        """What ``info`` imported, if it is a plugin of this group.

        Raises:
            ConfigurationError: it is not.
        """
