"""Choosing stores, signers and checkpoint readers by name: the plugin registry.

Backends register under three entry-point groups, built-ins included:
``pausetoken.stores``, ``pausetoken.signers`` and ``pausetoken.checkpoints``. A store is
chosen by URL: the scheme's family before ``+`` names the entry point
(``postgresql+asyncpg://...`` -> ``postgresql``) and the backend's ``from_url`` receives the
whole URL. ``package.module:Class`` (no ``://``) names an unpublished in-house store directly.

Discovery is lazy: entry points are read (names only, nothing imported) once per process
and cached; only the chosen backend is imported, and the loaded object is cached too. One
broken plugin therefore never disturbs the others.

Process-wide state is limited to those two caches and to explicit `register_store()`
calls; `reset_registry()` clears all three (tests do so around every test).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import re
import threading
from typing import TYPE_CHECKING, Any, Final, Literal, cast, get_args, overload

import attrs

from pausetoken._install import install_hint
from pausetoken._reader_api import CHECKPOINTS_API_VERSION
from pausetoken._signer_api import SIGNERS_API_VERSION
from pausetoken._store_api import STORE_API_VERSION, TokenStore
from pausetoken._urls import redact_url, store_family
from pausetoken.exceptions import (
    AmbiguousBackend,
    BackendNotInstalled,
    ConfigurationError,
    PauseTokenError,
    UnknownBackend,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pausetoken.plugins import ReaderFactory, SignerFactory, StoreFactory

__all__ = [
    "GROUPS",
    "BackendInfo",
    "BackendKind",
    "available_backends",
    "load",
    "load_checkpoints",
    "load_signer",
    "load_store",
    "open_store",
    "redact_url",
    "register_store",
    "reset_registry",
    "store_family",
]

logger = logging.getLogger("pausetoken.registry")

BackendKind = Literal["stores", "signers", "checkpoints"]

#: The entry-point group of each kind of backend.
GROUPS: Final[Mapping[BackendKind, str]] = {
    "stores": "pausetoken.stores",
    "signers": "pausetoken.signers",
    "checkpoints": "pausetoken.checkpoints",
}

#: The method that makes a backend from its factory, per kind.
_FACTORY_METHODS: Final[Mapping[BackendKind, str]] = {
    "stores": "from_url",
    "signers": "from_keys",
    "checkpoints": "from_url",
}

#: The ``api_version`` values this release of pausetoken can drive, per kind.
_API_VERSIONS: Final[Mapping[BackendKind, frozenset[int]]] = {
    "stores": frozenset({STORE_API_VERSION}),
    "signers": frozenset({SIGNERS_API_VERSION}),
    "checkpoints": frozenset({CHECKPOINTS_API_VERSION}),
}


def _sqlalchemy_hint(extra: str) -> str:
    """The store and its driver in one line (``pausetoken[sqlite]`` brings both)."""
    return f"provided by pausetoken-sqlalchemy: {install_hint(f'pausetoken[{extra}]')}"


#: Backends pausetoken knows of but does not ship, with how to install them (the model is
#: fsspec's ``known_implementations``).
_KNOWN: Final[Mapping[BackendKind, Mapping[str, str]]] = {
    "stores": {
        "sqlite": _sqlalchemy_hint("sqlite"),
        "postgresql": _sqlalchemy_hint("postgresql"),
        "mysql": _sqlalchemy_hint("mysql"),
        "mariadb": _sqlalchemy_hint("mysql"),
        "redis": f"provided by pausetoken-redis: {install_hint('pausetoken[redis]')}",
        "mongodb": f"provided by pausetoken-mongo: {install_hint('pausetoken[mongo]')}",
    },
    "signers": {},
    "checkpoints": {
        "langgraph": f"provided by pausetoken-langgraph: {install_hint('pausetoken[langgraph]')}",
    },
}

#: Where the migration from store API 1 is described.
_MIGRATION: Final = 'see the migration notes ("Migrating from store API 1", Writing a plugin)'

#: Names plugins of store API 1 imported from ``pausetoken`` and what they are now: store API 2
#: renamed the record types (``TokenRecord`` -> ``PauseRecord``) and moved every type a
#: store needs to `pausetoken.plugins`.
_MOVED_NAMES: Final[Mapping[str, str]] = {
    "TokenRecord": "PauseRecord",
    "TokenState": "PauseState",
    "ClaimOutcome": "ClaimOutcome",
    "ClaimRequest": "ClaimRequest",
    "ClaimResult": "ClaimResult",
}
#: Private modules of store API 1 that plugins imported from, now gone.
_GONE_MODULES: Final = frozenset(
    {"pausetoken._store", "pausetoken._checkpoints", "pausetoken._signer", "pausetoken._jose"}
)
_CANNOT_IMPORT = re.compile(r"^cannot import name '(?P<name>\w+)' from '(?P<module>[\w.]+)'")

_TARGET = re.compile(
    r"^(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<attr>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\Z",
    re.ASCII,
)
_NAME = re.compile(r"^[a-z][a-z0-9_.\-]*\Z")


@attrs.frozen
class BackendInfo:
    """One backend as discovered or registered, before or after it is imported.

    Attributes:
        name: The name it is chosen by (a store's URL family, a signer's name).
        kind: ``"stores"``, ``"signers"`` or ``"checkpoints"``.
        target: Where it lives, as ``"module:attr"``.
        distribution: The installed distribution that registers it (``None`` when it was
            registered in code with `register_store()`).
        version: That distribution's version.
    """

    name: str
    kind: BackendKind
    target: str
    distribution: str | None
    version: str | None
    _entry_point: importlib.metadata.EntryPoint | None = attrs.field(
        default=None, eq=False, repr=False, alias="entry_point"
    )
    _obj: Any = attrs.field(default=None, eq=False, repr=False, alias="obj")

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
        """Import the backend (once per process) and check it is a factory of its kind.

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
        key = (self.kind, self.name, self.distribution, self.target)
        with _lock:
            cached = _loaded.get(key, _MISSING)
        if cached is not _MISSING:
            return cached
        obj = self._import()
        _check_factory(self, obj)
        with _lock:
            _loaded[key] = obj
        return obj

    def _import(self) -> Any:
        if self._entry_point is None and not isinstance(self._obj, str):
            return self._obj
        provider = self.distribution or "code"
        logger.debug("loading %s backend %r from %s", self.kind, self.name, provider)
        try:
            if self._entry_point is not None:
                return self._entry_point.load()
            return _import_target(self.target)
        except (ImportError, AttributeError) as exc:
            shown = f"the {_singular(self.kind)} {self.name!r} ({self.target} from {provider})"
            moved = _moved_name(exc)
            if moved is not None:
                msg = f"{shown} was written for store API 1: {moved}; {_MIGRATION}"
                raise ConfigurationError(msg, code="backend_api_version") from exc
            if isinstance(exc, ModuleNotFoundError):
                hint = _KNOWN[self.kind].get(self.name)
                missing = exc.name or "a module"
                if hint is not None:
                    msg = f"the {_singular(self.kind)} {self.name!r} needs {missing!r}, {hint}"
                    raise BackendNotInstalled(msg) from exc
                msg = f"{shown} cannot be imported: the module {missing!r} is not installed"
                raise BackendNotInstalled(msg) from exc
            name = _missing_name(exc)
            failure = (
                f"cannot import {name[1]!r} from {name[0]!r}"
                if name is not None
                else type(exc).__name__
            )
            msg = f"{shown} failed to import: {failure}"
            raise ConfigurationError(msg, code="backend_import_failed") from exc
        except PauseTokenError:
            raise
        except Exception as exc:
            msg = (
                f"the {_singular(self.kind)} {self.name!r} ({self.target} from {provider}) "
                f"failed to import: {type(exc).__name__}"
            )
            raise ConfigurationError(msg, code="backend_import_failed") from exc


