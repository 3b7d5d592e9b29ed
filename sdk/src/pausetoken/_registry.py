"""Choosing stores, signers and checkpoint readers by name: the plugin registry.

Backends register under three entry-point groups, built-ins included:
``pausetoken.stores``, ``pausetoken.signers`` and ``pausetoken.checkpoints``. A store is
chosen by URL: the scheme's family before ``+`` names the entry point
(``postgresql+asyncpg://...`` -> ``postgresql``) and the backend's ``from_url`` receives the
whole URL. ``package.module:Class`` (no ``://``) names an unpublished in-house store directly.

Discovery is lazy: a group's entry points are read (names only, nothing imported) when the
group is first used, and cached; only the chosen backend is imported, and the loaded object
is cached too. One broken plugin therefore never disturbs the others.

Each kind has its `PluginLoader` (in `_LOADERS`), which holds those two caches and the
`register_store()` calls; `reset_registry()` clears them (tests do so around every test).
What is particular to backends is here: the ``api_version`` each kind must declare, what
pausetoken suggests installing, and what it says to a plugin written for store API 1.
"""

from __future__ import annotations

import inspect
import logging
import re
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, cast, get_args, overload

from pausetoken import exceptions as errors
from pausetoken._install import install_hint
from pausetoken._loader import BackendInfo, PluginLoader, is_target
from pausetoken._reader_api import CHECKPOINTS_API_VERSION
from pausetoken._signer_api import SIGNERS_API_VERSION
from pausetoken._store_api import STORE_API_VERSION, TokenStore
from pausetoken._urls import redact_url, store_family

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
        "pydantic-ai": (
            f"provided by pausetoken-pydantic-ai: {install_hint('pausetoken[pydantic-ai]')}"
        ),
        "openai-agents": (
            f"provided by pausetoken-openai-agents: {install_hint('pausetoken[openai-agents]')}"
        ),
        "mcp": f"provided by pausetoken-mcp: {install_hint('pausetoken[mcp]')}",
        "agui": f"provided by pausetoken-agui: {install_hint('pausetoken[agui]')}",
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


#: One of each kind, as messages name it.
_NOUNS: Final[Mapping[BackendKind, str]] = {
    "stores": "store",
    "signers": "signer",
    "checkpoints": "checkpoint reader",
}


class _BackendLoader(PluginLoader[object]):
    """The backends of one kind: factories declaring an ``api_version`` this core drives."""

    not_installed_code: ClassVar[errors.Code] = errors.BackendNotInstalled.BACKEND_NOT_INSTALLED
    ambiguous_code: ClassVar[errors.Code] = errors.AmbiguousBackend.AMBIGUOUS_BACKEND
    import_failed_code: ClassVar[errors.Code] = errors.PluginError.BACKEND_IMPORT_FAILED

    def where(self, info: BackendInfo) -> str:
        """The backend, its target and the distribution it comes from (or "code")."""
        return f"the {self.noun} {info.name!r} ({info.target} from {info.distribution or 'code'})"

    def explain(self, info: BackendInfo, exc: Exception) -> errors.PauseTokenError | None:
        """A name of store API 1, a missing module, or the name an import did not find."""
        if not isinstance(exc, ImportError | AttributeError):
            return None
        moved = _moved_name(exc)
        if moved is not None:
            msg = f"{self.where(info)} was written for store API 1: {moved}; {_MIGRATION}"
            return errors.PluginError(msg, code=errors.PluginError.BACKEND_API_VERSION)
        if isinstance(exc, ModuleNotFoundError):
            hint = self.known.get(info.name)
            missing = exc.name or "a module"
            if hint is not None:
                msg = f"the {self.noun} {info.name!r} needs {missing!r}, {hint}"
                return errors.BackendNotInstalled(msg)
            msg = f"{self.where(info)} cannot be imported: the module {missing!r} is not installed"
            return errors.BackendNotInstalled(msg)
        name = _missing_name(exc)
        if name is None:
            return None
        msg = f"{self.where(info)} failed to import: cannot import {name[1]!r} from {name[0]!r}"
        return errors.ConfigurationError(msg, code=self.import_failed_code)

    def check(self, info: BackendInfo, found: object) -> object:
        """``found`` if it declares a supported ``api_version`` and has its factory method."""
        kind = cast("BackendKind", self.kind)
        version = getattr(found, "api_version", None)
        supported = _API_VERSIONS[kind]
        if isinstance(version, int) and not isinstance(version, bool) and version in supported:
            method = _FACTORY_METHODS[kind]
            if callable(getattr(found, method, None)):
                return found
            msg = f"the {self.noun} {info.name!r} ({info.target}) has no {method}()"
            raise errors.PluginError(msg, code=errors.PluginError.BACKEND_API_VERSION)
        wanted = ", ".join(str(v) for v in sorted(supported))
        shown = "none" if version is None else repr(version)
        msg = (
            f"the {self.noun} {info.name!r} ({info.target}) declares api_version "
            f"{shown}; this pausetoken supports {wanted}"
        )
        if kind == "stores" and version == 1:
            msg += (
                " (store API 2 adds renew() and check(), keys rows by pause, only ever raises a "
                "row's expiry and leaves live claims unrevoked: upgrade the store's distribution; "
                f"its authors: {_MIGRATION})"
            )
        raise errors.PluginError(msg, code=errors.PluginError.BACKEND_API_VERSION)


#: The loader of each kind, holding what this process discovered, imported and registered.
_LOADERS: Final[Mapping[BackendKind, _BackendLoader]] = {
    kind: _BackendLoader(kind, group, _NOUNS[kind], _KNOWN[kind]) for kind, group in GROUPS.items()
}


def reset_registry() -> None:
    """Forget discovered entry points, loaded backends and `register_store()` calls.

    Meant for tests, and for a long-lived process that installed a plugin after start-up.
    """
    for loader in _LOADERS.values():
        loader.clear()


def _check_kind(kind: str) -> BackendKind:
    if kind not in GROUPS:
        msg = f"backend kinds are {', '.join(get_args(BackendKind))} (got {kind!r})"
        raise errors.ConfigurationError(msg)
    return kind  # type: ignore[return-value]


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
    return _LOADERS[_check_kind(kind)].available()


def _resolve(kind: BackendKind, name: str) -> BackendInfo:
    loader = _LOADERS[kind]
    found = loader.find(name)
    if found is not None:
        return found
    installed = sorted({b.name for b in loader.available()})
    msg = (
        f"no {loader.noun} is named {name!r}; installed: "
        f"{', '.join(installed) if installed else 'none'}"
    )
    raise errors.UnknownBackend(msg)


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
    _LOADERS["stores"].register(name, target, replace=replace)


def _store_info(url: str) -> BackendInfo:
    if "://" not in url and is_target(url):
        return _LOADERS["stores"].given(url)
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
    except errors.PauseTokenError:
        raise
    except Exception as exc:
        msg = f"the store {info.name!r} refused {shown}: {type(exc).__name__}"
        raise errors.ConfigurationError(msg) from exc
    if not isinstance(store, TokenStore):
        msg = f"the store {info.name!r} ({info.target}) did not return a TokenStore"
        missing = _missing_methods(store)
        if missing:
            names = [f"{name}()" for name in missing]
            listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and no {names[-1]}"
            msg += f": {type(store).__qualname__} has no {listed}"
            if set(missing) <= {"renew", "check"}:
                msg += f", which store API 2 added (written for store API 1? {_MIGRATION})"
        raise errors.PluginError(msg, code=errors.PluginError.BACKEND_API_VERSION)
    logger.debug("opened store %r for %s", info.name, shown)
    return store
