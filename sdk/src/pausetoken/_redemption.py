"""Redeeming a token exactly once: check, claim, run the body under a lease, commit or replay."""

from __future__ import annotations

import asyncio
import functools
import hmac
import os
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs

from pausetoken._claims import Claims, Redemption, Scope, hash_scope
from pausetoken._compact import b64url_encode
from pausetoken._hashing import hash_payload
from pausetoken._lease import Lease
from pausetoken._service_api import namespace_of, row_expiry, skewed, store_call, utc
from pausetoken._store_api import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
)
from pausetoken._verify import verify_token
from pausetoken.exceptions import (
    AlreadyRedeemed,
    CheckpointNotFound,
    CommitUnconfirmed,
    InvalidResponse,
    InvalidToken,
    LeaseLost,
    PauseTokenError,
    PayloadMismatch,
    PrincipalMismatch,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    StoreUnavailable,
    TokenRevoked,
    UnknownInterrupt,
    UnsupportedPayload,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from datetime import datetime

    from pausetoken._interrupt import Interrupt
    from pausetoken._registrations import Registrations
    from pausetoken._reporter import Reporter
    from pausetoken._service_api import Service

__all__ = ["Attempt", "Redeemer"]

# A failed commit is retried after this long at first, doubling up to the maximum.
_COMMIT_RETRY_FIRST_S = 0.05
_COMMIT_RETRY_MAX_S = 1.0


# Not frozen: built on every redemption, and a frozen class is slower to build.
@attrs.define
class Attempt:
    """One attempt to redeem a token, as `redeem()` or `consume()` was called."""

    token: str
    response: Any
    scope: Scope
    principal: str | None
    expect: Interrupt[Any, Any] | None


@attrs.define
class _Checked:
    """A redemption attempt that passed every check up to the claim (steps 1-7)."""

    claims: Claims
    interrupt: Interrupt[Any, Any]
    payload: Any
    response: Any
    response_hash: str
    now: float
    #: Set when the checkpoint moved on: the store's record decides what happens.
    stale: StaleToken | CheckpointNotFound | None = None


@attrs.define
class _Prepared:
    """A checked attempt and the claim request made for it."""

    checked: _Checked
    request: ClaimRequest


@attrs.define
class _Claimed:
    """A claim this worker holds on a pause, its lease renewed until commit or release."""

    checked: _Checked
    key: str
    lease_id: str
    lease: Lease


class Redeemer:
    """Redeems a service's tokens: `redeem()` and `consume()` of `PauseTokens`.

    The order of the checks, the claim, the commit and the release is the one the service
    documents; see ``PauseTokens.redeem()``.
    """

    __slots__ = ("_interrupts", "_report", "_service")

    def __init__(
        self,
        service: Service,
        *,
        interrupts: Registrations,
        report: Reporter,
    ) -> None:
        """Redeem for ``service``, whose registrations ``interrupts`` are (shared, not copied)."""
        self._service = service
        self._interrupts = interrupts
        self._report = report

    def __repr__(self) -> str:
        return f"Redeemer({len(self._interrupts)} interrupts)"

    @asynccontextmanager
    async def redeem(self, attempt: Attempt) -> AsyncIterator[Redemption[Any, Any]]:
        """Claim, yield the redemption while the lease is kept, then commit or release."""
        claimed = await self._claim(attempt)
        if not isinstance(claimed, _Claimed):
            yield claimed
            return
        checked, lease = claimed.checked, claimed.lease
        try:
            try:
                yield _redemption(checked, replayed=False, lease=lease)
            except BaseException:
                await lease.stop()
                await self._release(checked, claimed.key, claimed.lease_id)
                raise
            await self._commit(checked, claimed.key, claimed.lease_id, lease)
        finally:
            await lease.stop()
        self._report.committed(checked.claims)

    async def consume(self, attempt: Attempt) -> Redemption[Any, Any]:
        """Claim and commit at once (`redeem()` with an empty body).

        In one store call when the store offers ``consume`` (`SupportsConsume`), else in two.
        """
        store = self._service.store
        if not _consumes_at_once(type(store)):
            return await self._consume_in_two_steps(attempt)
        at_once = store.consume  # type: ignore[attr-defined]
        prepared = await self._prepare(attempt)
        if not isinstance(prepared, _Prepared):
            return prepared
        checked, request = prepared.checked, prepared.request
        claims = checked.claims
        try:
            result: ClaimResult = await store_call(at_once(request))
        except StoreUnavailable as exc:
            if exc.code == StoreUnavailable.STORE_TABLE_MISSING:
                raise  # the server refused the statement: nothing was written
            # The store may have written the answer before the connection failed.
            unconfirmed = StoreUnavailable(code=StoreUnavailable.CONSUME_UNCONFIRMED)
            self._report.consume_unconfirmed(claims, unconfirmed, exc)
            raise unconfirmed from exc
        if result.outcome is not ClaimOutcome.CLAIMED:
            self._refuse(checked, result.outcome, result.lease_until)
            return _redemption(checked, replayed=True)
        self._report.claimed(claims, at=checked.now)
        self._report.committed(claims)
        # The lease the redemption names, as after a two-step consume: never renewed.
        return _redemption(checked, replayed=False, lease=self._lease(request, claims))

    def _lease(self, request: ClaimRequest, claims: Claims) -> Lease:
        """The lease ``request`` takes, not yet renewed."""
        service = self._service
        return Lease(
            store=service.store,
            pause_key=request.pause_key,
            lease_id=request.lease_id,
            until=request.lease_until,
            length=service.lease,
            clock=service.clock,
            on_renewal=self._report.renewals(claims),
        )

    async def _consume_in_two_steps(self, attempt: Attempt) -> Redemption[Any, Any]:
        # redeem() with an empty body, without the context manager: there is no body that
        # could raise between the claim and the commit, so nothing is ever released here.
        # Nor is the lease renewed unless the commit has to be retried: nothing acts on the
        # answer before this returns, and a renewal timer set and cancelled on every call
        # costs about a tenth of an in-memory consume.
        claimed = await self._claim(attempt, renew=False)
        if not isinstance(claimed, _Claimed):
            return claimed
        checked, lease = claimed.checked, claimed.lease
        done = _redemption(checked, replayed=False, lease=lease)
        try:
            await self._commit(checked, claimed.key, claimed.lease_id, lease)
        finally:
            await lease.stop()
        self._report.committed(checked.claims)
        return done

    async def _prepare(self, attempt: Attempt) -> _Prepared | Redemption[Any, Any]:
        """Check, then make the claim request: or the replay's answer for a stale token."""
        expect = attempt.expect
        expected = None if expect is None else self._interrupts.find(expect)
        checked = await self._check(attempt, expected)
        claims = checked.claims
        if checked.stale is not None:
            return await self._replay_or_raise(checked, checked.stale)
        service = self._service
        policy, at = service.policy, utc(checked.now)
        request = ClaimRequest(
            pause_key=claims.pause_key,
            scope_hash=claims.scope_hash,
            name=claims.name,
            response_hash=checked.response_hash,
            expires_at=row_expiry(policy, at),
            # secrets.token_urlsafe(16), without the base64 module's extra calls.
            lease_id=b64url_encode(os.urandom(16)),
            lease_until=at + service.lease,
            now=skewed(policy, at),
        )
        return _Prepared(checked, request)

    async def _claim(
        self, attempt: Attempt, *, renew: bool = True
    ) -> _Claimed | Redemption[Any, Any]:
        """Check, then claim: the claim held, or the replay's answer.

        With ``renew``, the lease is renewed from now on; without it, from the first failed
        commit on (`_commit`).
        """
        prepared = await self._prepare(attempt)
        if not isinstance(prepared, _Prepared):
            return prepared
        checked, request = prepared.checked, prepared.request
        claims = checked.claims
        service = self._service
        store = service.store
        result = await store_call(store.claim(request))
        if result.outcome is not ClaimOutcome.CLAIMED:
            self._refuse(checked, result.outcome, result.lease_until)
            return _redemption(checked, replayed=True)
        self._report.claimed(claims, at=checked.now)
        lease = self._lease(request, claims)
        if renew:
            lease.keep()
        return _Claimed(checked, request.pause_key, request.lease_id, lease)

    async def _commit(self, checked: _Checked, key: str, lease_id: str, lease: Lease) -> None:
        """Commit until the store confirms it, while the lease (renewed meanwhile) holds.

        Raises:
            LeaseLost: the store answered that this lease no longer holds the claim.
            CommitUnconfirmed: the store could not be reached before the lease ended.
        """
        service = self._service
        claims = checked.claims
        delay = _COMMIT_RETRY_FIRST_S
        while True:
            try:
                committed = await store_call(
                    service.store.commit(
                        key, lease_id, row_expiry(service.policy, utc(service.clock()))
                    )
                )
            except StoreUnavailable as exc:
                if lease.lost or lease.lapsed():
                    unconfirmed = CommitUnconfirmed()
                    self._report.commit_unconfirmed(claims, unconfirmed, exc)
                    raise unconfirmed from exc
                self._report.commit_retrying(claims)
                # consume() renews from here on: its commit follows the claim at once.
                lease.keep(at_once=True)
                remaining = lease.until.timestamp() - service.clock()
                await asyncio.sleep(max(0.0, min(delay, remaining)))
                delay = min(delay * 2, _COMMIT_RETRY_MAX_S)
                continue
            break
        if committed:
            return
        record = await self._status_or_none(key)
        if record is not None and record.state is PauseState.REVOKED:
            msg = "the claim lapsed while the body ran and the pause was then revoked"
            lost = LeaseLost(msg, code=LeaseLost.LEASE_REVOKED)
        else:
            lost = LeaseLost()
        self._report.lease_lost(claims, lost)
        raise lost

    async def _status_or_none(self, key: str) -> PauseRecord | None:
        try:
            return await store_call(self._service.store.status(key))
        except StoreUnavailable:
            return None

    async def _check(self, attempt: Attempt, expect: Interrupt[Any, Any] | None) -> _Checked:
        """Steps 1-7, cheapest first; ``expect`` is the registration ``attempt`` names."""
        service = self._service
        now = service.clock()
        claims: Claims | None = None
        try:
            claims = verify_token(
                attempt.token, signer=service.signer, policy=service.policy, now=now
            )
            if claims.ns != namespace_of(service.checkpoints):
                msg = "the token was minted for another runtime namespace (another graph)"
                raise InvalidToken(msg, code=InvalidToken.TOKEN_NAMESPACE_MISMATCH)
            interrupt = self._interrupts.get(claims.name)
            if not (interrupt is not None and interrupt.cross_scope) and not hmac.compare_digest(
                claims.scope_hash, hash_scope(attempt.scope)
            ):
                raise ScopeMismatch
            if claims.sub is not None and not _same_principal(claims.sub, attempt.principal):
                raise PrincipalMismatch
            if interrupt is None:
                raise UnknownInterrupt
            if expect is not None and interrupt is not expect:
                msg = f"the token is for another interrupt than {expect.name!r}"
                raise UnknownInterrupt(msg, code=UnknownInterrupt.INTERRUPT_MISMATCH)
            typed_response = interrupt.structure_response(attempt.response)
            response_hash = _response_hash(interrupt, typed_response)
            try:
                pending = await service.checkpoints.pending(
                    thread_id=claims.thread_id,
                    checkpoint_id=claims.checkpoint_id,
                    interrupt_id=claims.interrupt_id,
                )
            except (StaleToken, CheckpointNotFound) as exc:
                # The run moved on. That is what a committed redemption does to a run, so the
                # store decides: a retry of the committed answer is answered, anything else is
                # stale.
                return _Checked(claims, interrupt, None, typed_response, response_hash, now, exc)
            if not hmac.compare_digest(pending.value_hash, claims.request_hash):
                raise PayloadMismatch
            payload = interrupt.structure_payload(pending.value)
            _validate(interrupt, typed_response, payload)
            return _Checked(claims, interrupt, payload, typed_response, response_hash, now)
        except PauseTokenError as exc:
            # One place reports every refusal before the claim; the token's fields only
            # once it verified.
            self._report.refused(exc, claims, at=now)
            raise

    async def _replay_or_raise(
        self, checked: _Checked, stale: StaleToken | CheckpointNotFound
    ) -> Redemption[Any, Any]:
        record = await store_call(self._service.store.status(checked.claims.pause_key))
        if record is None or record.state is PauseState.CLAIMED:
            self._report.refused(stale, checked.claims, at=checked.now)
            raise stale
        if record.state is PauseState.REVOKED:
            self._refuse(checked, ClaimOutcome.REVOKED, None)
        same = record.response_hash is not None and hmac.compare_digest(
            record.response_hash, checked.response_hash
        )
        self._refuse(
            checked, ClaimOutcome.REDEEMED_SAME if same else ClaimOutcome.REDEEMED_OTHER, None
        )
        return _redemption(checked, replayed=True)

    def _refuse(
        self, checked: _Checked, outcome: ClaimOutcome, lease_until: datetime | None
    ) -> None:
        """Raise for every claim outcome but an idempotent retry."""
        if outcome is ClaimOutcome.REDEEMED_SAME:
            self._report.replayed(checked.claims, at=checked.now)
            return
        refusal: PauseTokenError
        if outcome is ClaimOutcome.REDEEMED_OTHER:
            refusal = AlreadyRedeemed()
        elif outcome is ClaimOutcome.REVOKED:
            refusal = TokenRevoked()
        else:
            retry_after = None
            if lease_until is not None:
                ends = lease_until + self._service.policy.leeway
                retry_after = max(0.0, ends.timestamp() - checked.now)
            refusal = RedemptionInProgress(retry_after=retry_after)
        self._report.replay_refused(checked.claims, refusal, at=checked.now)
        raise refusal

    async def _release(self, checked: _Checked, key: str, lease_id: str) -> None:
        try:
            released = await store_call(self._service.store.release(key, lease_id))
        except StoreUnavailable as exc:
            # The body's own exception is what the caller must see; the lease lapses by
            # itself and the token becomes redeemable again then.
            self._report.release_failed(checked.claims, exc)
            return
        self._report.released(checked.claims, key, held=released)


@functools.cache
def _consumes_at_once(kind: type) -> bool:
    """Whether stores of ``kind`` consume in one call: `SupportsConsume`, not inherited.

    A ``consume`` inherited from above a class that overrides ``claim`` or ``commit`` would
    skip the override (a subclass of `MemoryStore` that counts or refuses claims): such a
    store is claimed and committed in two calls, through its own methods.
    """
    consume = _owner(kind, "consume")
    return consume is not None and all(
        issubclass(consume, owner)
        for owner in (_owner(kind, "claim"), _owner(kind, "commit"))
        if owner
    )


def _owner(kind: type, name: str) -> type | None:
    """The class in ``kind``'s MRO that defines ``name``."""
    return next((base for base in kind.__mro__ if name in vars(base)), None)


def _redemption(
    checked: _Checked, *, replayed: bool, lease: Lease | None = None
) -> Redemption[Any, Any]:
    return Redemption(
        claims=checked.claims,
        payload=checked.payload,
        response=checked.response,
        replayed=replayed,
        time_to_answer=timedelta(seconds=max(0.0, checked.now - checked.claims.iat)),
        lease=lease,
    )


def _validate(interrupt: Interrupt[Any, Any], response: Any, payload: Any) -> None:
    if interrupt.validate is None:
        return
    try:
        interrupt.validate(response, payload)
    except PauseTokenError:
        raise
    except Exception as exc:
        # Whatever the validator's message says may quote the answer: name its type only.
        msg = (
            f"the answer was refused by the validator of {interrupt.name!r} ({type(exc).__name__})"
        )
        raise InvalidResponse(msg) from exc


def _response_hash(interrupt: Interrupt[Any, Any], response: Any) -> str:
    try:
        # The hash of interrupt.to_json(response), without building that copy first.
        return hash_payload(response, converter=interrupt.converter)
    except UnsupportedPayload as exc:
        msg = "the response cannot be represented exactly as JSON"
        raise InvalidResponse(msg) from exc


def _same_principal(bound: str, given: str | None) -> bool:
    # Compared as UTF-8 bytes: compare_digest refuses non-ASCII str.
    return given is not None and hmac.compare_digest(
        bound.encode("utf-8", "surrogatepass"), given.encode("utf-8", "surrogatepass")
    )
