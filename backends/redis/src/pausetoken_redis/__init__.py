"""The Redis and Redis Cluster token store for pausetoken.

Chosen by URL (``redis://``, ``rediss://``, ``redis+cluster://host:port,host:port/``) through
the ``pausetoken.stores`` entry points, or built around a client you own with `RedisStore`.
"""

from __future__ import annotations

from pausetoken_redis._store import (
    DEFAULT_KEY_PREFIX,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_TIMEOUT,
    DEFAULT_WAIT_TIMEOUT,
    RedisStore,
)

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WAIT_TIMEOUT",
    "RedisStore",
]