_MISSING: Final = object()

_lock = threading.RLock()
# kind -> name -> every entry point registering that name (more than one is ambiguous).
_discovered: dict[BackendKind, dict[str, list[BackendInfo]]] | None = None
# (kind, name, distribution, target) -> the loaded backend object.
_loaded: dict[tuple[str, str, str | None, str], Any] = {}
# kind -> name -> a backend registered in code (shadows entry points when replace=True).
_registered: dict[BackendKind, dict[str, BackendInfo]] = {kind: {} for kind in GROUPS}


def reset_registry() -> None:
    """Forget discovered entry points, loaded backends and `register_store()` calls.

    Meant for tests, and for a long-lived process that installed a plugin after start-up.
    """
    global _discovered  # noqa: PLW0603 - the cache is per process by design
    with _lock:
        _discovered = None
        _loaded.clear()
        for names in _registered.values():
            names.clear()


def _singular(kind: BackendKind) -> str:
    return {"stores": "store", "signers": "signer", "checkpoints": "checkpoint reader"}[kind]


def _check_kind(kind: str) -> BackendKind:
    if kind not in GROUPS:
        msg = f"backend kinds are {', '.join(get_args(BackendKind))} (got {kind!r})"
        raise ConfigurationError(msg)
    return kind  # type: ignore[return-value]


