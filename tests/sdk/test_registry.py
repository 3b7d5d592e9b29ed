"""The plugin registry: choosing backends by name and URL, lazily, with helpful errors.

Plugins are simulated with real distribution metadata (``*.dist-info`` with
``entry_points.txt``) in a temporary directory put on ``sys.path``, so discovery goes
through :mod:`importlib.metadata` exactly as for installed distributions.
"""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_distributions import Site, hide_distributions

import pausetoken
from pausetoken import MemoryStore, available_backends, open_store, redact_url, register_store
from pausetoken import _registry as registry
from pausetoken._install import PUBLISHED, install_hint
from pausetoken.exceptions import (
    AmbiguousBackend,
    BackendNotInstalled,
    ConfigurationError,
    UnknownBackend,
)

pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")

STORE_MODULE = """
from pausetoken import MemoryStore

calls = []

class Store(MemoryStore):
    api_version = {api_version}

    @classmethod
    def from_url(cls, url, **options):
        calls.append((url, options))
        return cls()
"""


def store_module(site: Site, api_version: object = 2) -> str:
    """A module whose ``Store`` is a ``MemoryStore`` declaring ``api_version``."""
    return site.module(STORE_MODULE.format(api_version=api_version))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    return Site(tmp_path, monkeypatch)


# -- URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "family"),
    [
        ("memory://", "memory"),
        ("memory:", "memory"),
        ("sqlite+aiosqlite:///tokens.db", "sqlite"),
        ("sqlite:///tokens.db", "sqlite"),
        ("postgresql+asyncpg://app:pw@db:5432/tokens", "postgresql"),
        ("mysql+asyncmy://app@db/tokens", "mysql"),
        ("mariadb+asyncmy://app@db/tokens", "mariadb"),
        ("redis://cache:6379/0", "redis"),
        ("rediss://cache:6380/0", "redis"),
        ("mongodb://db/tokens", "mongodb"),
        ("mongodb+srv://cluster.example/tokens", "mongodb"),
        ("PostgreSQL+AsyncPG://db/x", "postgresql"),
    ],
)
def test_a_url_chooses_the_store_named_by_its_scheme_family(url: str, family: str) -> None:
    assert registry.store_family(url) == family


@pytest.mark.parametrize("url", ["", "tokens.db", "://nohost", "1sqlite://x"])
def test_a_url_without_a_scheme_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError):
        registry.store_family(url)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@host/db", "postgresql://u:***@host/db"),
        ("postgresql+asyncpg://u:p%40ss@host:5432/db", "postgresql+asyncpg://u:***@host:5432/db"),
        ("postgresql://u:p@ss@host/db", "postgresql://u:***@host/db"),
        ("postgresql://u:pa/ss@host/db", "postgresql://u:***@host/db"),
        ("redis://:pw@cache:6379/0", "redis://:***@cache:6379/0"),
        ("mongodb://u:pw@h1:1,h2:2/db?replicaSet=rs", "mongodb://u:***@h1:1,h2:2/db?replicaSet=rs"),
        ("redis://cache/0?password=pw&db=1", "redis://cache/0?password=***&db=1"),
        ("postgresql://u@host/db", "postgresql://u@host/db"),
        ("sqlite+aiosqlite:///tokens.db", "sqlite+aiosqlite:///tokens.db"),
        ("memory://", "memory://"),
        ("company.stores:Store", "company.stores:Store"),
    ],
)
def test_redact_url_hides_passwords(url: str, shown: str) -> None:
    assert redact_url(url) == shown


# -- built-ins and lazy discovery ------------------------------------------------------


def test_the_builtin_backends_are_listed_with_their_distribution() -> None:
    stores = {b.name: b for b in available_backends("stores")}
    memory = stores["memory"]
    assert memory.kind == "stores"
    assert memory.target == "pausetoken._memory_store:MemoryStore"
    assert memory.distribution == "pausetoken"
    assert memory.version == importlib.metadata.version("pausetoken")
    assert memory.importable is True
    assert memory.load() is MemoryStore
    signers = {b.name: b.target for b in available_backends("signers")}
    assert signers["jose"] == "pausetoken._signers:JoseSigner"
    assert signers["sealed"] == "pausetoken._signers:SealedSigner"
    checkpoints = {b.name: b.target for b in available_backends("checkpoints")}
    assert checkpoints["memory"] == "pausetoken._memory_checkpoints:MemoryCheckpoints"


