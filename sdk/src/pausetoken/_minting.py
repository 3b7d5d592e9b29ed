"""Minting a pause's token: refuse what could never verify, bind the checkpoint, sign."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any, Final

import attrs

from pausetoken._claims import Claims, InterruptEvent, Scope, hash_scope, new_jti
from pausetoken._hashing import hash_payload
from pausetoken._policy import MAX_CLAIM_LENGTH, ttl_problem
from pausetoken._service_api import namespace_of, store_call
from pausetoken._store_api import PauseState
from pausetoken.exceptions import AlreadyRedeemed, InvalidMintRequest, PayloadMismatch, TokenRevoked

if TYPE_CHECKING:
    from datetime import timedelta

    from pausetoken._interrupt import Interrupt
    from pausetoken._policy import TokenPolicy
    from pausetoken._registrations import Registrations
    from pausetoken._reporter import Reporter
    from pausetoken._service_api import Service

__all__ = ["MintRequest", "Minter"]

# The ids a request carries, in the order their problems are told; the optional ones may be
# None (made up by the reader, or absent claims).
_IDS: Final = ("thread_id", "run_id", "interrupt_id", "checkpoint_id", "tool_call_id", "principal")
_OPTIONAL_IDS: Final = frozenset({"interrupt_id", "checkpoint_id", "tool_call_id", "principal"})
# What an InterruptEvent copies from the claims minted.
_EVENT_CLAIMS: Final = (
    "name",
    "interrupt_id",
    "run_id",
    "session_id",
    "thread_id",
    "checkpoint_id",
)


@attrs.frozen
class MintRequest:
    """One call of `mint()`, its arguments in their order (``PauseTokens.mint()`` tells each)."""

    interrupt: Interrupt[Any, Any] | str
    payload: Any
    scope: Scope
    thread_id: str
    run_id: str
    session_id: str
    interrupt_id: str | None
    checkpoint_id: str | None
    tool_call_id: str | None
    ttl: timedelta | None
    principal: str | None

    def problem(self, *, lifetime: timedelta, policy: TokenPolicy) -> str | None:
        """The first reason this request could never verify when redeemed, or ``None``.

        ``lifetime`` is the token's (``ttl``, or the service's): it must suit ``policy``.
        """
        scope: object = self.scope  # typed, but a caller without a type checker passes anything
        if not isinstance(scope, Scope):
            return "scope must be a Scope (whose pause it is)"
        for name in _IDS:
            value: object = getattr(self, name)
            if value is None and name in _OPTIONAL_IDS:
                continue
            if not isinstance(value, str) or not 0 < len(value) <= MAX_CLAIM_LENGTH:
                return f"{name} must be a string of 1 to {MAX_CLAIM_LENGTH} characters"
        session_id = self.session_id
        if not isinstance(session_id, str) or len(session_id) > MAX_CLAIM_LENGTH:
            return f"session_id must be a string of at most {MAX_CLAIM_LENGTH} characters"
        return ttl_problem(lifetime, leeway=policy.leeway, max_lifetime=policy.max_lifetime)


class Minter:
    """Mints a service's tokens: `mint()` of `PauseTokens`."""

    __slots__ = ("_interrupts", "_report", "_service")

    def __init__(self, service: Service, *, interrupts: Registrations, report: Reporter) -> None:
        """Mint for ``service``, whose registrations ``interrupts`` are."""
        self._service = service
        self._interrupts = interrupts
        self._report = report

    def __repr__(self) -> str:
        return f"Minter({len(self._interrupts)} interrupts)"

    async def mint(self, request: MintRequest) -> InterruptEvent[Any]:
        """Check ``request``, bind it to the checkpoint, refuse a closed pause, then sign."""
        service = self._service
        policy = service.policy
        lifetime = service.ttl if request.ttl is None else request.ttl
        problem = request.problem(lifetime=lifetime, policy=policy)
        if problem is not None:
            raise InvalidMintRequest(problem)
        kind = self._interrupts.find(request.interrupt)
        typed = kind.structure_payload(request.payload)
        value = kind.to_json(typed)
        pending = await service.checkpoints.bind(
            thread_id=request.thread_id,
            payload=value,
            interrupt_id=request.interrupt_id,
            checkpoint_id=request.checkpoint_id,
        )
        request_hash = hash_payload(value)
        if pending.value is not value and not hmac.compare_digest(
            request_hash, hash_payload(pending.value)
        ):
            msg = "the runtime stored another payload for this interrupt than the one given"
            raise PayloadMismatch(msg)
        now = service.clock()
        iat = int(now)
        claims = Claims(
            iss=policy.issuer,
            aud=policy.audience,
            iat=iat,
            exp=iat + int(lifetime.total_seconds()),
            jti=new_jti(),
            name=kind.name,
            interrupt_id=pending.interrupt_id,
            run_id=request.run_id,
            session_id=request.session_id,
            thread_id=pending.thread_id,
            checkpoint_id=pending.checkpoint_id,
            scope_hash=hash_scope(request.scope),
            request_hash=request_hash,
            tool_call_id=request.tool_call_id,
            sub=request.principal,
            ns=namespace_of(service.checkpoints),
        )
        await self._refuse_closed_pause(claims)
        token = service.signer.sign(claims.to_dict())
        self._report.minted(claims, at=now)
        # The event names the pause as the token's claims do.
        pause = {name: getattr(claims, name) for name in _EVENT_CLAIMS}
        return InterruptEvent(token=token, payload=typed, expires_at=claims.expires_at, **pause)

    async def _refuse_closed_pause(self, claims: Claims) -> None:
        """No token for a pause that was already answered or revoked."""
        record = await store_call(self._service.store.status(claims.pause_key))
        if record is None:
            return
        if record.state is PauseState.REDEEMED:
            msg = "the pause was already answered; no token is minted for it"
            raise AlreadyRedeemed(msg, code=AlreadyRedeemed.PAUSE_ALREADY_REDEEMED)
        if record.state is PauseState.REVOKED:
            msg = "the pause was revoked; no token is minted for it"
            raise TokenRevoked(msg, code=TokenRevoked.PAUSE_REVOKED)
