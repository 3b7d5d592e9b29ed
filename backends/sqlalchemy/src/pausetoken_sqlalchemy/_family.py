"""What one family of engines does its own way, the way SQLAlchemy's dialects carry it.

The store never asks which engine it runs on: it asks its `EngineFamily` (`SqliteFamily`,
`PostgresFamily`, `MySQLFamily`, one instance each) for the URL's driver, the engine's
defaults, the schema step's lock and DDL, the connections to hold, how to ping one, which
failures are permanent, and the statements of every operation. What is the same on every
engine stays here, in the base class; a family overrides only what differs.
"""

# The hooks most families need nothing in are empty on purpose, not forgotten abstractions.
# ruff: noqa: B027

from __future__ import annotations

import importlib
import warnings
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.exc import ArgumentError, SAWarning
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from pausetoken.exceptions import BackendNotInstalled, ConfigurationError, StoreMisconfigured
from pausetoken.plugins import install_hint
from pausetoken_sqlalchemy._connections import PooledConnections
from pausetoken_sqlalchemy._failures import causes

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy import Connection, Executable, Table
    from sqlalchemy.engine import URL

    from pausetoken_sqlalchemy._connections import ConnectionSet
    from pausetoken_sqlalchemy._failures import Problem
    from pausetoken_sqlalchemy._statements import Statements

__all__ = ["EngineFamily"]