def test_open_store_opens_the_memory_store() -> None:
    store = open_store("memory://")
    assert isinstance(store, MemoryStore)
    assert isinstance(store, pausetoken.TokenStore)


def test_an_unknown_kind_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="backend kinds"):
        available_backends("queues")  # type: ignore[arg-type]


@pytest.mark.slow
def test_listing_imports_no_backend_and_choosing_memory_imports_no_other() -> None:
    script = textwrap.dedent(
        """
        import sys, warnings
        warnings.simplefilter("ignore")
        import pausetoken
        for kind in ("stores", "signers", "checkpoints"):
            assert pausetoken.available_backends(kind)
        heavy = ("sqlalchemy", "langgraph", "redis", "pymongo", "pausetoken_sqlalchemy",
                 "pausetoken_langgraph", "pausetoken_inhouse", "pausetoken_inhouse_rival")
        listed = sorted(m for m in heavy if m in sys.modules)
        pausetoken.open_store("memory://")
        opened = sorted(m for m in heavy if m in sys.modules)
        print(listed, opened)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[] []"


def test_each_group_is_read_once_when_first_used_until_the_registry_is_reset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.metadata.entry_points
    calls: list[str] = []

    def counting(*, group: str) -> importlib.metadata.EntryPoints:
        calls.append(group)
        return real(group=group)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    available_backends("stores")
    available_backends("signers")
    open_store("memory://")
    available_backends("signers")
    assert calls == [registry.GROUPS["stores"], registry.GROUPS["signers"]]
    registry.reset_registry()
    available_backends("stores")
    assert calls[2:] == [registry.GROUPS["stores"]]


def test_only_the_chosen_plugin_is_imported_and_it_is_imported_once(site: Site) -> None:
    chosen, other = store_module(site), store_module(site)
    site.distribution(
        "acme-stores",
        "1.2.3",
        {"pausetoken.stores": {"acme": f"{chosen}:Store", "other": f"{other}:Store"}},
    )
    infos = {b.name: b for b in available_backends("stores")}
    assert (infos["acme"].distribution, infos["acme"].version) == ("acme-stores", "1.2.3")
    assert chosen not in sys.modules
    assert other not in sys.modules
    store = open_store("acme+driver://u:pw@host/db", pool=3)
    assert chosen in sys.modules
    assert other not in sys.modules
    module = sys.modules[chosen]
    assert module.calls == [("acme+driver://u:pw@host/db", {"pool": 3})]
    assert isinstance(store, module.Store)
    assert registry.load("stores", "acme") is module.Store


# -- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "install"),
    [
        ("stores", "sqlite", "pausetoken[sqlite]"),
        ("stores", "postgresql", "pausetoken[postgresql]"),
        ("stores", "mysql", "pausetoken[mysql]"),
        ("stores", "mariadb", "pausetoken[mysql]"),
        ("checkpoints", "langgraph", "pausetoken[langgraph]"),
        ("checkpoints", "pydantic-ai", "pausetoken[pydantic-ai]"),
        ("checkpoints", "openai-agents", "pausetoken[openai-agents]"),
        ("checkpoints", "mcp", "pausetoken[mcp]"),
        ("checkpoints", "agui", "pausetoken[agui]"),
    ],
)
def test_a_known_but_missing_backend_names_the_pip_install(
    monkeypatch: pytest.MonkeyPatch, kind: registry.BackendKind, name: str, install: str
) -> None:
    hide_distributions(
        monkeypatch,
        "pausetoken-sqlalchemy",
        "pausetoken-langgraph",
        "pausetoken-pydantic-ai",
        "pausetoken-openai-agents",
        "pausetoken-mcp",
        "pausetoken-agui",
    )
    with pytest.raises(BackendNotInstalled) as info:
        registry.load(kind, name)
    assert info.value.code == "backend_not_installed"
    assert install_hint(install) in info.value.detail


def test_until_published_the_hint_installs_from_a_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide_distributions(monkeypatch, "pausetoken-sqlalchemy")
    with pytest.raises(BackendNotInstalled) as info:
        registry.load("stores", "postgresql")
    if not PUBLISHED:
        assert '"./sdk" "./backends/sqlalchemy[postgresql]"' in info.value.detail
        assert "pausetoken[" not in info.value.detail


def test_a_missing_store_error_never_shows_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_distributions(monkeypatch, "pausetoken-sqlalchemy")
    for url in ("postgresql+asyncpg://app:hunter2@db/x", "nosuch://app:hunter2@db/x"):
        with pytest.raises(ConfigurationError) as info:
            open_store(url)
        assert "hunter2" not in str(info.value)


def test_an_unknown_backend_lists_the_installed_names() -> None:
    with pytest.raises(UnknownBackend) as info:
        open_store("nosuch://host")
    assert info.value.code == "unknown_backend"
    assert "memory" in info.value.detail
    with pytest.raises(UnknownBackend, match="jose"):
        registry.load_signer("nosuch")
    with pytest.raises(UnknownBackend, match="memory"):
        registry.load_checkpoints("nosuch")


def test_two_distributions_claiming_one_name_are_refused_naming_both(site: Site) -> None:
    first, second = store_module(site), store_module(site)
    site.distribution("acme-a", "1.0", {"pausetoken.stores": {"dup": f"{first}:Store"}})
    site.distribution("acme-b", "2.0", {"pausetoken.stores": {"dup": f"{second}:Store"}})
    with pytest.raises(AmbiguousBackend) as info:
        open_store("dup://x")
    assert info.value.code == "ambiguous_backend"
    assert "acme-a 1.0" in info.value.detail
    assert "acme-b 2.0" in info.value.detail
    assert first not in sys.modules
    assert second not in sys.modules
    listed = [(b.name, b.distribution) for b in available_backends("stores") if b.name == "dup"]
    assert listed == [("dup", "acme-a"), ("dup", "acme-b")]
    assert isinstance(open_store("memory://"), MemoryStore)  # other names are unaffected


@pytest.mark.parametrize("api_version", ["None", "1", "3", "True", "'2'"])
def test_a_missing_or_unsupported_api_version_is_refused(site: Site, api_version: str) -> None:
    module = store_module(site, api_version=api_version)
    site.distribution("acme", "1.0", {"pausetoken.stores": {"acme": f"{module}:Store"}})
    with pytest.raises(ConfigurationError) as info:
        open_store("acme://")
    assert info.value.code == "backend_api_version"
    if api_version == "1":
        assert "renew() and check()" in info.value.detail
        assert "see the migration notes" in info.value.detail
    (backend,) = [b for b in available_backends("stores") if b.name == "acme"]
    assert backend.importable is False


def test_a_plugin_that_fails_to_import_is_reported_without_breaking_others(site: Site) -> None:
    broken = site.module("raise RuntimeError('boom at import')\n")
    good = store_module(site)
    site.distribution(
        "acme",
        "1.0",
        {"pausetoken.stores": {"broken": f"{broken}:Store", "good": f"{good}:Store"}},
    )
    with pytest.raises(ConfigurationError) as info:
        open_store("broken://")
    assert info.value.code == "backend_import_failed"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "acme" in info.value.detail
    assert isinstance(open_store("good://"), MemoryStore)


def test_a_plugin_missing_a_dependency_is_not_installed_chained_to_the_cause(
    site: Site,
) -> None:
    needy = site.module("import pausetoken_no_such_driver\n")
    site.distribution("acme", "1.0", {"pausetoken.stores": {"needy": f"{needy}:Store"}})
    with pytest.raises(BackendNotInstalled) as info:
        open_store("needy://")
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert "pausetoken_no_such_driver" in info.value.detail


def test_a_store_that_refuses_its_url_is_a_configuration_error_without_the_password(
    site: Site,
) -> None:
    module = site.module(
        """
        class Store:
            api_version = 2

            @classmethod
            def from_url(cls, url, **options):
                raise ValueError(url)
        """
    )
    site.distribution("acme", "1.0", {"pausetoken.stores": {"acme": f"{module}:Store"}})
    with pytest.raises(ConfigurationError) as info:
        open_store("acme://u:hunter2@host")
    assert "hunter2" not in str(info.value)
    assert "acme://u:***@host" in info.value.detail
    assert isinstance(info.value.__cause__, ValueError)


def test_a_factory_that_returns_no_store_is_refused(site: Site) -> None:
    module = site.module(
        """
        class Store:
            api_version = 2

            @classmethod
            def from_url(cls, url, **options):
                return object()
        """
    )
    site.distribution("acme", "1.0", {"pausetoken.stores": {"acme": f"{module}:Store"}})
    with pytest.raises(ConfigurationError, match="did not return a TokenStore"):
        open_store("acme://")


def test_a_factory_returning_a_partial_store_names_the_missing_methods(site: Site) -> None:
    # The shape of a store written for store API 1: no renew() and no check().
    module = site.module(
        """
        class Partial:
            async def claim(self, request): ...
            async def commit(self, pause_key, lease_id, expires_at): ...
            async def release(self, pause_key, lease_id): ...
            async def revoke(self, pause_key, scope_hash, name, expires_at, now): ...
            async def status(self, pause_key): ...
            async def purge(self, before): ...
            async def aclose(self): ...

        class Store:
            api_version = 2

            @classmethod
            def from_url(cls, url, **options):
                return Partial()
        """
    )
    site.distribution("acme", "1.0", {"pausetoken.stores": {"acme": f"{module}:Store"}})
    with pytest.raises(ConfigurationError) as info:
        open_store("acme://")
    assert info.value.code == "backend_api_version"
    assert "has no renew() and no check()" in info.value.detail
    assert "store API 1" in info.value.detail
    assert 'see the migration notes ("Migrating from store API 1"' in info.value.detail


def test_a_partial_store_missing_other_methods_names_them_without_the_api_1_advice(
    site: Site,
) -> None:
    module = site.module(
        """
        from pausetoken import MemoryStore

        class Partial:
            claim = MemoryStore.claim
            renew = MemoryStore.renew
            check = MemoryStore.check

        class Store:
            api_version = 2

            @classmethod
            def from_url(cls, url, **options):
                return Partial()
        """
    )
    site.distribution("acme", "1.0", {"pausetoken.stores": {"acme": f"{module}:Store"}})
    with pytest.raises(ConfigurationError) as info:
        open_store("acme://")
    detail = info.value.detail
    assert "has no commit(), release(), revoke(), status(), purge() and no aclose()" in detail
    assert "store API 1" not in detail


# -- plugins written for store API 1 ----------------------------------------------------------

#: What a plugin of store API 1 imported, and what the message must say instead.
OLD_IMPORTS = {
    "renamed": (
        "from pausetoken import TokenRecord, TokenState\n",
        "`TokenRecord` is now `PauseRecord` in pausetoken.plugins",
    ),
    "renamed, from plugins": (
        "from pausetoken.plugins import TokenState\n",
        "`TokenState` is now `PauseState` in pausetoken.plugins",
    ),
    "moved": (
        "from pausetoken import ClaimOutcome, ClaimRequest\n",
        "`ClaimOutcome` is now in pausetoken.plugins",
    ),
    "attribute": (
        "import pausetoken\nRecord = pausetoken.TokenRecord\n",
        "`TokenRecord` is now `PauseRecord` in pausetoken.plugins",
    ),
    "private module": (
        "from pausetoken._store import TokenRecord\n",
        "pausetoken._store is gone: its names are in pausetoken.plugins",
    ),
}


@pytest.mark.parametrize("old", sorted(OLD_IMPORTS))
def test_a_plugin_importing_a_renamed_name_is_told_what_it_is_now(site: Site, old: str) -> None:
    source, says = OLD_IMPORTS[old]
    module = site.module(source + "class Store:\n    api_version = 1\n")
    site.distribution("acme", "1.0", {"pausetoken.stores": {"acme": f"{module}:Store"}})
    with pytest.raises(ConfigurationError) as info:
        open_store("acme://")
    assert not isinstance(info.value, BackendNotInstalled)
    assert info.value.code == "backend_api_version"
    detail = info.value.detail
    assert f"the store 'acme' ({module}:Store from acme) was written for store API 1" in detail
    assert says in detail
    assert 'see the migration notes ("Migrating from store API 1"' in detail
    assert "install" not in detail
    assert "ImportError" not in detail


def test_a_module_attr_store_importing_a_renamed_name_is_told_too(site: Site) -> None:
    module = site.module("from pausetoken import TokenRecord\n")
    with pytest.raises(ConfigurationError, match="`TokenRecord` is now `PauseRecord`") as info:
        open_store(f"{module}:Store")
    assert info.value.code == "backend_api_version"


def test_a_name_pausetoken_never_had_is_an_import_failure_naming_it(site: Site) -> None:
    module = site.module("from pausetoken import NoSuchThing\n")
    site.distribution("acme", "1.0", {"pausetoken.stores": {"acme": f"{module}:Store"}})
    with pytest.raises(ConfigurationError) as info:
        open_store("acme://")
    assert not isinstance(info.value, BackendNotInstalled)
    assert info.value.code == "backend_import_failed"
    assert "cannot import 'NoSuchThing' from 'pausetoken'" in info.value.detail
    assert isinstance(info.value.__cause__, ImportError)


# -- first-party backends declare their API version as a literal -----------------------------

ROOT = Path(__file__).parents[2]
#: Each separately installed backend class, where it declares api_version, and the version.
FIRST_PARTY = {
    "backends/sqlalchemy/src/pausetoken_sqlalchemy/_store.py": ("SQLAlchemyStore", 2),
    "backends/redis/src/pausetoken_redis/_store.py": ("RedisStore", 2),
    "backends/mongo/src/pausetoken_mongo/_store.py": ("MongoStore", 2),
    "backends/langgraph/src/pausetoken_langgraph/_reader.py": ("LangGraphCheckpoints", 1),
    "backends/pydantic-ai/src/pausetoken_pydantic_ai/_reader.py": ("ConversationCheckpoints", 1),
    "backends/openai-agents/src/pausetoken_openai_agents/_reader.py": ("AgentRunCheckpoints", 1),
    "backends/mcp/src/pausetoken_mcp/_reader.py": ("ToolCallCheckpoints", 1),
    "backends/agui/src/pausetoken_agui/_reader.py": ("ThreadCheckpoints", 1),
}


@pytest.mark.parametrize("path", sorted(FIRST_PARTY))
def test_a_first_party_backend_declares_its_api_version_as_a_literal(path: str) -> None:
    # A constant imported from the installed core would always equal what that core
    # supports, so the registry's check could never refuse an outdated backend.
    class_name, version = FIRST_PARTY[path]
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    declared = [
        node.value
        for node in cls.body
        if isinstance(node, ast.AnnAssign | ast.Assign)
        and "api_version"
        in [
            t.id
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)
        ]
    ]
    assert len(declared) == 1, f"{class_name} declares api_version {len(declared)} times"
    (value,) = declared
    assert isinstance(value, ast.Constant), f"{class_name}.api_version is not a literal"
    assert value.value == version


# -- module:attr and register_store ---------------------------------------------------------


def test_module_attr_opens_an_unpublished_store(site: Site) -> None:
    module = store_module(site)
    store = open_store(f"{module}:Store", flavour="x")
    assert isinstance(store, MemoryStore)
    assert sys.modules[module].calls == [(f"{module}:Store", {"flavour": "x"})]


def test_module_attr_naming_nothing_is_a_configuration_error(site: Site) -> None:
    module = store_module(site)
    with pytest.raises(ConfigurationError, match="no attribute"):
        open_store(f"{module}:Nope")
    with pytest.raises(BackendNotInstalled):
        open_store("pausetoken_no_such_module:Store")


def test_register_store_adds_a_name_for_this_process(site: Site) -> None:
    eager, lazy = store_module(site), store_module(site)
    store_class = importlib.import_module(eager).Store
    register_store("scratch", store_class)
    register_store("lazy", f"{lazy}:Store")
    assert lazy not in sys.modules
    names = {b.name: b for b in available_backends("stores")}
    assert (names["scratch"].target, names["scratch"].distribution) == (f"{eager}:Store", None)
    assert names["lazy"].target == f"{lazy}:Store"
    assert isinstance(open_store("scratch://x"), store_class)
    open_store("lazy://")
    assert lazy in sys.modules
    registry.reset_registry()
    with pytest.raises(UnknownBackend):
        open_store("scratch://x")


def test_register_store_refuses_a_taken_name_unless_replacing(site: Site) -> None:
    register_store("scratch", MemoryStore)
    with pytest.raises(AmbiguousBackend, match="registered in code"):
        register_store("scratch", MemoryStore)
    with pytest.raises(AmbiguousBackend, match="installed by pausetoken"):
        register_store("memory", MemoryStore)
    module = store_module(site)
    register_store("memory", f"{module}:Store", replace=True)
    assert type(open_store("memory://")).__module__ == module


@pytest.mark.parametrize("name", ["", "Upper", "with space", "9lives"])
def test_register_store_refuses_invalid_names(name: str) -> None:
    with pytest.raises(ConfigurationError):
        register_store(name, MemoryStore)


def test_register_store_refuses_a_malformed_target() -> None:
    with pytest.raises(ConfigurationError, match="module:attribute"):
        register_store("scratch", "not a target")