def _discover() -> dict[BackendKind, dict[str, list[BackendInfo]]]:
    global _discovered  # noqa: PLW0603 - the cache is per process by design
    with _lock:
        if _discovered is not None:
            return _discovered
        found: dict[BackendKind, dict[str, list[BackendInfo]]] = {kind: {} for kind in GROUPS}
        for kind, group in GROUPS.items():
            for ep in importlib.metadata.entry_points(group=group):
                dist = ep.dist
                info = BackendInfo(
                    name=ep.name,
                    kind=kind,
                    target=ep.value,
                    distribution=dist.name if dist is not None else None,
                    version=dist.version if dist is not None else None,
                    entry_point=ep,
                )
                same_name = found[kind].setdefault(ep.name, [])
                # One distribution seen twice on sys.path is not a conflict.
                if all(other.distribution != info.distribution for other in same_name):
                    same_name.append(info)
        _discovered = found
        return found


def available_backends(kind: BackendKind) -> list[BackendInfo]:
    """List the installed and registered backends of one kind, without importing any.

    A name claimed by two distributions appears once per distribution (choosing it raises
    [`AmbiguousBackend`][pausetoken.exceptions.AmbiguousBackend]).

    Examples:
        >>> "memory" in [b.name for b in available_backends("stores")]
        True

    Args:
        kind: ``"stores"``, ``"signers"`` or ``"checkpoints"``.

    Returns:
        The backends sorted by name, then distribution.

    Raises:
        ConfigurationError: for an unknown ``kind``.
    """
    kind = _check_kind(kind)
    discovered = _discover()
    with _lock:
        registered = dict(_registered[kind])
    infos = [
        info for name, infos in discovered[kind].items() if name not in registered for info in infos
    ]
    infos.extend(registered.values())
    return sorted(infos, key=lambda b: (b.name, b.distribution or ""))


def _resolve(kind: BackendKind, name: str) -> BackendInfo:
    with _lock:
        registered = _registered[kind].get(name)
    if registered is not None:
        return registered
    candidates = _discover()[kind].get(name, [])
    if len(candidates) > 1:
        providers = " and ".join(
            f"{c.distribution or '?'} {c.version or ''}".strip() for c in candidates
        )
        msg = (
            f"two distributions register the {_singular(kind)} {name!r}: {providers}; "
            "uninstall one of them"
        )
        raise AmbiguousBackend(msg)
    if candidates:
        return candidates[0]
    hint = _KNOWN[kind].get(name)
    if hint is not None:
        msg = f"the {_singular(kind)} {name!r} is not installed: it is {hint}"
        raise BackendNotInstalled(msg)
    installed = sorted({b.name for b in available_backends(kind)})
    msg = (
        f"no {_singular(kind)} is named {name!r}; installed: "
        f"{', '.join(installed) if installed else 'none'}"
    )
    raise UnknownBackend(msg)


@overload
def load(kind: Literal["stores"], name: str) -> StoreFactory: ...
@overload
def load(kind: Literal["signers"], name: str) -> SignerFactory: ...
@overload
def load(kind: Literal["checkpoints"], name: str) -> ReaderFactory: ...
def load(kind: BackendKind, name: str) -> StoreFactory | SignerFactory | ReaderFactory:
    """Import the backend ``name`` of ``kind`` (once per process) and return its factory.

    Args:
        kind: ``"stores"``, ``"signers"`` or ``"checkpoints"``.
        name: Its entry-point name (or a name given to `register_store()`).

    Returns:
        The backend's factory, whose ``api_version`` and factory method were checked.

    Raises:
        UnknownBackend: nothing of that name is installed or registered.
        BackendNotInstalled: pausetoken knows the name but its distribution (or a module it
            needs) is missing; the message names the ``pip install``.
        AmbiguousBackend: two distributions register that name.
        ConfigurationError: it fails to import, has no supported ``api_version`` or lacks
            its factory method.
    """
    return cast(
        "StoreFactory | SignerFactory | ReaderFactory", _resolve(_check_kind(kind), name).load()
    )


