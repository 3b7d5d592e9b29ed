"""The `PauseTokens` service: mint, verify and redeem exactly once.

A façade: each method documents what it does and hands it to the part that does it
(`Minter`, `Redeemer`, `Records`, `Registrations`; `open_parts()` for settings).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Self, Unpack

from pausetoken._minting import Minter, MintRequest
from pausetoken._policy import PolicyKeywords, ServicePolicy, policy_keywords
from pausetoken._records import Records, TokenStatus
from pausetoken._redemption import Attempt, Redeemer
from pausetoken._registrations import Registrations
from pausetoken._reporter import Reporter
from pausetoken._service_api import store_call
from pausetoken._wiring import open_parts

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from contextlib import AbstractAsyncContextManager
    from datetime import datetime, timedelta

    from typing_extensions import TypeVar

    from pausetoken._claims import Claims, InterruptEvent, Redemption, Scope
    from pausetoken._events import Observer
    from pausetoken._interrupt import Interrupt
    from pausetoken._reader_api import CheckpointReader
    from pausetoken._settings import Settings
    from pausetoken._signer_api import Signer
    from pausetoken._store_api import TokenStore

    # An interrupt's payload and response types, Any where no interrupt says (a name, or no
    # expect=): one signature per method. TypeVar defaults are in typing from Python 3.13.
    _P = TypeVar("_P", default=Any)
    _R = TypeVar("_R", default=Any)

__all__ = ["PauseTokens", "TokenStatus"]


def _system_clock() -> float:
    return time.time()


class PauseTokens:
    """Mints pause tokens and redeems their answers exactly once.

    Args:
        signer: Signs and verifies tokens ([`JoseSigner`][pausetoken.JoseSigner], ...).
        store: Where single use is enforced ([`MemoryStore`][pausetoken.MemoryStore], a backend).
        checkpoints: Reads the runtime's checkpoints
            ([`MemoryCheckpoints`][pausetoken.MemoryCheckpoints],
            ``pausetoken_langgraph.LangGraphCheckpoints``).
        clock: Returns the current time in seconds since the epoch (for tests).
        observers: Receive an [`AuditEvent`][pausetoken.AuditEvent] for every mint,
            refusal, claim, renewal, commit, release, replay, revocation and purge
            ([`LoggingObserver`][pausetoken.LoggingObserver],
            ``pausetoken.otel.OpenTelemetryObserver``). One that raises is logged once and
            skipped; none can change an outcome.
        **policy: The policy's fields, named and defaulted as in
            [`Settings`][pausetoken.Settings]: ``ttl`` (the default token lifetime),
            ``leeway``, ``issuer``, ``audience``, ``max_lifetime``, ``max_token_bytes`` and
            ``lease``. The service renews a claim every third of ``lease`` while the body
            of `redeem()` runs, so it only needs to outlast a stalled worker; another
            redeemer takes over a claim only after its lease plus ``leeway`` (the
            clock-skew allowance) passed. A value out of range raises
            [`ConfigurationError`][pausetoken.exceptions.ConfigurationError]
            ``policy_invalid``.

    The service owns nothing it was handed: `aclose()` closes only what
    `from_settings()` opened.

    Examples:
        >>> import warnings
        >>> from pausetoken import JoseSigner, KeyRing, MemoryCheckpoints, MemoryStore
        >>> from pausetoken import MemoryStoreWarning
        >>> with warnings.catch_warnings():  # it warns that it is local to this process
        ...     warnings.simplefilter("ignore", MemoryStoreWarning)
        ...     store = MemoryStore()
        >>> tokens = PauseTokens(
        ...     signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=MemoryCheckpoints()
        ... )
    """

    def __init__(
        self,
        *,
        signer: Signer,
        store: TokenStore,
        checkpoints: CheckpointReader,
        clock: Callable[[], float] = _system_clock,
        observers: Sequence[Observer] = (),
        **policy: Unpack[PolicyKeywords],
    ) -> None:
        """Create the service; see the class docstring for the arguments."""
        chosen = ServicePolicy(**policy)
        self.signer = signer
        self.store = store
        self.checkpoints = checkpoints
        self.policy = chosen.policy
        self.ttl = chosen.ttl
        self.lease = chosen.lease
        self.clock = clock
        self._owned: list[Callable[[], Awaitable[None]]] = []
        self._store_checked = False
        self._interrupts = Registrations()
        report = Reporter(observers, clock=clock)
        self._minter = Minter(self, interrupts=self._interrupts, report=report)
        self._redeemer = Redeemer(self, interrupts=self._interrupts, report=report)
        self._records = Records(self, report=report)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        checkpoints: CheckpointReader | None = None,
        clock: Callable[[], float] = _system_clock,
        observers: Sequence[Observer] = (),
    ) -> Self:
        """Build the service from [`Settings`][pausetoken.Settings].

        The signer, store and (unless given) checkpoint reader are chosen through the plugin
        registry by the names and URL in ``settings``. What is opened here is closed by
        `aclose()`.

        Args:
            settings: The configuration.
            checkpoints: A reader built in code (for example for a compiled LangGraph
                graph); when given, ``settings.checkpoints`` is not used.
            clock: As for the constructor.
            observers: As for the constructor.

        Raises:
            ConfigurationError: for unknown or missing backends and bad options.
        """
        parts = open_parts(settings, checkpoints=checkpoints)
        service = cls(
            signer=parts.signer,
            store=parts.store,
            checkpoints=parts.checkpoints,
            clock=clock,
            observers=observers,
            **policy_keywords(settings),
        )
        service._owned = list(parts.closers)
        return service

    async def __aenter__(self) -> Self:
        """Enter ``async with``: checks the store once (see `check_store()`)."""
        try:
            await self.check_store()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def check_store(self) -> None:
        """Confirm the store can serve; ``async with`` calls this once at start-up.

        Raises:
            ConfigurationError: permanent misconfiguration (credentials, a missing
                database, a read-only user, a table that was dropped).
            StoreUnavailable: the store cannot be reached now.
        """
        if self._store_checked:
            return
        await store_call(self.store.check())
        self._store_checked = True

    async def __aexit__(self, *exc_info: object) -> None:
        """Close what the service opened."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close what `from_settings()` opened; things handed in stay open."""
        owned, self._owned = self._owned, []
        for close in reversed(owned):
            await close()

    # -- registration ---------------------------------------------------------------------

    def register(self, interrupt: Interrupt[_P, _R]) -> Interrupt[_P, _R]:
        """Register a kind of pause so tokens can be minted and redeemed for it.

        Returns:
            The interrupt, so registration can stand in an assignment
            (``REFUND = tokens.register(Interrupt(...))``): the typed handle to mint with
            and to redeem with ``expect=``.

        Raises:
            ConfigurationError: another interrupt is registered under the same name
                (``duplicate_interrupt``), or its payload or response type has a field
                type the converter cannot structure (``interrupt_type_unsupported``).
        """
        self._interrupts.add(interrupt)
        return interrupt

    def interrupt(self, name: str) -> Interrupt[Any, Any]:
        """The registered interrupt called ``name``.

        Raises:
            UnknownInterrupt: nothing is registered under ``name``.
        """
        return self._interrupts.find(name)

    # -- minting --------------------------------------------------------------------------

    async def mint(
        self,
        interrupt: Interrupt[_P, Any] | str,
        payload: Any,
        *,
        scope: Scope,
        thread_id: str,
        run_id: str,
        session_id: str = "",
        interrupt_id: str | None = None,
        checkpoint_id: str | None = None,
        tool_call_id: str | None = None,
        ttl: timedelta | None = None,
        principal: str | None = None,
    ) -> InterruptEvent[_P]:
        """Mint the token for one pause.

        The payload is structured into the registered payload type (so a malformed pause
        never gets a token), the checkpoint reader binds the pause to the current
        checkpoint, and the token carries the hash of the payload the runtime stored.

        Args:
            interrupt: The registered [`Interrupt`][pausetoken.Interrupt] (the handle
                ``register`` returned: the event's payload is then typed) or its name.
            payload: What is shown to the person (an instance of the registered type or
                data that structures into it).
            scope: Who the pause belongs to.
            thread_id: The run's thread.
            run_id: The run's id.
            session_id: An optional session id carried in the token.
            interrupt_id: The runtime's interrupt id; made up when the reader allows it.
            checkpoint_id: The checkpoint to bind; the reader's current one by default.
            tool_call_id: The tool call the pause is about, if any.
            ttl: Lifetime of this token (default: the service's ``ttl``).
            principal: The only principal (``sub``) allowed to answer, if any.

        Returns:
            The event holding the token and the typed payload.

        Raises:
            InvalidMintRequest: an argument could never verify (no scope, an empty or
                overlong id or principal, a ttl outside (leeway, max_lifetime]); raised
                before anything is recorded.
            UnknownInterrupt: ``interrupt`` is not registered (or another interrupt is
                registered under its name).
            UnsupportedPayload: the payload does not fit the registered type or cannot be
                represented exactly as JSON.
            AlreadyRedeemed, TokenRevoked: the pause was already answered or revoked.
            PayloadMismatch: the runtime stored another payload for this interrupt.
            CheckpointNotFound, CheckpointLost, StaleToken: from the checkpoint reader.
        """
        request = MintRequest(
            interrupt, payload, scope, thread_id, run_id, session_id,
            interrupt_id, checkpoint_id, tool_call_id, ttl, principal,
        )  # fmt: skip
        return await self._minter.mint(request)

    # -- verifying ------------------------------------------------------------------------

    def verify(self, token: str) -> Claims:
        """Verify a token's signature and claims (no store, no checkpoint).

        For rendering an approval page; redeeming checks much more.

        Raises:
            InvalidToken: malformed, forged or unacceptable token.
            TokenExpired: the token expired.
        """
        return self._records.verify(token, now=self.clock())

    # -- redeeming ------------------------------------------------------------------------

    def redeem(
        self,
        token: str,
        response: Any,
        *,
        scope: Scope,
        principal: str | None = None,
        expect: Interrupt[_P, _R] | None = None,
    ) -> AbstractAsyncContextManager[Redemption[_P, _R]]:
        """Redeem a token in two phases: claim, run the body, then commit or release.

        Checks run cheapest first and nothing changes state before the claim, so a bad
        attempt never burns a token: verify the token; the scope; the principal; the
        registration; the response's structure; that the checkpoint is current and the
        interrupt pending; that the stored payload is the one the token was minted for; the
        interrupt's validator; then the claim. The body runs while the claim is held; a
        normal exit commits, an exception releases (the token can be redeemed again) and
        propagates.

        The claim is per pause, not per token: tokens minted twice for one pause share it,
        so the pause is answered once whichever token carries the answer.

        When ``redemption.replayed`` is true, the same answer was already committed: the
        run was resumed then, so the body must not resume it again.

        With ``expect=REFUND`` (the registered interrupt), the token must be one minted for
        that interrupt, and type checkers know the redemption's payload and response types
        (``Redemption[Refund, Decision]``); a token for another interrupt is refused before
        anything is claimed.

        While the body runs, the claim's lease is renewed in the background
        (``redemption.lease``); run the resume through ``await redemption.lease.run(...)``
        to have it cancelled if the claim is lost. After the body, the commit is retried
        with backoff while the lease holds.

        Args:
            token: The token from minting.
            response: The answer (an instance of the registered response type or data that
                structures into it).
            scope: The caller's scope; must be the token's unless the interrupt allows
                cross-scope answers.
            principal: Who answers; must be the token's ``sub`` when it has one.
            expect: The registered interrupt the token must be for; without it any
                registered interrupt is accepted (and the redemption is typed ``Any``).

        Returns:
            An async context manager whose value is the redemption with typed payload and
            response.

        Raises:
            InvalidToken: the token does not verify (before anything is claimed, like the
                errors down to ``PayloadMismatch``).
            TokenExpired: the token expired.
            ScopeMismatch: the token belongs to another scope.
            PrincipalMismatch: the token is bound to another principal.
            UnknownInterrupt: the token's interrupt name is not registered, or it is not
                the ``expect=`` interrupt (code ``interrupt_mismatch``).
            InvalidResponse: the answer does not fit its type or the validator refused it.
            StaleToken: the run moved on from the token's checkpoint.
            CheckpointNotFound: the token's checkpoint is gone.
            CheckpointLost: the checkpointer does not persist state.
            PayloadMismatch: the stored payload is not the one the token was minted for.
            AlreadyRedeemed: redeemed before with another answer.
            RedemptionInProgress: another redeemer holds a live claim.
            TokenRevoked: the token was revoked.
            LeaseLost: the claim was lost while the body ran (renewals failed for longer
                than the lease and another redeemer took it over, code ``lease_lost``, or
                the pause was then revoked, code ``lease_revoked``).
            CommitUnconfirmed: the body ran, but no commit reached the store before the
                lease ended: the run may have resumed (see the exception's docs).
            StoreUnavailable: the store cannot be reached before the body runs (fail
                closed: nothing was acted on).
        """
        return self._redeemer.redeem(Attempt(token, response, scope, principal, expect))

    async def consume(
        self,
        token: str,
        response: Any,
        *,
        scope: Scope,
        principal: str | None = None,
        expect: Interrupt[_P, _R] | None = None,
    ) -> Redemption[_P, _R]:
        """Redeem in one step (claim and commit); see `redeem()` for the checks and ``expect``.

        On a store that offers it ([`SupportsConsume`][pausetoken.plugins.SupportsConsume]) the
        claim and the commit are one store call; on others, two.

        Returns:
            The redemption; ``replayed`` is true for a retry of a committed answer.

        Raises:
            StoreUnavailable: as for `redeem()`; with the code ``consume_unconfirmed`` when a
                one-call consume failed, and the store may have recorded the answer (nothing
                was acted on: ask `status()` once the store is back).
        """
        return await self._redeemer.consume(Attempt(token, response, scope, principal, expect))

    # -- revocation and status ------------------------------------------------------------

    async def revoke(self, token: str, *, scope: Scope) -> TokenStatus:
        """Revoke the pause a token answers, unless it was already answered.

        The store keeps one row per pause, so this revokes every token minted for it. An
        expired token is still authentic and revokes its pause. A pause whose claim is live
        (a redeemer's body may be acting on the answer right now) is not revoked: the answer
        is ``IN_PROGRESS``, and revoking again after that redemption ended tells how it
        ended.

        Returns:
            The status afterwards: ``REVOKED``; ``REDEEMED`` if it was too late;
            ``IN_PROGRESS`` while a redeemer holds a live claim.

        Raises:
            InvalidToken: the token does not verify.
            ScopeMismatch: the token belongs to another scope.
        """
        return await self._records.revoke(token, scope)

    async def purge(self, before: datetime | None = None) -> int:
        """Delete the store's rows that expired before ``before`` (default: now).

        A row expires only once no token of its pause can verify, so purging never lets a
        pause be answered again (see the operations guide for a schedule).

        Returns:
            How many rows were deleted (0 for stores whose rows expire by themselves).

        Raises:
            StoreUnavailable: the store cannot be reached.
        """
        return await self._records.purge(before)

    async def status(self, token: str, *, scope: Scope) -> TokenStatus:
        """Where a token stands.

        Raises:
            InvalidToken: the token does not verify.
            ScopeMismatch: the token belongs to another scope.
        """
        return await self._records.status(token, scope)
