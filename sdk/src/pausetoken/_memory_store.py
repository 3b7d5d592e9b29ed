"""A token store in this process's memory: for tests, demos and single-process tools.

It keeps no state outside the instance: two `MemoryStore` objects know nothing of
each other, and nothing is shared with other processes. A deployment with several workers
needs a shared store (such as the SQLAlchemy store) so that a token is redeemed exactly once
across all of them.
"""

from __future__ import annotations

import hmac
import logging
import threading
import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from pausetoken._hashing import fingerprint
from pausetoken._store_api import (
    STORE_API_VERSION,
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
)
from pausetoken.exceptions import ConfigurationError, StoreUnavailable

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["MemoryStore", "MemoryStoreWarning"]

logger = logging.getLogger("pausetoken.memory_store")

_URLS: Final = frozenset({"memory:", "memory://"})
#: Results are frozen: the common one is made once, not per claim.
_CLAIMED: Final = ClaimResult(ClaimOutcome.CLAIMED)


class MemoryStoreWarning(UserWarning):
    """A `MemoryStore` is in use: it is not shared between processes.

    Emitted once per process. Silence it where a single process is intended::

        warnings.filterwarnings("ignore", category=pausetoken.MemoryStoreWarning)
    """


# Whether the warning was shown in this process; the warning is about the deployment, so
# repeating it for every store a test suite creates would only be noise.
_warned = False
_warned_lock = threading.Lock()


def _warn_once() -> None:
    global _warned  # noqa: PLW0603 - a once-per-process flag is the point
    with _warned_lock:
        if _warned:
            return
        _warned = True
    warnings.warn(
        "MemoryStore keeps tokens in this process only: workers in other processes do not "
        "see its claims, so a token could be redeemed once per process. Use a shared store "
        "(such as the SQLAlchemy store) when more than one process redeems tokens.",
        MemoryStoreWarning,
        stacklevel=3,
    )


def _later(row: PauseRecord | None, expires_at: datetime) -> datetime:
    return expires_at if row is None else max(row.expires_at, expires_at)


def _same_lease(row: PauseRecord, lease_id: str) -> bool:
    return row.lease_id is not None and hmac.compare_digest(
        row.lease_id.encode(), lease_id.encode()
    )