class EngineFamily(ABC):
    """The engines one driver serves, and everything the store does differently on them."""

    #: The family's name, also the pip extra that installs its driver.
    name: ClassVar[str]
    #: URL backend names (the scheme before ``+``) this family serves, each with the
    #: backend name SQLAlchemy is given.
    backends: ClassVar[Mapping[str, str]]
    #: The one async driver the store runs on.
    driver: ClassVar[str]
    #: Options of engines the store creates itself, unless the user gives them.
    engine_defaults: ClassVar[Mapping[str, Any]] = {}
    #: The statements of every store operation on this family's engines.
    statements: ClassVar[type[Statements]]
    #: Whether the driver's connections never open an implicit transaction (so they need
    #: no switch to autocommit).
    driver_autocommits: ClassVar[bool] = False
    #: Whether the schema step takes a lock that belongs to its session, so that a failed
    #: step must drop its connection to release it.
    locks_schema: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    # -- URLs and engines -------------------------------------------------------------

    def require_driver(self) -> None:
        """Refuse, before anything is set up, when the driver is not installed.

        Raises:
            BackendNotInstalled: The message names the extra to install.
        """
        try:
            importlib.import_module(self.driver)
        except ImportError as exc:
            msg = (
                f"the {self.name} store needs the {self.driver} driver: "
                f"{install_hint(f'pausetoken-sqlalchemy[{self.name}]')}"
            )
            raise BackendNotInstalled(msg) from exc

    def with_driver(self, url: URL, *, label: str) -> URL:
        """``url`` naming this family's driver (filled in when the URL names none).

        Raises:
            ConfigurationError: The URL names another driver.
        """
        backend, _, driver = url.drivername.partition("+")
        if driver and driver != self.driver:
            msg = f"{label}: the {self.name} store runs on the {self.driver} driver, not {driver}"
            raise ConfigurationError(msg)
        return url.set(drivername=f"{self.backends[backend]}+{self.driver}")

    def serves(self, engine: AsyncEngine) -> bool:
        """Whether ``engine`` is one of this family's, on its driver."""
        dialect = engine.dialect
        return dialect.name in self.backends and dialect.driver == self.driver

    def require_support(self) -> None:
        """Refuse an engine this family cannot serve here (see `SqliteFamily`).

        Raises:
            ConfigurationError: Something the statements rely on is missing.
        """

    def create_engine(self, url: URL, options: Mapping[str, Any], *, label: str) -> AsyncEngine:
        """A new engine for ``url``, with this family's defaults under ``options``.

        Raises:
            ConfigurationError: An option is invalid, or the URL has options the driver
                does not take (``code="store_misconfigured"``).
        """
        try:
            with warnings.catch_warnings():
                # pysqlite warns about (and ignores) URL options it does not take.
                warnings.simplefilter("error", SAWarning)
                engine = create_async_engine(url, **{**self.engine_defaults, **options})
        except SAWarning as exc:
            raise self._unknown_url_options(label) from exc
        except (ArgumentError, TypeError, ValueError) as exc:
            msg = f"{label}: invalid engine options ({type(exc).__name__})"
            raise ConfigurationError(msg) from exc
        self._refuse_unknown_connect_args(engine, label)
        self.prepare_engine(engine, url)
        return engine

    def prepare_engine(self, engine: AsyncEngine, url: URL) -> None:
        """Set up an engine the store created (see `SqliteFamily`: pragmas)."""

    def connect_parameters(self) -> frozenset[str] | None:
        """What the driver's ``connect`` accepts (``None``: SQLAlchemy refuses the rest)."""
        return None

    def _refuse_unknown_connect_args(self, engine: AsyncEngine, label: str) -> None:
        # Refused when the store is opened, not when the first connection fails with them.
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", SAWarning)
                _args, kwargs = engine.dialect.create_connect_args(engine.url)
        except SAWarning as exc:
            raise self._unknown_url_options(label) from exc
        accepted = self.connect_parameters()
        unknown = sorted(set(kwargs) - accepted) if accepted is not None else []
        if unknown:
            names = ", ".join(repr(name[:40]) for name in unknown[:5])
            msg = f"{label}: unknown option(s) in the store URL: {names}"
            raise StoreMisconfigured(msg, code=StoreMisconfigured.STORE_MISCONFIGURED)

    def _unknown_url_options(self, label: str) -> ConfigurationError:
        msg = f"{label}: the URL has options the {self.name} driver does not take"
        return StoreMisconfigured(msg, code=StoreMisconfigured.STORE_MISCONFIGURED)

    # -- connections ------------------------------------------------------------------

    def hold_connections(
        self,
        engine: AsyncEngine,
        *,
        label: str,
        max_connections: int,
        ping_after: float,
        recycle_after: float,
    ) -> ConnectionSet:
        """The connections a store on ``engine`` holds: a pool of them on a server."""
        return PooledConnections(
            engine,
            family=self,
            label=label,
            max_connections=max_connections,
            ping_after=ping_after,
            recycle_after=recycle_after,
        )

    async def ping(self, driver_connection: Any) -> None:
        """Ask the server whether an idle connection still works (raises if not)."""

    def abort(self, driver_connection: Any) -> None:
        """Close a connection at once, sending nothing and waiting for nothing.

        For a connection the store gave up waiting on (a timeout, a cancellation): the server
        behind it may never answer, and SQLAlchemy's invalidation first tries a graceful
        close, which would wait on it beyond the operation's timeout.
        """

    def connection_survives(self, exc: BaseException) -> bool:
        """Whether a connection an operation failed on with ``exc`` may be used again."""
        del exc
        return False

    # -- the schema step --------------------------------------------------------------

    def refuse_before_connecting(self, url: URL, *, label: str) -> None:
        """Refuse what the first connection would fail on confusingly (see `SqliteFamily`).

        Raises:
            ConfigurationError: ``code="store_misconfigured"``.
        """

    def lock_schema(self, conn: Connection, *, wait: float, label: str) -> None:
        """Serialise the schema step between workers (released by `unlock_schema()`).

        Raises:
            StoreUnavailable: The lock was not granted within ``wait`` seconds.
        """

    def unlock_schema(self, conn: Connection) -> None:
        """Release the lock `lock_schema()` took."""

    def create_table(self, conn: Connection, table: Table) -> None:
        """Create ``table`` and its indexes, under the schema lock.

        A lock rather than ``IF NOT EXISTS``, which MySQL has no form of for indexes.
        """
        table.create(conn, checkfirst=True)

    @abstractmethod
    def insert_if_absent(self, table: Table, values: Mapping[str, Any]) -> Executable:
        """An ``INSERT`` of ``values`` into ``table`` that leaves an existing row alone."""

    # -- failures ---------------------------------------------------------------------

    def diagnose(self, exc: BaseException) -> Problem | None:
        """The permanent cause of ``exc``, or ``None`` when it may pass by itself."""
        for current in causes(exc):
            problem = self.problem(current)
            if problem is not None:
                return problem
        return None

    @abstractmethod
    def problem(self, exc: BaseException) -> Problem | None:
        """The permanent cause one exception of a chain names in the driver's codes."""
