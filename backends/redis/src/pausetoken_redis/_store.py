"""`RedisStore`: the token store on Redis or Redis Cluster, one Lua script per operation."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self, TypeVar

from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from pausetoken.exceptions import ConfigurationError, InvalidSettings, StoreUnavailable
from pausetoken.plugins import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    Deadlines,
    GroupCommit,
    PauseRecord,
    PauseState,
    redact_url,
)
from pausetoken_redis._clients import (
    TRANSIENT,
    Client,
    decode,
    is_permission_error,
    open_client,
    scheme_of,
    split_query,
    transport_failure,
    unavailable,
)
from pausetoken_redis._scripts import SCRIPTS

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from types import TracebackType

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WAIT_TIMEOUT",
    "RedisStore",
]

logger = logging.getLogger("pausetoken.redis")

T = TypeVar("T")

#: What every key of the store starts with (``key_prefix`` option).
DEFAULT_KEY_PREFIX: Final = "pausetoken:"
#: Connections in the blocking pool; on Redis Cluster, each node's connections and the
#: store's operations in flight (``max_connections``).
DEFAULT_MAX_CONNECTIONS: Final = 64
#: Seconds one operation may take, waiting for a connection and connecting included.
DEFAULT_TIMEOUT: Final = 5.0
#: Consumes one pipeline sends at most, and pipelines sent at once: batches small enough
#: that under load one is on the server while the callers of another check their tokens.
_BATCH: Final = 8
_BATCHES_IN_FLIGHT: Final = 4

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)
_STATES: Final = {"c": PauseState.CLAIMED, "r": PauseState.REDEEMED, "x": PauseState.REVOKED}
_OPTIONS: Final = frozenset(
    {"key_prefix", "max_connections", "timeout", "cluster", "wait_replicas", "wait_timeout"}
)
#: Seconds ``WAIT`` waits for the replicas' acknowledgements (``wait_timeout``).
DEFAULT_WAIT_TIMEOUT: Final = 1.0
#: The claim script's answer for the common case, built once (`ClaimResult` is frozen).
_CLAIMED: Final = ClaimResult(ClaimOutcome.CLAIMED)


def _from_text(name: str, text: str) -> object:
    """A store option given in the URL query, read as the type its keyword takes."""
    if name == "key_prefix":
        return text
    if name == "wait_replicas":
        try:
            return int(text)
        except ValueError:
            msg = f"wait_replicas must be a whole number of replicas (got {text!r})"
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID) from None
    if name == "cluster":
        flags = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
        if text.lower() in flags:
            return flags[text.lower()]
        msg = f"cluster must be true or false (got {text!r})"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
    try:
        return int(text) if name == "max_connections" else float(text)
    except ValueError:
        kind = "an integer" if name == "max_connections" else "a number of seconds"
        msg = f"{name} must be {kind} (got {text!r})"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID) from None


def _check_wait(client: Client, replicas: object, wait_timeout: object, timeout: float) -> None:
    """Refuse ``wait_replicas``/``wait_timeout`` values the store cannot honour."""
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        msg = f"wait_replicas must be a whole number of replicas (got {replicas!r})"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
    if (
        isinstance(wait_timeout, bool)
        or not isinstance(wait_timeout, int | float)
        or wait_timeout <= 0
        # WAIT runs within the operation's deadline; without replicas to wait for, none runs.
        or (replicas and wait_timeout >= timeout)
    ):
        msg = (
            f"wait_timeout must be a positive number of seconds below timeout ({timeout}) "
            f"(got {wait_timeout!r})"
        )
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
    if replicas and isinstance(client, RedisCluster):
        # WAIT counts the acknowledgements of the writes made on the connection it is sent
        # on; redis-py's cluster pipeline sends a keyless WAIT to any node.
        msg = "wait_replicas is not supported with Redis Cluster (WAIT must follow the write)"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_CONFLICT)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _expiry_args(moment: datetime) -> tuple[str, str]:
    """The row expiry in microseconds, and the key's ``PEXPIREAT`` (milliseconds, rounded up)."""
    micros = _micros(moment)
    return str(micros), str(-(-micros // 1000))


def _moment(value: bytes | str | None) -> datetime | None:
    text = decode(value)
    return None if text is None else _EPOCH + int(text) * _MICROSECOND


def _pause_key_of(request: ClaimRequest) -> str:
    return request.pause_key


def _take_args(request: ClaimRequest) -> tuple[str, ...]:
    """The ARGV of the claim and consume scripts, in their order."""
    expires, expires_ms = _expiry_args(request.expires_at)
    return (
        request.scope_hash,
        request.name,
        request.response_hash,
        expires,
        expires_ms,
        request.lease_id,
        str(_micros(request.lease_until)),
        str(_micros(request.now)),
    )


def _refusal(reply: Sequence[bytes | str], response_hash: str) -> ClaimResult:
    """The answer of a claim or consume script that did not take the pause."""
    outcome = decode(reply[0])
    if outcome == "in_progress":
        return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=_moment(reply[1]))
    if outcome == "revoked":
        return ClaimResult(ClaimOutcome.REVOKED)
    same = hmac.compare_digest(decode(reply[1]) or "", response_hash)
    return ClaimResult(ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER)


def _cluster_bound(client: Client) -> asyncio.Semaphore | None:
    """For a cluster client, a semaphore of its per-node pool size; else ``None``.

    redis-py's asyncio ``RedisCluster`` has no blocking pool: a node whose
    ``max_connections`` connections are all busy raises ``MaxConnectionsError`` at once.
    One store operation holds at most one connection per node at any moment (a script on
    the node of its slot; ``SCRIPT LOAD`` and ``CONFIG GET`` on several nodes in parallel,
    one connection each), so letting at most ``max_connections`` operations run at once
    keeps every node within its pool: the others wait here, within the operation's
    timeout, as a blocking pool would make them wait.
    """
    if not isinstance(client, RedisCluster):
        return None  # a standalone client opened by the store has a blocking pool
    size = client.get_connection_kwargs().get("max_connections")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        return None
    return asyncio.Semaphore(size)


class _Script:
    """One Lua script run with ``EVALSHA``, loaded again after ``NOSCRIPT``."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()

    async def confirmed(
        self, client: Redis, key: str, args: tuple[str, ...], replicas: int, wait_ms: int
    ) -> tuple[Any, int]:
        """Run the script, then ``WAIT`` on the same connection; the reply and the acks.

        ``WAIT`` counts the replicas that acknowledged every write made so far on the
        connection it is sent on, so it goes in one pipeline with the script (one round trip,
        one connection). It is not allowed inside a script.
        """
        for attempt in (1, 2):
            pipe = client.pipeline(transaction=False)
            pipe.evalsha(self.sha, 1, key, *args)
            pipe.execute_command("WAIT", replicas, wait_ms)
            reply, acks = await pipe.execute(raise_on_error=False)
            if isinstance(reply, redis_errors.NoScriptError) and attempt == 1:
                await client.script_load(self.source)
                continue
            for result in (reply, acks):
                if isinstance(result, Exception):
                    raise result
            return reply, int(acks)
        raise AssertionError  # pragma: no cover - the loop returns or raises

    async def many(
        self,
        client: Redis,
        calls: Sequence[tuple[str, tuple[str, ...]]],
        replicas: int,
        wait_ms: int,
    ) -> list[tuple[Any, int]]:
        """Run the script once per ``(key, args)`` in one pipeline (then ``WAIT``, if asked).

        Each call's reply (or the error it met, as an exception object) with the acks.
        After ``NOSCRIPT`` the script is loaded and the whole pipeline sent once more: a
        script that ran the first time runs again, which only the idempotent ones may do
        (consume: a retry by the same lease is confirmed).
        """
        for attempt in (1, 2):
            pipe = client.pipeline(transaction=False)
            for key, args in calls:
                pipe.evalsha(self.sha, 1, key, *args)
            if replicas:
                pipe.execute_command("WAIT", replicas, wait_ms)
            replies = await pipe.execute(raise_on_error=False)
            if attempt == 1 and any(
                isinstance(reply, redis_errors.NoScriptError) for reply in replies
            ):
                await client.script_load(self.source)
                continue
            acks = 0
            if replicas:
                acks = replies.pop()
                if isinstance(acks, Exception):
                    raise acks
            return [(reply, int(acks)) for reply in replies]
        raise AssertionError  # pragma: no cover - the loop returns or raises

    async def __call__(self, client: Client, key: str, *args: str) -> Any:
        try:
            return await client.evalsha(self.sha, 1, key, *args)
        except redis_errors.NoScriptError:
            # A restarted server or a new cluster node: load it and run it once more.
            await client.script_load(self.source)
            return await client.evalsha(self.sha, 1, key, *args)


_RUN: Final = {name: _Script(source) for name, source in SCRIPTS.items()}


class RedisStore:
    """The token store on Redis (standalone) or Redis Cluster.

    Every operation is one Lua script (``EVALSHA``) on one hash per pause, under the key
    ``{key_prefix}{<pause key>}``: the braces are a hash tag, so an operation touches one
    slot and Redis runs it atomically. Rows expire by themselves (``PEXPIREAT`` at the
    row's expiry, only ever raised), so `purge()` has nothing to do.

    Open it from a URL with `from_url()` (``redis://``, ``rediss://``, ``unix://``,
    ``redis+cluster://host:port,host:port/``), or hand it a client you own:

    ```python
    from redis.asyncio import Redis

    client = Redis.from_url("redis://127.0.0.1:6379/0")
    store = RedisStore(client, key_prefix="myapp:pausetoken:")
    ...
    await store.aclose()  # leaves `client` open: it is yours
    ```

    Args:
        client: A ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``.
        key_prefix: What every key starts with (no braces: they would break the hash tag).
        timeout: Seconds one operation may take before it fails with `StoreUnavailable`.
        url: The URL the client was opened from, for error messages (password hidden).
        owns_client: Whether `aclose()` closes ``client`` (`from_url()` sets it).
        wait_replicas: After a claim, a consume, a commit or a revocation that wrote, wait
            until this many replicas acknowledged it (``WAIT``); ``0`` (the default) does not
            wait. Fewer acknowledgements within ``wait_timeout`` raise `StoreUnavailable` (the
            write is on the primary but not confirmed; see the Redis page). Standalone only.
        wait_timeout: Seconds ``WAIT`` waits for them; less than ``timeout``.

    Raises:
        ConfigurationError: for a key prefix with braces, a timeout that is not positive, or
            ``wait_replicas`` on a cluster client or with a bad ``wait_timeout``.
    """

    #: The store API this class implements, as a literal (see `pausetoken.plugins`).
    api_version: ClassVar[int] = 2
    #: Rows expire by themselves: ``purge`` deletes nothing and ``store purge`` says so.
    expires_rows_itself: ClassVar[bool] = True

    def __init__(
        self,
        client: Client,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        timeout: float = DEFAULT_TIMEOUT,
        url: str | None = None,
        owns_client: bool = False,
        wait_replicas: int = 0,
        wait_timeout: float = DEFAULT_WAIT_TIMEOUT,
    ) -> None:
        if "{" in key_prefix or "}" in key_prefix:
            msg = f"key_prefix must not contain braces (they make the hash tag): {key_prefix!r}"
            raise ConfigurationError(msg)
        if not timeout > 0:
            msg = f"timeout must be a positive number of seconds (got {timeout!r})"
            raise ConfigurationError(msg)
        _check_wait(client, wait_replicas, wait_timeout, timeout)
        self._wait_replicas = wait_replicas
        self._wait_ms = max(1, round(wait_timeout * 1000))
        self._client = client
        self._prefix = key_prefix
        self._timeout = float(timeout)
        # One timer for every operation, not one per operation: see `Deadlines`.
        self._deadlines = Deadlines(self._timeout)
        self._url = url
        self._owns_client = owns_client
        self._closed = False
        self._in_flight = _cluster_bound(client)
        # Consumes waiting at one moment go out in one pipeline (on a standalone server:
        # a cluster's keys live on many nodes).
        self._consumes: GroupCommit[ClaimRequest, tuple[Any, int]] | None = None
        if isinstance(client, Redis):
            self._consumes = GroupCommit(
                self._consume_many,
                key=_pause_key_of,
                max_batch=_BATCH,
                max_in_flight=_BATCHES_IN_FLIGHT,
            )
        #: What `check()` found worth a warning (persistence off, for example).
        self.warnings: tuple[str, ...] = ()

    @classmethod
    def from_url(cls, url: str, /, **options: Any) -> RedisStore:
        """Open a store on the server (or cluster) at ``url``.

        Args:
            url: ``redis://[user:password@]host:port/db``, ``rediss://...`` (TLS),
                ``unix:///path/redis.sock?db=0``, or ``redis+cluster://host:port,host:port/``
                (``rediss+cluster://`` with TLS) for Redis Cluster.
            **options: ``key_prefix`` (default `DEFAULT_KEY_PREFIX`), ``max_connections``
                (the blocking pool's size, default `DEFAULT_MAX_CONNECTIONS`; on a cluster,
                each node's pool and the operations let run at once), ``timeout`` (seconds
                per operation, default `DEFAULT_TIMEOUT`),
                ``cluster`` (``True`` opens a ``redis://`` URL with ``RedisCluster``). The
                same options may be given in the URL's query
                (``redis://host/0?key_prefix=app:&max_connections=32``); a keyword wins over
                the query. Other query parameters go to redis-py if it takes them.

        Returns:
            A store owning its client (`aclose()` closes it).

        Raises:
            ConfigurationError: for an unknown option, a bad value or an unusable URL.
        """
        scheme_of(url)
        url, from_query = split_query(url, _OPTIONS)
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            msg = (
                f"unknown RedisStore option(s) {', '.join(map(repr, unknown))} for "
                f"{redact_url(url)!r}; known: {', '.join(sorted(_OPTIONS))}"
            )
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_UNKNOWN)
        # Keywords win over the query; the query's text is read as the keyword's type.
        options = {**{k: _from_text(k, v) for k, v in from_query.items()}, **options}
        max_connections = options.get("max_connections", DEFAULT_MAX_CONNECTIONS)
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            msg = f"max_connections must be an integer (got {max_connections!r})"
            raise ConfigurationError(msg)
        if max_connections < 1:
            msg = f"max_connections must be at least 1 (got {max_connections})"
            raise ConfigurationError(msg)
        timeout = options.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            msg = f"timeout must be a positive number of seconds (got {timeout!r})"
            raise ConfigurationError(msg)
        key_prefix = options.get("key_prefix", DEFAULT_KEY_PREFIX)
        if not isinstance(key_prefix, str):
            msg = f"key_prefix must be a string (got {key_prefix!r})"
            raise ConfigurationError(msg)
        cluster = options.get("cluster", False)
        if not isinstance(cluster, bool):
            msg = f"cluster must be True or False (got {cluster!r})"
            raise ConfigurationError(msg)
        if "{" in key_prefix or "}" in key_prefix:
            msg = f"key_prefix must not contain braces (they make the hash tag): {key_prefix!r}"
            raise ConfigurationError(msg)
        client = open_client(
            url, cluster=cluster, max_connections=max_connections, timeout=float(timeout)
        )
        return cls(
            client,
            key_prefix=key_prefix,
            timeout=timeout,
            url=url,
            owns_client=True,
            wait_replicas=options.get("wait_replicas", 0),
            wait_timeout=options.get("wait_timeout", DEFAULT_WAIT_TIMEOUT),
        )

    @property
    def client(self) -> Client:
        """The redis-py client the store runs its scripts on."""
        return self._client

    @property
    def is_cluster(self) -> bool:
        """Whether the client is a ``RedisCluster``."""
        return isinstance(self._client, RedisCluster)

    def key(self, pause_key: str) -> str:
        """The Redis key of ``pause_key``'s hash: ``{key_prefix}{<pause key>}``."""
        return f"{self._prefix}{{{pause_key}}}"

    def __repr__(self) -> str:
        where = redact_url(self._url) if self._url else type(self._client).__name__
        return f"<RedisStore {where} prefix={self._prefix!r}>"

    async def _run_confirmed(
        self, what: str, script: str, pause_key: str, *args: str
    ) -> tuple[Any, int]:
        """Like `_run`, then ``WAIT``; the reply and the replicas that acknowledged.

        Without ``wait_replicas``, no ``WAIT`` is sent and the count is 0 (none was asked for).
        """
        if not self._wait_replicas:
            return await self._run(what, script, pause_key, *args), 0
        if not isinstance(self._client, Redis):  # pragma: no cover - refused at construction
            raise TypeError(type(self._client).__name__)
        client, key = self._client, self.key(pause_key)
        return await self._guarded(
            what,
            lambda: _RUN[script].confirmed(client, key, args, self._wait_replicas, self._wait_ms),
        )

    def _confirm(self, what: str, acks: int) -> None:
        """Raise `StoreUnavailable` when fewer replicas than asked acknowledged a write."""
        if acks >= self._wait_replicas:
            return
        where = redact_url(self._url) if self._url else "the Redis client"
        msg = (
            f"Redis at {where} could not confirm that it did {what}: {acks} of "
            f"{self._wait_replicas} replica(s) acknowledged within {self._wait_ms} ms (the "
            "write is on the primary; a failover now could lose it)"
        )
        raise StoreUnavailable(msg)

    async def _run(self, what: str, script: str, pause_key: str, *args: str) -> Any:
        key, places = self.key(pause_key), self._in_flight
        if places is None:
            return await self._guarded(what, lambda: _RUN[script](self._client, key, *args))
        return await self._guarded(what, lambda: self._bounded_run(places, script, key, args))

    async def _guarded(self, what: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Await ``operation()`` within the timeout; `StoreUnavailable` for what it meets."""
        if self._closed:
            msg = "the Redis store was closed"
            raise StoreUnavailable(msg)
        try:
            return await self._deadlines.run(operation())
        except TRANSIENT as exc:
            raise unavailable(exc, self._url, what) from exc
        except (TypeError, RuntimeError) as exc:
            if not transport_failure(exc):
                raise
            raise unavailable(exc, self._url, what) from exc

    async def _bounded_run(
        self, places: asyncio.Semaphore, script: str, key: str, args: tuple[str, ...]
    ) -> Any:
        """Run ``script`` holding one of the cluster's in-flight ``places``."""
        async with places:
            return await _RUN[script](self._client, key, *args)

    # -- the store protocol -----------------------------------------------------------------

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Take the lease on ``request.pause_key``, or say why not (one script)."""
        reply, acks = await self._run_confirmed(
            "claim a pause", "claim", request.pause_key, *_take_args(request)
        )
        if reply == 1:  # the script's integer for "claimed"
            self._confirm("claim a pause", acks)
            return _CLAIMED
        return _refusal(reply, request.response_hash)

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        """Claim and commit ``request.pause_key`` at once (one script; see `SupportsConsume`).

        Where `claim()` would take the lease, the row is written redeemed by the request's
        lease; a row that lease already redeemed answers ``CLAIMED`` again (a retry whose
        first attempt landed); otherwise the answer is `claim()`'s, and only the expiry moves.
        """
        what = "consume a pause"
        if self._consumes is None:
            reply, acks = await self._run_confirmed(
                what, "consume", request.pause_key, *_take_args(request)
            )
        else:
            reply, acks = await self._guarded(what, lambda: self._batched(request))
        if reply == 1:
            self._confirm(what, acks)
            return _CLAIMED
        return _refusal(reply, request.response_hash)

    async def _batched(self, request: ClaimRequest) -> tuple[Any, int]:
        """``request``'s consume in the next pipeline: its reply and the acks."""
        if self._consumes is None:  # pragma: no cover - only called with batches
            raise AssertionError
        reply, acks = await self._consumes(request)
        if isinstance(reply, Exception):
            raise reply
        return reply, acks

    async def _consume_many(self, requests: Sequence[ClaimRequest]) -> list[tuple[Any, int]]:
        if not isinstance(self._client, Redis):  # pragma: no cover - standalone only
            raise TypeError(type(self._client).__name__)
        calls = [(self.key(r.pause_key), _take_args(r)) for r in requests]
        return await _RUN["consume"].many(self._client, calls, self._wait_replicas, self._wait_ms)

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        """Extend the holder's lease (never shorten it); whether ``lease_id`` holds it."""
        until = str(_micros(lease_until))
        return bool(await self._run("renew a lease", "renew", pause_key, lease_id, until))

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        """Redeem the pause if ``lease_id`` holds it (or already committed it)."""
        expires, expires_ms = _expiry_args(expires_at)
        reply, acks = await self._run_confirmed(
            "commit a redemption", "commit", pause_key, lease_id, expires, expires_ms
        )
        if reply:
            self._confirm("commit a redemption", acks)
        return bool(reply)

    async def release(self, pause_key: str, lease_id: str) -> bool:
        """Drop the claim if ``lease_id`` holds it; whether it did."""
        return bool(await self._run("release a claim", "release", pause_key, lease_id))

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        """Revoke the pause unless it is redeemed or a live lease holds it."""
        expires, expires_ms = _expiry_args(expires_at)
        reply, acks = await self._run_confirmed(
            "revoke a pause",
            "revoke",
            pause_key,
            scope_hash,
            name,
            expires,
            expires_ms,
            str(_micros(now)),
        )
        record = self._record(pause_key, reply)
        if record is not None and record.state is PauseState.REVOKED:
            self._confirm("revoke a pause", acks)
        if record is None:  # pragma: no cover - the script always leaves a row
            msg = f"Redis returned no row after revoking a pause ({self._url or 'client'})"
            raise StoreUnavailable(msg)
        return record

    async def status(self, pause_key: str) -> PauseRecord | None:
        """The pause's record, or ``None`` if there is none (or it expired)."""
        return self._record(pause_key, await self._run("read a pause", "status", pause_key))

    async def purge(self, before: datetime) -> int:  # noqa: ARG002 - the protocol's signature
        """Delete nothing and return 0: rows expire by themselves at their expiry.

        Every row carries ``PEXPIREAT`` at its expiry, so Redis removes it then, without
        being asked; `expires_rows_itself` says so, and ``pausetoken store purge`` explains.
        """
        if self._closed:
            msg = "the Redis store was closed"
            raise StoreUnavailable(msg)
        return 0

    async def check(self) -> None:
        """Ping the server, load the scripts, and warn when persistence is off.

        Raises:
            ConfigurationError: wrong credentials or a user without the rights.
            StoreUnavailable: the server cannot be reached now.
        """
        if self._closed:
            msg = "the Redis store was closed"
            raise StoreUnavailable(msg)
        try:
            async with asyncio.timeout(self._timeout), self._bounded():
                await self._client.ping()
                for script in _RUN.values():
                    await self._client.script_load(script.source)
                self.warnings = await self._persistence_warnings()
        except TRANSIENT as exc:
            if is_permission_error(exc):
                where = redact_url(self._url) if self._url else "the Redis client"
                msg = f"Redis at {where} refused the store's user: {exc}"
                raise ConfigurationError(msg) from exc
            raise unavailable(exc, self._url, "be reached") from exc
        for warning in self.warnings:
            logger.warning("persistence: %s", warning)

    def _bounded(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Hold one of the cluster's in-flight places (nothing to hold when standalone)."""
        return self._in_flight if self._in_flight is not None else contextlib.nullcontext()

    async def _persistence_warnings(self) -> tuple[str, ...]:
        try:
            appendonly = await self._config("appendonly")
            save = await self._config("save")
            fsync = await self._config("appendfsync")
        except redis_errors.ResponseError:
            # CONFIG renamed or denied (managed services often do): say we could not tell.
            return (
                (
                    "could not read the server's persistence settings (CONFIG GET refused); "
                    "make sure it runs with appendonly yes and appendfsync always"
                ),
            )
        if appendonly != "yes" and not save:
            return (
                (
                    "persistence is off on this Redis (appendonly no, save ''): a restart "
                    "forgets every redemption and reopens a replay window; configure "
                    "appendonly yes and appendfsync always"
                ),
            )
        if appendonly != "yes":
            return (
                (
                    "only RDB snapshots persist this Redis: a restart forgets redemptions since "
                    "the last snapshot; configure appendonly yes and appendfsync always"
                ),
            )
        if fsync != "always":
            return (
                (
                    f"appendfsync is {fsync!r}: a crash can forget the last second of "
                    "redemptions; configure appendfsync always"
                ),
            )
        return ()

    async def _config(self, name: str) -> str:
        reply: Any = await self._client.config_get(name)
        # A cluster client answers per node; any node's value stands for them here.
        values: Sequence[Any] = (
            [reply[name]] if name in reply else [v for v in reply.values() if isinstance(v, str)]
        )
        return decode(values[0]) or "" if values else ""

    def _record(self, pause_key: str, reply: Sequence[bytes | str | None]) -> PauseRecord | None:
        state, scope_hash, name, expires, response_hash, lease_id, lease_until = map(decode, reply)
        if state is None:
            return None
        expires_at = _moment(expires)
        if scope_hash is None or name is None or expires_at is None or state not in _STATES:
            msg = f"the Redis key {self.key(pause_key)!r} does not hold a pausetoken row"
            raise StoreUnavailable(msg)
        return PauseRecord(
            pause_key=pause_key,
            state=_STATES[state],
            scope_hash=scope_hash,
            name=name,
            expires_at=expires_at,
            response_hash=response_hash,
            lease_id=lease_id,
            lease_until=_moment(lease_until),
        )

    async def aclose(self) -> None:
        """Close the client if the store opened it (never one it was handed)."""
        if self._closed:
            return
        self._closed = True
        if self._consumes is not None:
            await self._consumes.drain()  # what was submitted is sent and answered
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