def load_signer(name: str) -> SignerFactory:
    """Load the signer registered as ``name`` (``"jose"``, ``"sealed"``, a plugin's)."""
    return load("signers", name)


def load_checkpoints(name: str) -> ReaderFactory:
    """Load the checkpoint reader registered as ``name`` (``"memory"``, ``"langgraph"``)."""
    return load("checkpoints", name)


def _import_target(target: str) -> Any:
    match = _TARGET.match(target)
    if match is None:
        msg = f"a backend target is 'package.module:attribute' (got {target!r})"
        raise ConfigurationError(msg)
    obj: Any = importlib.import_module(match["module"])
    try:
        for part in match["attr"].split("."):
            obj = getattr(obj, part)
    except AttributeError as exc:
        msg = f"{match['module']!r} has no attribute {match['attr']!r}"
        raise ConfigurationError(msg, code="backend_import_failed") from exc
    return obj


def _missing_name(exc: ImportError | AttributeError) -> tuple[str, str] | None:
    """``(module, name)`` of a failed ``from module import name`` or ``module.name``."""
    if isinstance(exc, AttributeError):
        module = getattr(exc.obj, "__name__", None) if isinstance(exc.name, str) else None
        return None if module is None else (module, cast("str", exc.name))
    match = _CANNOT_IMPORT.match(str(exc))
    return None if match is None else (match["module"], match["name"])


def _moved_name(exc: ImportError | AttributeError) -> str | None:
    """What a name or module of store API 1 that ``exc`` failed to find is now, if it is one."""
    if isinstance(exc, ModuleNotFoundError):
        if exc.name in _GONE_MODULES:
            return f"{exc.name} is gone: its names are in pausetoken.plugins"
        return None
    found = _missing_name(exc)
    if found is None or found[0].partition(".")[0] != "pausetoken":
        return None
    new = _MOVED_NAMES.get(found[1])
    if new is None:
        return None
    if new == found[1]:
        return f"`{new}` is now in pausetoken.plugins"
    return f"`{found[1]}` is now `{new}` in pausetoken.plugins"


def _missing_methods(store: object) -> list[str]:
    """The `TokenStore` methods ``store`` lacks, in the protocol's order."""
    wanted = [
        name for name, value in vars(TokenStore).items() if inspect.iscoroutinefunction(value)
    ]
    return [name for name in wanted if not callable(getattr(store, name, None))]


def _check_factory(info: BackendInfo, obj: object) -> None:
    version = getattr(obj, "api_version", None)
    supported = _API_VERSIONS[info.kind]
    if isinstance(version, int) and not isinstance(version, bool) and version in supported:
        method = _FACTORY_METHODS[info.kind]
        if callable(getattr(obj, method, None)):
            return
        msg = f"the {_singular(info.kind)} {info.name!r} ({info.target}) has no {method}()"
        raise ConfigurationError(msg, code="backend_api_version")
    wanted = ", ".join(str(v) for v in sorted(supported))
    found = "none" if version is None else repr(version)
    msg = (
        f"the {_singular(info.kind)} {info.name!r} ({info.target}) declares api_version "
        f"{found}; this pausetoken supports {wanted}"
    )
    if info.kind == "stores" and version == 1:
        msg += (
            " (store API 2 adds renew() and check(), keys rows by pause, only ever raises a "
            "row's expiry and leaves live claims unrevoked: upgrade the store's distribution; "
            f"its authors: {_MIGRATION})"
        )
    raise ConfigurationError(msg, code="backend_api_version")


