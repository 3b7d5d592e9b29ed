"""`MongoStore`: one document per pause, every transition one atomic server command."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import math
import secrets
import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar
from urllib.parse import unquote

import pymongo
from pymongo import ASCENDING, AsyncMongoClient, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError, PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from pausetoken.exceptions import (
    ConfigurationError,
    InvalidSettings,
    StoreMisconfigured,
    StoreUnavailable,
)
from pausetoken.plugins import (
    ClaimOutcome,
    ClaimResult,
    PauseRecord,
    PauseState,
    redact_url,
)
from pausetoken_mongo._documents import (
    EXPIRES_AT,
    LEASE_ID,
    LEASE_UNTIL,
    REMOVE_AFTER,
    STATE,
    claim_fields,
    raise_expiry,
    record,
    revoked_document,
    to_micros,
)
from pausetoken_mongo._failures import translate

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from datetime import datetime

    from pymongo.asynchronous.collection import AsyncCollection
    from pymongo.asynchronous.database import AsyncDatabase

    from pausetoken.plugins import ClaimRequest

__all__ = ["DEFAULT_COLLECTION", "DEFAULT_DATABASE", "SCHEMA_COLLECTION", "MongoStore"]

#: The collection the store keeps its documents in unless told otherwise.
DEFAULT_COLLECTION: Final = "pausetoken_pauses"
#: The database used when the URL names none.
DEFAULT_DATABASE: Final = "pausetoken"
#: The collection recording, by name, each pause collection a store created: a recorded
#: collection that is gone was dropped, and is never created again.
SCHEMA_COLLECTION: Final = "pausetoken_schema"
# The document every prepared pause collection holds (no pause key has a colon), the one
# document with a GUARD field, which a unique sparse index covers. MongoDB creates a dropped
# collection again on the next insert; that one has neither.
_SENTINEL: Final = "pausetoken:collection"
_GUARD: Final = "pausetoken_guard"
_PROBE: Final = "pausetoken:probe:"
_SCHEMA_VERSION: Final = 1

_T = TypeVar("_T")
_DUPLICATE_KEY: Final = 11000

_CLAIMED: Final = PauseState.CLAIMED.value
_REDEEMED: Final = PauseState.REDEEMED.value
_REVOKED: Final = PauseState.REVOKED.value
# The answer of a claim or consume that took the pause, built once (`ClaimResult` is frozen).
_TAKEN: Final = ClaimResult(ClaimOutcome.CLAIMED)
# A claim or revoke meets a document that changes under it at most this often before it
# gives up (each retry follows another caller's completed transition).
_ATTEMPTS: Final = 16
_STORE_OPTIONS: Final = frozenset(
    {"database", "collection", "timeout", "write_concern", "read_concern"}
)
# field -> create_index options. remove_after: the server removes a document once that BSON
# date passed (its TTL monitor runs about once a minute); expires_at: what purge() filters on.
_INDEXES: Final[dict[str, dict[str, Any]]] = {
    REMOVE_AFTER: {"expireAfterSeconds": 0, "name": "pausetoken_remove_after"},
    EXPIRES_AT: {"name": "pausetoken_expires_at"},
    _GUARD: {"unique": True, "sparse": True, "name": "pausetoken_guard"},
}
# Store options a URL's query may carry (the driver would refuse them).
_QUERY_OPTIONS: Final = frozenset({"collection", "timeout"})
#: Seconds one operation may take unless told otherwise.
DEFAULT_TIMEOUT: Final = 10.0
# The driver's option bounding a new connection's TCP connect and handshake, which its
# server monitor also waits on for each check. Unless the URL sets it, the store makes it
# its own timeout: pymongo's default (20 s) kept the store from serving for up to 20 s
# after a partition healed, its monitor waiting on a check sent while cut off.
_CONNECT_TIMEOUT: Final = "connectTimeoutMS"
# The driver's option bounding a wait for a usable server. Closing a client ends its
# sessions on a server it selects first: with pymongo's default (30 s), a store closed
# while cut off waited 30 s. Unless the URL sets it, it is the store's timeout too (the
# store's operations are bounded by that timeout anyway).
_SELECTION_TIMEOUT: Final = "serverSelectionTimeoutMS"


def _split_store_options(url: str) -> tuple[str, dict[str, str]]:
    """The URL without the store's own query parameters, and those parameters.

    The other parameters are kept byte for byte: the driver parses them.
    """
    head, mark, query = url.partition("?")
    if not mark:
        return url, {}
    kept: list[str] = []
    found: dict[str, str] = {}
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if unquote(name) in _QUERY_OPTIONS:
            found[unquote(name)] = unquote(value)
        else:
            kept.append(part)
    return (f"{head}?{'&'.join(kept)}" if kept else head), found


def _url_sets(url: str, option: str) -> bool:
    """Whether the URL's query sets the driver option ``option`` (named in any case)."""
    _, _, query = url.partition("?")
    wanted = option.lower()
    return any(unquote(part.partition("=")[0]).lower() == wanted for part in query.split("&"))


