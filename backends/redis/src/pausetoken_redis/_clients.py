"""Opening redis-py clients from URLs, and turning their failures into pausetoken's errors."""

from __future__ import annotations

import asyncio
import inspect
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from redis import exceptions as redis_errors
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import (
    URL_QUERY_ARGUMENT_PARSERS,
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)

from pausetoken.exceptions import ConfigurationError, InvalidSettings, StoreUnavailable
from pausetoken.plugins import redact_url

__all__ = ["CLUSTER_SCHEMES", "Client", "open_client", "split_query", "unavailable"]

#: A standalone client or a cluster client: both run the store's scripts.
Client = Redis | RedisCluster

#: URL schemes that choose Redis Cluster (the ``+cluster`` suffix, ``cluster=True`` too).
CLUSTER_SCHEMES: Final = frozenset({"redis+cluster", "rediss+cluster"})
_SCHEMES: Final = frozenset({"redis", "rediss", "unix", *CLUSTER_SCHEMES})


def scheme_of(url: str) -> str:
    """The URL's scheme, lower-cased; refuses one this store does not open."""
    scheme = url.partition("://")[0].lower()
    if scheme not in _SCHEMES:
        shown = redact_url(url)
        msg = (
            f"RedisStore opens redis://, rediss://, redis+cluster:// or rediss+cluster:// "
            f"URLs (got {shown!r})"
        )
        raise ConfigurationError(msg)
    return scheme


def _driver_names(scheme: str) -> frozenset[str]:
    """The query parameters redis-py takes for ``scheme`` (its parsers, its connection's)."""
    classes: dict[str, type[AbstractConnection]] = {
        "redis": Connection,
        "rediss": SSLConnection,
        "unix": UnixDomainSocketConnection,
    }
    names = set(URL_QUERY_ARGUMENT_PARSERS)
    for kind in (AbstractConnection, classes[scheme]):
        names.update(inspect.signature(kind.__init__).parameters)
    return frozenset(names - {"self", "kwargs"})


def split_query(url: str, store_options: frozenset[str]) -> tuple[str, dict[str, str]]:
    """The URL without the store's own query parameters, and those parameters (as text).

    The other parameters are kept byte for byte for redis-py, which parses them; a name
    that is neither the store's nor one redis-py takes for the URL's scheme is refused
    (redis-py would only fail on it at the first connection). A cluster URL's query
    takes the store's options only.

    Raises:
        ConfigurationError: for an unknown or a repeated parameter.
    """
    head, mark, query = url.partition("?")
    if not mark:
        return url, {}
    scheme = scheme_of(url)
    driver = frozenset() if scheme in CLUSTER_SCHEMES else _driver_names(scheme)
    kept: list[str] = []
    found: dict[str, str] = {}
    for part in filter(None, query.split("&")):
        name = unquote(part.partition("=")[0])
        if name in store_options:
            if name in found:
                msg = f"the option {name!r} is given twice in {redact_url(url)!r}"
                raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_CONFLICT)
            found[name] = dict(parse_qsl(part, keep_blank_values=True))[name]
        elif name in driver:
            kept.append(part)
        else:
            msg = (
                f"unknown RedisStore option {name!r} in the query of {redact_url(url)!r}; "
                f"the store takes {', '.join(sorted(store_options))}"
                + ("" if scheme in CLUSTER_SCHEMES else " and redis-py's connection options")
            )
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_UNKNOWN)
    return (f"{head}?{'&'.join(kept)}" if kept else head), found


def open_client(url: str, *, cluster: bool, max_connections: int, timeout: float) -> Client:
    """A client for ``url``: a blocking pool of ``max_connections``, or a cluster client.

    A standalone client waits up to ``timeout`` for a free connection instead of failing
    at once (the default pool raises when it runs out, which 200 concurrent claims do).
    A cluster client keeps up to ``max_connections`` per node and fails at once beyond them;
    the store bounds its operations in flight to the same number (see ``_cluster_bound``).
    """
    scheme = scheme_of(url)
    try:
        if scheme in CLUSTER_SCHEMES:
            return _cluster_from_nodes(url, scheme, max_connections, timeout)
        if cluster:
            return RedisCluster.from_url(
                url,
                max_connections=max_connections,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
            )
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )
        return Redis.from_pool(pool)  # the client owns the pool: closing it closes both
    except (ValueError, TypeError, redis_errors.RedisError) as exc:
        msg = f"cannot open a Redis client for {redact_url(url)!r}: {_scrubbed(exc, url)}"
        raise ConfigurationError(msg) from None


