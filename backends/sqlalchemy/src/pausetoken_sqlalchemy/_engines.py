"""Which engine family serves a URL or an engine, and the options read from a URL.

Parsing stays here; what each family does with its engines is in its `EngineFamily`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import QueuePool

from pausetoken.exceptions import ConfigurationError
from pausetoken.plugins import redact_url
from pausetoken_sqlalchemy._mysql import MySQLFamily
from pausetoken_sqlalchemy._postgresql import PostgresFamily
from pausetoken_sqlalchemy._sqlite import SqliteFamily

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sqlalchemy.engine import URL
    from sqlalchemy.ext.asyncio import AsyncEngine

    from pausetoken_sqlalchemy._family import EngineFamily

__all__ = [
    "FAMILIES",
    "default_max_connections",
    "family_for_url",
    "family_of",
    "redacted",
    "split_options",
]

#: Every engine family the store runs on, one instance each.
FAMILIES: Final[tuple[EngineFamily, ...]] = (SqliteFamily(), PostgresFamily(), MySQLFamily())
_BY_BACKEND: Final = {backend: family for family in FAMILIES for backend in family.backends}

# Options read from the URL query (and accepted as keyword arguments), with their types.
_STORE_OPTIONS: Final[Mapping[str, Callable[[str], Any]]] = {
    "table_name": str,
    "max_connections": int,
    "timeout": float,
    "ping_after": float,
    "recycle_after": float,
}
_POOL_OPTIONS: Final[Mapping[str, Callable[[str], Any]]] = {
    "pool_size": int,
    "max_overflow": int,
    "pool_timeout": float,
    "pool_recycle": int,
    "pool_pre_ping": lambda value: value.lower() in {"1", "true", "yes", "on"},
}


def redacted(url: URL) -> str:
    """The URL for messages and logs: password and secret-looking query values hidden."""
    return redact_url(url.render_as_string(hide_password=True))


def family_for_url(url: str | URL) -> tuple[URL, EngineFamily]:
    """The family serving ``url``, and the URL naming the family's driver.

    Raises:
        ConfigurationError: The URL is invalid, of another database, or names another
            driver.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        msg = "the token store URL is not a valid SQLAlchemy URL"
        raise ConfigurationError(msg) from exc
    label = redacted(parsed)
    family = _BY_BACKEND.get(parsed.get_backend_name())
    if family is None:
        msg = f"{label}: pausetoken-sqlalchemy supports sqlite, postgresql, mysql and mariadb"
        raise ConfigurationError(msg)
    return family.with_driver(parsed, label=label), family


def family_of(engine: AsyncEngine) -> EngineFamily:
    """The family serving an engine the application made.

    Raises:
        ConfigurationError: The engine is of another database or uses another driver.
    """
    for family in FAMILIES:
        if family.serves(engine):
            return family
    msg = (
        f"{redacted(engine.url)}: the engine must use sqlite+aiosqlite, postgresql+asyncpg or "
        "mysql+asyncmy / mariadb+asyncmy"
    )
    raise ConfigurationError(msg)


def split_options(
    parsed: URL, options: Mapping[str, Any]
) -> tuple[URL, dict[str, Any], dict[str, Any]]:
    """Store options, engine options and the URL without the query keys pausetoken reads.

    Raises:
        ConfigurationError: An option has a value of the wrong type.
    """
    store: dict[str, Any] = {}
    engine: dict[str, Any] = {}
    label = redacted(parsed)
    from_query = {k: v if isinstance(v, str) else v[-1] for k, v in parsed.query.items()}
    # Keywords win over the query; strings (from either, or from settings) are converted.
    for key, value in [*from_query.items(), *options.items()]:
        convert = _STORE_OPTIONS.get(key) or _POOL_OPTIONS.get(key)
        if convert is None:
            if key in options:
                engine[key] = value
            continue
        try:
            converted = convert(value) if isinstance(value, str) else value
        except ValueError as exc:
            msg = f"{label}: the option {key} has an invalid value"
            raise ConfigurationError(msg) from exc
        (store if key in _STORE_OPTIONS else engine)[key] = converted
    cleaned = parsed.difference_update_query([*_STORE_OPTIONS, *_POOL_OPTIONS])
    return cleaned, store, engine


def default_max_connections(engine: AsyncEngine, *, owned: bool) -> int:
    """The whole pool of an engine the store created; half of an application's pool."""
    pool = engine.pool
    if not isinstance(pool, QueuePool):
        return 1
    return pool.size() if owned else max(1, pool.size() // 2)