class MemoryStore:
    """A [`TokenStore`][pausetoken.TokenStore] kept in a dictionary of this process.

    Every operation reads and writes under one lock without awaiting in between, so it is
    atomic under asyncio concurrency and across threads of one process. It is **not** shared
    between processes: the first instance created in a process emits a
    `MemoryStoreWarning` saying so.

    After `aclose()` the store forgets its rows and every operation raises
    [`StoreUnavailable`][pausetoken.exceptions.StoreUnavailable] (fail closed).

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", MemoryStoreWarning)
        ...     store = MemoryStore.from_url("memory://")
        >>> store
        MemoryStore(rows=0)
    """

    #: The store protocol version this class implements.
    api_version: ClassVar[int] = STORE_API_VERSION
    #: Claims made here are invisible to other processes (see ``race_processes``).
    process_local: ClassVar[bool] = True

    def __init__(self) -> None:
        """Create an empty store (and warn once per process that it is process-local)."""
        _warn_once()
        self._rows: dict[str, PauseRecord] = {}
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> MemoryStore:
        """Create a store from ``memory://`` (or ``memory:``).

        Args:
            url: ``"memory://"`` or ``"memory:"``; nothing may follow the scheme.
            **options: None are accepted.

        Returns:
            A new, empty store.

        Raises:
            ConfigurationError: for any other URL or any option.
        """
        if url.lower() not in _URLS:
            msg = "a memory store URL is 'memory://' with nothing after the scheme"
            raise ConfigurationError(msg)
        if options:
            msg = f"the memory store takes no options (got {', '.join(sorted(options))})"
            raise ConfigurationError(msg)
        return cls()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"rows={len(self._rows)}"
        return f"MemoryStore({state})"

    def _check_open(self) -> None:
        if self._closed:
            msg = "the memory store was closed"
            raise StoreUnavailable(msg)

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        """Try to take the lease on ``request.pause_key``.

        Args:
            request: The attempt, carrying its lease and the caller's ``now``.

        Returns:
            ``CLAIMED`` when there was no row or its lease ended (``lease_until <= now``);
            ``IN_PROGRESS`` with the holder's ``lease_until`` while a lease is live;
            ``REDEEMED_SAME`` / ``REDEEMED_OTHER`` by response hash once committed;
            ``REVOKED`` once revoked. The row's expiry is raised in every case.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        return self._take(request, PauseState.CLAIMED)

    async def consume(self, request: ClaimRequest) -> ClaimResult:
        """Claim and commit at once (see [`SupportsConsume`][pausetoken.plugins.SupportsConsume]).

        Returns:
            As `claim()`, but ``CLAIMED`` means the pause is now redeemed by
            ``request.lease_id`` (also when that lease had already redeemed it).

        Raises:
            StoreUnavailable: if the store was closed.
        """
        return self._take(request, PauseState.REDEEMED)

    def _take(self, request: ClaimRequest, state: PauseState) -> ClaimResult:
        """Claim (``state`` ``CLAIMED``) or consume (``REDEEMED``) ``request.pause_key``."""
        key = request.pause_key
        with self._lock:
            row = self._row(key)
            if row is None or (
                row.state is PauseState.CLAIMED
                and row.lease_until is not None
                and row.lease_until <= request.now
            ):
                if row is not None:
                    logger.info(
                        "lease taken over after it ended", extra={"pause": fingerprint(key)}
                    )
                self._rows[key] = PauseRecord(
                    pause_key=key,
                    state=state,
                    scope_hash=request.scope_hash,
                    name=request.name,
                    expires_at=_later(row, request.expires_at),
                    response_hash=request.response_hash,
                    lease_id=request.lease_id,
                    lease_until=request.lease_until,
                )
                return _CLAIMED
            self._raise_expiry(row, request.expires_at)
            if row.state is PauseState.CLAIMED:
                return ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=row.lease_until)
            if row.state is PauseState.REDEEMED:
                if state is PauseState.REDEEMED and _same_lease(row, request.lease_id):
                    return _CLAIMED
                same = hmac.compare_digest(
                    (row.response_hash or "").encode(), request.response_hash.encode()
                )
                outcome = ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER
                return ClaimResult(outcome)
            return ClaimResult(ClaimOutcome.REVOKED)

    async def renew(self, pause_key: str, lease_id: str, lease_until: datetime) -> bool:
        """Move the lease's end to ``lease_until`` (never earlier) if ``lease_id`` holds it.

        Returns:
            Whether ``lease_id`` still holds the claim.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        with self._lock:
            row = self._held(pause_key, lease_id)
            if row is None:
                return False
            if row.lease_until is None or row.lease_until < lease_until:
                self._rows[pause_key] = attrs.evolve(row, lease_until=lease_until)
            return True

    async def commit(self, pause_key: str, lease_id: str, expires_at: datetime) -> bool:
        """Mark the pause redeemed if ``lease_id`` holds the claim on it.

        The holder may commit even after its lease ran out, as long as nobody took over; a
        second commit by the same lease confirms the first.

        Returns:
            Whether the pause is redeemed by ``lease_id``.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        with self._lock:
            row = self._row(pause_key)
            if row is None or not _same_lease(row, lease_id):
                return False
            if row.state is PauseState.REDEEMED:
                self._raise_expiry(row, expires_at)
                return True
            if row.state is not PauseState.CLAIMED:
                return False
            self._rows[pause_key] = attrs.evolve(
                row, state=PauseState.REDEEMED, expires_at=max(row.expires_at, expires_at)
            )
            return True

    async def release(self, pause_key: str, lease_id: str) -> bool:
        """Drop the claim if ``lease_id`` holds it, so the pause can be redeemed again.

        Returns:
            Whether a claim was dropped by this call.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        with self._lock:
            if self._held(pause_key, lease_id) is None:
                return False
            del self._rows[pause_key]
            return True

    async def revoke(
        self, pause_key: str, scope_hash: str, name: str, expires_at: datetime, now: datetime
    ) -> PauseRecord:
        """Revoke the pause unless it was redeemed or a live lease holds it.

        An absent pause, or one whose lease ended (``lease_until <= now``), is stored as
        revoked (so a later claim is refused). A live claim, a redeemed and a revoked pause
        are left as they are. The expiry is raised in every case.

        Returns:
            The record after the call.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        with self._lock:
            row = self._row(pause_key)
            if row is None:
                row = PauseRecord(
                    pause_key=pause_key,
                    state=PauseState.REVOKED,
                    scope_hash=scope_hash,
                    name=name,
                    expires_at=expires_at,
                )
            elif (
                row.state is PauseState.CLAIMED
                and row.lease_until is not None
                and row.lease_until <= now
            ):
                row = attrs.evolve(
                    row,
                    state=PauseState.REVOKED,
                    expires_at=max(row.expires_at, expires_at),
                    response_hash=None,
                    lease_id=None,
                    lease_until=None,
                )
            else:
                return self._raise_expiry(row, expires_at)
            self._rows[pause_key] = row
            return row

    async def status(self, pause_key: str) -> PauseRecord | None:
        """What the store knows of ``pause_key``, or ``None``.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        with self._lock:
            return self._row(pause_key)

    async def purge(self, before: datetime) -> int:
        """Delete rows whose ``expires_at`` is strictly before ``before``.

        Returns:
            How many rows were deleted.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        with self._lock:
            self._check_open()
            expired = [key for key, row in self._rows.items() if row.expires_at < before]
            for key in expired:
                del self._rows[key]
            return len(expired)

    async def check(self) -> None:
        """Nothing to connect to: raises only if the store was closed.

        Raises:
            StoreUnavailable: if the store was closed.
        """
        with self._lock:
            self._check_open()

    def _row(self, pause_key: str) -> PauseRecord | None:
        """The row of ``pause_key``, if any (lock held); raises once the store was closed."""
        # The flag is read here and _check_open() called only to raise: every claim and
        # commit passes here, and pays for one call, not two.
        if self._closed:
            self._check_open()
        return self._rows.get(pause_key)

    def _held(self, pause_key: str, lease_id: str) -> PauseRecord | None:
        """The row of ``pause_key`` if ``lease_id`` holds the claim on it (lock held)."""
        row = self._row(pause_key)
        if row is None or row.state is not PauseState.CLAIMED or not _same_lease(row, lease_id):
            return None
        return row

    def _raise_expiry(self, row: PauseRecord, expires_at: datetime) -> PauseRecord:
        """Store ``row`` with the later of its expiry and ``expires_at`` (lock held)."""
        if row.expires_at < expires_at:
            row = attrs.evolve(row, expires_at=expires_at)
            self._rows[row.pause_key] = row
        return row

    async def aclose(self) -> None:
        """Forget every row; later calls raise ``StoreUnavailable``. Closing twice is fine."""
        with self._lock:
            self._closed = True
            self._rows.clear()