def register_store(name: str, target: Any, *, replace: bool = False) -> None:
    """Register a store under a URL family name, in code, for this process.

    Registration is process-wide (like an installed entry point) and lasts until
    `reset_registry()`. ``target`` may be the store class itself or a
    ``"module:attr"`` string imported on first use.

    Examples:
        Listed at once, imported by the first ``open_store("inhouse://...")``:

        >>> register_store("inhouse", "myapp.stores:InHouseStore")
        >>> [b.target for b in available_backends("stores") if b.name == "inhouse"]
        ['myapp.stores:InHouseStore']
        >>> reset_registry()

    Args:
        name: The URL family it is chosen by (lower case, e.g. ``"inhouse"``).
        target: The store class (with ``api_version`` and ``from_url``) or ``"module:attr"``.
        replace: Allow shadowing a store already registered or installed under ``name``.

    Raises:
        AmbiguousBackend: ``name`` is already registered or installed and ``replace`` is
            false (two providers for one name, as with two distributions).
        ConfigurationError: ``name`` is not a valid lower-case name or ``target`` is a
            string that is not ``"module:attr"``.
    """
    if not _NAME.match(name):
        msg = f"a store name is lower-case letters, digits and '_.-' (got {name!r})"
        raise ConfigurationError(msg)
    if isinstance(target, str):
        if not _TARGET.match(target):
            msg = f"a backend target is 'package.module:attribute' (got {target!r})"
            raise ConfigurationError(msg)
        target_name = target
    else:
        module = getattr(target, "__module__", "?")
        target_name = f"{module}:{getattr(target, '__qualname__', type(target).__qualname__)}"
    info = BackendInfo(
        name=name,
        kind="stores",
        target=target_name,
        distribution=None,
        version=None,
        obj=target,
    )
    with _lock:
        if not replace:
            installed = _discover()["stores"].get(name, [])
            existing = _registered["stores"].get(name)
            if existing is not None or installed:
                source = (
                    "registered in code"
                    if existing is not None
                    else f"installed by {installed[0].distribution}"
                )
                msg = f"a store named {name!r} is already {source}; pass replace=True to shadow it"
                raise AmbiguousBackend(msg)
        _registered["stores"][name] = info
        _loaded.pop(("stores", name, None, target_name), None)


def _store_info(url: str) -> BackendInfo:
    if "://" not in url and _TARGET.match(url):
        return BackendInfo(
            name=url, kind="stores", target=url, distribution=None, version=None, obj=url
        )
    return _resolve("stores", store_family(url))


def load_store(url: str) -> StoreFactory:
    """Load the store class a URL (or ``module:attr``) chooses, without opening it.

    Raises:
        As `open_store()`, except that nothing is opened.
    """
    return cast("StoreFactory", _store_info(url).load())


def open_store(url: str, **options: Any) -> TokenStore:
    """Open the store a URL names.

    The URL's scheme family (before ``+``) picks the installed store (``memory://``,
    ``sqlite+aiosqlite:///tokens.db``, ``postgresql+asyncpg://...``,
    ``mysql+asyncmy://...``) and its ``from_url`` receives the whole URL and ``options``.
    ``"package.module:Class"`` (no ``://``) opens an unpublished store class directly; its
    ``from_url`` receives that string.

    Examples:
        >>> import warnings, pausetoken
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", pausetoken.MemoryStoreWarning)
        ...     store = open_store("memory://")
        >>> isinstance(store, pausetoken.TokenStore)
        True

    Args:
        url: The store URL, or ``"module:attr"``.
        **options: Passed to the store's ``from_url``.

    Returns:
        The opened store (the caller closes it with ``aclose``).

    Raises:
        UnknownBackend: no store serves that scheme.
        BackendNotInstalled: the store is known but not installed (the message names the
            ``pip install``).
        AmbiguousBackend: two distributions register the scheme.
        ConfigurationError: the store refused the URL or options, failed to import, has no
            supported ``api_version`` or did not return a ``TokenStore``.
    """
    shown = redact_url(url)
    info = _store_info(url)
    factory = cast("StoreFactory", info.load())
    try:
        store: object = factory.from_url(url, **options)
    except PauseTokenError:
        raise
    except Exception as exc:
        msg = f"the store {info.name!r} refused {shown}: {type(exc).__name__}"
        raise ConfigurationError(msg) from exc
    if not isinstance(store, TokenStore):
        msg = f"the store {info.name!r} ({info.target}) did not return a TokenStore"
        missing = _missing_methods(store)
        if missing:
            names = [f"{name}()" for name in missing]
            listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and no {names[-1]}"
            msg += f": {type(store).__qualname__} has no {listed}"
            if set(missing) <= {"renew", "check"}:
                msg += f", which store API 2 added (written for store API 1? {_MIGRATION})"
        raise ConfigurationError(msg, code="backend_api_version")
    logger.debug("opened store %r for %s", info.name, shown)
    return store