def _cluster_from_nodes(url: str, scheme: str, max_connections: int, timeout: float) -> Client:
    """``redis+cluster://[user:password@]host:port,host:port/``: every seed node."""
    rest = url.partition("://")[2]
    authority, _, path = rest.partition("/")
    credentials, _, hosts = authority.rpartition("@")
    username, _, password = credentials.partition(":")
    if path.strip("/") not in {"", "0"}:
        msg = f"Redis Cluster has database 0 only (got {redact_url(url)!r})"
        raise ConfigurationError(msg)
    nodes = []
    for host in filter(None, hosts.split(",")):
        parsed = urlsplit(f"//{host}")
        if parsed.hostname is None:
            msg = f"a Redis Cluster URL lists host:port seeds (got {redact_url(url)!r})"
            raise ConfigurationError(msg)
        nodes.append(ClusterNode(parsed.hostname, parsed.port or 6379))
    if not nodes:
        msg = f"a Redis Cluster URL lists at least one host:port (got {redact_url(url)!r})"
        raise ConfigurationError(msg)
    return RedisCluster(
        startup_nodes=nodes,
        username=unquote(username) or None,
        password=unquote(password) or None,
        ssl=scheme.startswith("rediss"),
        max_connections=max_connections,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
    )


#: What a failure of the server or the network looks like mid-operation (fail closed):
#: refused or reset connections, timeouts, ``LOADING``, ``READONLY`` after a failover,
#: ``CLUSTERDOWN``/``TRYAGAIN`` and redirection storms alike.
TRANSIENT: Final = (
    redis_errors.RedisError,
    redis_errors.RedisClusterException,
    asyncio.TimeoutError,
    OSError,
)


# Where a connection's transport fails when it is closed under a write: CPython 3.13.0's
# selector transport raises TypeError from writelines() on a closed socket (fixed in 3.13.1).
_TRANSPORT_FILES: Final = ("asyncio/selector_events.py", "asyncio/streams.py")


def transport_failure(exc: BaseException) -> bool:
    """Whether ``exc`` came out of asyncio's transport, not from the store's own code."""
    if not isinstance(exc, TypeError | RuntimeError):
        return False
    trace = exc.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    return trace is not None and trace.tb_frame.f_code.co_filename.replace("\\", "/").endswith(
        _TRANSPORT_FILES
    )


def unavailable(exc: BaseException, url: str | None, what: str) -> StoreUnavailable:
    """The `StoreUnavailable` for ``exc`` raised while doing ``what`` (no password shown)."""
    where = f" at {redact_url(url)}" if url else ""
    detail = _scrubbed(exc, url) or type(exc).__name__
    return StoreUnavailable(f"Redis{where} could not {what}: {detail}")


def _scrubbed(exc: BaseException, url: str | None) -> str:
    text = str(exc)
    password = urlsplit(url).password if url and "://" in url else None
    if password:
        text = text.replace(password, "***").replace(unquote(password), "***")
    return text


def is_permission_error(exc: BaseException) -> bool:
    """Bad credentials or a user without the rights: permanent, not transient."""
    kinds: tuple[type[BaseException], ...] = (
        redis_errors.AuthenticationError,
        redis_errors.AuthorizationError,
        redis_errors.AuthenticationWrongNumberOfArgsError,
        redis_errors.NoPermissionError,
    )
    return isinstance(exc, kinds)


def decode(value: bytes | str | None) -> str | None:
    """A reply element as text (clients may or may not decode responses)."""
    if isinstance(value, bytes):
        return value.decode()
    return value