def _driver_timeouts(url: str, timeout: object) -> dict[str, Any]:
    """The driver options the store derives from its ``timeout`` (none the URL sets).

    An invalid ``timeout`` derives none: the store refuses it with its own message.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        return {}
    if not math.isfinite(timeout) or timeout <= 0:
        return {}
    derived = (_CONNECT_TIMEOUT, _SELECTION_TIMEOUT)
    return {option: timeout * 1000 for option in derived if not _url_sets(url, option)}


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError as exc:
        msg = f"the MongoDB store's timeout is a number of seconds (got {text!r})"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID) from exc


def _lapsed(document: Mapping[str, Any], now: int) -> bool:
    return bool(document[STATE] == _CLAIMED and document[LEASE_UNTIL] <= now)


def _redeemed_by(document: Mapping[str, Any], lease_id: str) -> bool:
    return bool(document[STATE] == _REDEEMED and document.get(LEASE_ID) == lease_id)


class MongoStore:
    """The token store on MongoDB, through pymongo's `AsyncMongoClient`.

    One document per pause in one collection, ``_id`` being the pause key. A first claim or
    revoke is an ``insert_one`` (the unique ``_id`` makes exactly one concurrent caller
    win); every later transition is one conditional ``find_one_and_update``,
    ``update_one`` or ``delete_one`` whose filter holds the rule, so each is atomic on the
    server. A TTL index on ``remove_after`` lets the server remove expired documents, and
    `purge()` still deletes by the exact ``expires_at``.

    Writes wait for a majority of the replica set and reads read majority-committed data by
    default: a redemption acknowledged by a primary that then loses an election would
    otherwise be rolled back, and the pause could be answered again.

    Args:
        database: The database to use; the store never closes its client.
        collection: The collection's name.
        timeout: Seconds one operation may take, server selection included, before it fails
            with `StoreUnavailable`.
        write_concern: ``"majority"`` (the default) or a number of members; ``0``
            (unacknowledged) is refused.
        read_concern: ``"majority"`` (the default), ``"local"`` or ``"linearizable"``.

    Raises:
        ConfigurationError: for an invalid option.

    Examples:
        ```python
        store = MongoStore.from_url("mongodb://db.internal/app")
        store = MongoStore(client["app"], collection="pauses")  # sharing a client
        ```
    """

    #: The store API this class implements, as a literal (see `pausetoken.plugins`).
    api_version: ClassVar[int] = 2

    def __init__(
        self,
        database: AsyncDatabase[Any],
        *,
        collection: str = DEFAULT_COLLECTION,
        timeout: float = DEFAULT_TIMEOUT,
        write_concern: str | int = "majority",
        read_concern: str = "majority",
    ) -> None:
        if (
            not isinstance(timeout, int | float)
            or isinstance(timeout, bool)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            msg = f"the MongoDB store's timeout is a positive number of seconds (got {timeout!r})"
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
        if write_concern == 0 or isinstance(write_concern, bool):
            msg = "the MongoDB store needs acknowledged writes: write_concern 0 is refused"
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
        if read_concern not in {"majority", "local", "linearizable"}:
            msg = (
                "the MongoDB store's read_concern is 'majority', 'local' or 'linearizable' "
                f"(got {read_concern!r})"
            )
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
        try:
            self._collection: AsyncCollection[Any] = database.get_collection(
                collection,
                write_concern=WriteConcern(w=write_concern),
                read_concern=ReadConcern(read_concern),
            )
        except (PyMongoError, TypeError, ValueError) as exc:
            msg = f"invalid MongoDB store options: {type(exc).__name__}: {exc}"
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID) from exc
        self._client: AsyncMongoClient[Any] | None = None  # only one it opened itself
        self._schema = database.get_collection(
            SCHEMA_COLLECTION, write_concern=self._collection.write_concern
        )
        self._ready = False
        self._schema_lock = asyncio.Lock()
        self._timeout = float(timeout)
        self._label = f"mongodb database {database.name!r}, collection {collection!r}"

    @classmethod
    def from_url(cls, url: str, /, **options: Any) -> MongoStore:
        """Open a store on a ``mongodb://`` or ``mongodb+srv://`` URL.

        The URL's query takes the driver's options (``replicaSet``, ``tls``,
        ``maxPoolSize``...); its path names the database (else ``database=``, else
        ``pausetoken``). The store's own options are keyword arguments or, for ``collection``
        and ``timeout``, query parameters (``?collection=pauses&timeout=5``): ``database``,
        ``collection``, ``timeout``, ``write_concern`` and ``read_concern``. The store closes
        the client it opened in `aclose()`.

        Unless the URL sets ``connectTimeoutMS``, the client's connect timeout is the store's
        ``timeout``: pymongo's server monitor waits that long on a check a partition left
        unanswered, so the store serves again within about ``timeout`` + 0.5 s of its end.
        So is the client's ``serverSelectionTimeoutMS`` (unless the URL sets it): `aclose()`
        during a partition then returns within ``timeout`` too.

        Raises:
            ConfigurationError: an unknown option, or a URL the driver refuses (the message
                never shows the password).
        """
        url, from_query = _split_store_options(url)
        options = {**from_query, **options}
        unknown = sorted(set(options) - _STORE_OPTIONS)
        if unknown:
            msg = (
                f"unknown MongoDB store option(s) {', '.join(map(repr, unknown))}; the store "
                f"takes {', '.join(sorted(_STORE_OPTIONS))} (driver options go in the URL query)"
            )
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_UNKNOWN)
        if "timeout" in from_query:
            options["timeout"] = _seconds(from_query["timeout"])
        shown = redact_url(url)
        database = options.pop("database", None)
        try:
            with warnings.catch_warnings():
                # pymongo only warns about an unknown URL option: refuse it instead.
                warnings.simplefilter("error")
                client: AsyncMongoClient[Any] = AsyncMongoClient(
                    url,
                    connect=False,
                    tz_aware=True,
                    **_driver_timeouts(url, options.get("timeout", DEFAULT_TIMEOUT)),
                )
        except (PyMongoError, UserWarning, TypeError, ValueError) as exc:
            msg = f"the MongoDB URL {shown!r} is refused: {type(exc).__name__}"
            raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID) from exc
        # Nothing is connected yet (connect=False): a refused option leaves nothing to close.
        chosen = client.get_default_database(default=DEFAULT_DATABASE)
        store = cls(chosen if database is None else client[database], **options)
        store._client = client
        store._label = f"{shown} (collection {store._collection.name!r})"
        return store

    @classmethod
    def from_client(
        cls, client: AsyncMongoClient[Any], /, database: str = DEFAULT_DATABASE, **options: Any
    ) -> MongoStore:
        """A store on the database ``database`` of your client (which it never closes).

        Args:
            client: An open `AsyncMongoClient`.
            database: The database's name.
            **options: The store options of `MongoStore`.
        """
        return cls(client[database], **options)

    @property
    def collection(self) -> AsyncCollection[Any]:
        """The collection holding the documents, with the store's concerns."""
        return self._collection

    def __repr__(self) -> str:
        return f"MongoStore({self._label})"

    # -- the protocol -------------------------------------------------------------------

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Claim a pause: one caller wins; the others learn why not."""
        return await self._take(request, "claim", _CLAIMED)

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        """Claim and commit a pause at once (see `SupportsConsume`).

        The same commands as `claim()`, writing the document redeemed where a claim would
        take the lease: one ``insert_many`` for a first answer, one conditional
        ``find_one_and_update`` for a lapsed lease. A document the request's lease already
        redeemed answers ``CLAIMED`` again (a retry whose first attempt landed).
        """
        return await self._take(request, "consume", _REDEEMED)

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        """Extend the holder's lease (never shorten it)."""
        async with self._operation("renew"):
            result = await self._collection.update_one(
                {"_id": pause_key, STATE: _CLAIMED, LEASE_ID: lease_id},
                {"$max": {LEASE_UNTIL: to_micros(lease_until)}},
            )
        return result.matched_count > 0

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        """Mark the pause redeemed by the holder; a repeat by the same lease confirms it."""
        async with self._operation("commit"):
            result = await self._collection.update_one(
                {"_id": pause_key, STATE: {"$in": [_CLAIMED, _REDEEMED]}, LEASE_ID: lease_id},
                {"$set": {STATE: _REDEEMED}, "$max": raise_expiry(expires_at)},
            )
        return result.matched_count > 0

    async def release(self, pause_key: str, lease_id: str) -> bool:
        """Drop the holder's claim so the pause can be answered again."""
        async with self._operation("release"):
            result = await self._collection.delete_one(
                {"_id": pause_key, STATE: _CLAIMED, LEASE_ID: lease_id}
            )
        return result.deleted_count > 0

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        """Revoke an unanswered pause; a live claim, a redemption or a revocation stays."""
        fresh = revoked_document(pause_key, scope_hash, name, expires_at)
        expiry = raise_expiry(expires_at)
        moment = to_micros(now)
        async with self._operation("revoke"):
            for _ in range(_ATTEMPTS):
                if await self._insert_new(fresh):
                    return record(fresh)
                revoked = await self._collection.find_one_and_update(
                    {"_id": pause_key, STATE: _CLAIMED, LEASE_UNTIL: {"$lte": moment}},
                    {
                        "$set": {STATE: _REVOKED},
                        "$unset": {"response_hash": "", LEASE_ID: "", LEASE_UNTIL: ""},
                        "$max": expiry,
                    },
                    return_document=ReturnDocument.AFTER,
                )
                if revoked is not None:
                    return await self._won(record(revoked))
                found = await self._collection.find_one_and_update(
                    {"_id": pause_key}, {"$max": expiry}, return_document=ReturnDocument.AFTER
                )
                if found is None or _lapsed(found, moment):
                    continue
                return record(found)
        raise self._contended("revoke")

    async def status(self, pause_key: str) -> PauseRecord | None:
        """The pause's record, or ``None``."""
        async with self._operation("status"):
            found = await self._collection.find_one({"_id": pause_key})
        return None if found is None else record(found)

    async def purge(self, before: datetime) -> int:
        """Delete the documents whose ``expires_at`` is before ``before``.

        The TTL index removes them too, within a minute or so of ``remove_after``; purging
        is for an exact cut-off.
        """
        async with self._operation("purge"):
            result = await self._collection.delete_many({EXPIRES_AT: {"$lt": to_micros(before)}})
        return result.deleted_count

    async def ensure_schema(self) -> bool:
        """Prepare the collection: its three indexes and its marker document.

        The TTL index on ``remove_after``, the index `purge()` uses and the guard's unique
        index, which refuses the probe a first claim or revoke writes. Runs by itself before
        the store's first operation.

        A collection this store's database records as created (in ``pausetoken_schema``)
        but which is gone was dropped: it is never prepared again, since an empty one would
        accept again every pause answered before.

        Returns:
            Whether anything was missing and created (``pausetoken store check`` says so).

        Raises:
            ConfigurationError: a dropped collection (``code="store_table_missing"``).
        """
        async with self._operation("ensure_schema", prepare=False):
            return await self._prepare(force=True)

    async def check(self) -> None:
        """Ping the server (a majority-acknowledged write path) and prepare the collection.

        Raises:
            ConfigurationError: refused credentials or rights, a URL that does not resolve,
                or an index of the same name with other options (``store_misconfigured``);
                a collection dropped after it was created (``store_table_missing``).
            StoreUnavailable: the server cannot be reached now.
        """
        async with self._operation("check", prepare=False):
            await self._collection.database.command("ping")
            await self._prepare(force=True)

    async def aclose(self) -> None:
        """Close the client the store opened from a URL (never one it was handed)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    # -- internals ----------------------------------------------------------------------

    async def _take(self, request: ClaimRequest, what: str, state: str) -> ClaimResult:
        """Claim (``state`` claimed) or consume (``state`` redeemed) ``request``'s pause."""
        fields = claim_fields(
            scope_hash=request.scope_hash,
            name=request.name,
            response_hash=request.response_hash,
            lease_id=request.lease_id,
            lease_until=request.lease_until,
            state=state,
        )
        expiry = raise_expiry(request.expires_at)
        now = to_micros(request.now)
        async with self._operation(what):
            for _ in range(_ATTEMPTS):
                if await self._insert_new({"_id": request.pause_key, **fields, **expiry}):
                    return _TAKEN
                taken = await self._collection.find_one_and_update(
                    {"_id": request.pause_key, STATE: _CLAIMED, LEASE_UNTIL: {"$lte": now}},
                    {"$set": fields, "$max": expiry},
                    projection={"_id": True},
                )
                if taken is not None:
                    return await self._won(_TAKEN)
                found = await self._collection.find_one_and_update(
                    {"_id": request.pause_key},
                    {"$max": expiry},
                    return_document=ReturnDocument.AFTER,
                )
                if found is None or _lapsed(found, now):
                    continue  # released or lapsed meanwhile: try again
                if state == _REDEEMED and _redeemed_by(found, request.lease_id):
                    # A retried consume whose first attempt landed: confirmed, as a retried
                    # commit is, once the collection is known not created again.
                    return await self._won(_TAKEN)
                return _answer(found, request.response_hash)
        raise self._contended(what)

    async def _prepare(self, *, force: bool) -> bool:
        async with self._schema_lock:
            if self._ready and not force:
                return False
            created = False
            if not await self._has_sentinel():
                # The record is written only after the sentinel: a record found now while the
                # sentinel is still missing means the collection was dropped. A sentinel found
                # on this second look was written by a worker preparing it meanwhile.
                recorded = await self._schema.find_one({"_id": self._collection.name})
                if recorded is not None and not await self._has_sentinel():
                    raise self._dropped(startup=True)
                # The collection's marker first: stopped between the two writes, the next
                # start finds the marker and records the collection then.
                # The guard's index before the marker: a marker without it would make every
                # insert look like one into a collection created again.
                await self._ensure_indexes()
                sentinel = {"_id": _SENTINEL, _GUARD: 1, "version": _SCHEMA_VERSION}
                created = await self._insert_once(sentinel)
            await self._insert_once(
                {"_id": self._collection.name, "version": _SCHEMA_VERSION}, self._schema
            )
            created = await self._ensure_indexes() or created
            self._ready = True
            return created

    async def _insert_once(
        self, document: dict[str, Any], collection: AsyncCollection[Any] | None = None
    ) -> bool:
        try:
            await (self._collection if collection is None else collection).insert_one(document)
        except DuplicateKeyError:
            return False
        return True

    async def _has_sentinel(self) -> bool:
        found = await self._collection.find_one({"_id": _SENTINEL}, projection={"_id": True})
        return found is not None

    async def _insert_new(self, document: dict[str, Any]) -> bool:
        """Insert a pause's first document: `False` if it has one already.

        One ordered ``insert_many`` writes the document, then a probe carrying the guard
        field. In a prepared collection the guard's unique index refuses the probe. MongoDB
        creates a dropped collection again on the next insert, without that index: the probe
        goes in, and the insert is refused, since an empty collection would accept again a
        pause answered before. One round trip either way.
        """
        probe = f"{_PROBE}{secrets.token_hex(8)}"
        try:
            await self._collection.insert_many([document, {"_id": probe, _GUARD: 1}], ordered=True)
        except BulkWriteError as exc:
            failed = exc.details.get("writeErrors") or [{}]
            first = failed[0]
            if first.get("code") != _DUPLICATE_KEY:
                raise
            return bool(first.get("index") != 0)  # 0: the pause's; 1: the probe, as it should
        with contextlib.suppress(PyMongoError):  # not needed: only less to restore
            await self._collection.delete_many({"_id": {"$in": [document["_id"], probe]}})
        raise self._dropped(startup=False)

    async def _won(self, result: _T) -> _T:
        """``result`` of a takeover, once the collection is known not created again."""
        if not await self._has_sentinel():
            raise self._dropped(startup=False)
        return result

    def _dropped(self, *, startup: bool) -> ConfigurationError | StoreUnavailable:
        msg = (
            f"the token store's collection at {self._label} was dropped after it was "
            "created; it is not prepared again, since an empty collection would accept again "
            "every pause answered before (restore it, or delete its document from "
            f"{SCHEMA_COLLECTION!r} to start afresh on purpose)"
        )
        if startup:
            return StoreMisconfigured(msg, code=StoreMisconfigured.STORE_TABLE_MISSING)
        return StoreUnavailable(msg, code=StoreUnavailable.STORE_TABLE_MISSING)

    async def _ensure_indexes(self) -> bool:
        # Found by their keys: a server may name an index otherwise than asked.
        present = {
            tuple(key for key, _ in spec["key"])
            for spec in (await self._collection.index_information()).values()
        }
        created = False
        for field, options in _INDEXES.items():
            if (field,) not in present:
                await self._collection.create_index([(field, ASCENDING)], **options)
                created = True
        return created

    @contextlib.asynccontextmanager
    async def _operation(self, what: str, *, prepare: bool = True) -> AsyncIterator[None]:
        """One call's time limit (server selection included) and its errors, typed."""
        # pymongo's client-side timeout bounds server selection, taking a pooled
        # connection and the round trip, and tells the server (maxTimeMS).
        try:
            with pymongo.timeout(self._timeout):
                if prepare and not self._ready:
                    await self._prepare(force=False)
                yield
        except PyMongoError as exc:
            raise translate(exc, what=what, label=self._label) from exc

    def _contended(self, what: str) -> StoreUnavailable:
        msg = f"token store {what} at {self._label} kept meeting concurrent changes; retry"
        return StoreUnavailable(msg)


def _answer(document: Mapping[str, Any], response_hash: str) -> ClaimResult:
    state = document[STATE]
    if state == _CLAIMED:
        return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=record(document).lease_until)
    if state == _REVOKED:
        return ClaimResult(ClaimOutcome.REVOKED)
    same = hmac.compare_digest(document.get("response_hash") or "", response_hash)
    return ClaimResult(ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER)
