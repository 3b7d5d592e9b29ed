"""``AgUi``: interrupts out with a token, resume entries back, each answered exactly once."""

from __future__ import annotations

import hmac
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, cast

import attrs
from ag_ui.core import (
    Interrupt,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
)

from pausetoken.exceptions import (
    ConfigurationError,
    InvalidInterrupt,
    InvalidMintRequest,
    InvalidResponse,
    PauseTokenError,
    RedemptionInProgress,
    StaleToken,
    UnknownInterrupt,
)
from pausetoken.plugins import fingerprint
from pausetoken_agui._errors import (
    METADATA_KEY,
    ProofForAnotherInterrupt,
    ProofForAnotherThread,
    ProofRefused,
    run_error,
)
from pausetoken_agui._reader import ThreadCheckpoints
from pausetoken_agui._threads import (
    KEPT_OUTCOMES,
    Answered,
    ThreadState,
    Waiting,
    new_checkpoint_id,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Sequence
    from datetime import timedelta

    from ag_ui.core import BaseEvent, ResumeEntry, RunAgentInput

    from pausetoken import Claims, InterruptEvent, Lease, PauseTokens, Redemption, Scope
    from pausetoken_agui._kinds import Resumable, Status
    from pausetoken_agui._threads import ThreadStates

__all__ = ["AgUi", "Answer", "Ask", "Outcome", "Resumption", "proof_of", "to_interrupt"]

logger = logging.getLogger("pausetoken.agui")

P = TypeVar("P")
R = TypeVar("R")


@attrs.frozen
class Ask(Generic[P]):
    """One interrupt a run raises: the kind, the payload shown, and AG-UI's fields.

    Attributes:
        kind: The `Resumable` kind.
        payload: What the person is shown (the token binds its hash).
        reason: AG-UI's ``Interrupt.reason`` (an open string).
        message: AG-UI's ``Interrupt.message``: the prompt for whoever answers.
        id: The interrupt's id (default: a new UUID).
        tool_call_id: The tool call the interrupt concerns, when it is a tool approval.
        principal: The only principal allowed to answer, if any.
    """

    kind: Resumable[P, Any]
    payload: P = attrs.field(repr=False)
    reason: str = "input_required"
    message: str | None = attrs.field(default=None, repr=False)
    id: str = attrs.field(factory=lambda: str(uuid.uuid4()))
    tool_call_id: str | None = None
    principal: str | None = attrs.field(default=None, repr=False)


@attrs.frozen
class Outcome:
    """What the agent returns from a run: its result, and what it asks next.

    Attributes:
        result: AG-UI's ``RunFinishedEvent.result`` (any JSON value). It is stored with
            the answers it followed, and an idempotent retry gets it back.
        asks: The interrupts the run ends with; empty when it completed.
    """

    result: Any = attrs.field(default=None, repr=False)
    asks: Sequence[Ask[Any]] = ()


@attrs.frozen
class Answer(Generic[P, R]):
    """One redeemed resume entry.

    Attributes:
        interrupt_id: The interrupt answered.
        status: ``"resolved"`` or ``"cancelled"``.
        payload: What the person was shown, read into the kind's payload type.
        response: The answer, read into the kind's response type; ``None`` when cancelled.
        tool_call_id: The tool call the interrupt concerned, if any.
    """

    interrupt_id: str
    status: Status
    payload: P = attrs.field(repr=False)
    response: R | None = attrs.field(repr=False)
    tool_call_id: str | None = None
    _name: str = attrs.field(default="", repr=False, alias="name")


@attrs.frozen
class Resumption:
    """What the agent receives for a run: the input, and the answers it resumes with.

    Attributes:
        input: The ``RunAgentInput`` of this run.
        answers: The redeemed resume entries (empty for a run that resumes nothing).
        leases: The claims the answers hold while the agent runs.
    """

    input: RunAgentInput = attrs.field(repr=False)
    answers: tuple[Answer[Any, Any], ...] = ()
    leases: tuple[Lease, ...] = attrs.field(default=(), repr=False)

    def answer(self, kind: Resumable[P, R], interrupt_id: str | None = None) -> Answer[P, R]:
        """The answer to the interrupt of ``kind`` (with that id, when given), typed.

        Raises:
            LookupError: no such answer, or several of the kind and no ``interrupt_id``.
        """
        found = [
            a
            for a in self.answers
            if a._name == kind.name and interrupt_id in (None, a.interrupt_id)  # noqa: SLF001
        ]
        if len(found) != 1:
            msg = f"{len(found)} answers of {kind.name!r} match; name the interrupt id"
            raise LookupError(msg)
        return cast("Answer[P, R]", found[0])

    def ensure_held(self) -> None:
        """Call before an irreversible side effect.

        Raises:
            LeaseLost: a claim was lost; another worker may be resuming the pause.
        """
        for lease in self.leases:
            lease.ensure_held()


#: The agent an `AgUi` runs: an async function of the `Resumption`.
Agent: TypeAlias = Callable[[Resumption], Awaitable[Outcome]]


def proof_of(entry: ResumeEntry) -> str:
    """The token a resume entry carries in ``metadata["pausetoken"]["token"]``.

    Raises:
        ProofRefused: the entry carries none (code ``agui_proof_missing``).
    """
    envelope = (entry.metadata or {}).get(METADATA_KEY)
    token = envelope.get("token") if isinstance(envelope, dict) else None
    if not isinstance(token, str) or not token:
        msg = f'the resume entry carries no token in metadata["{METADATA_KEY}"]["token"]'
        raise ProofRefused(msg)
    return token


def to_interrupt(
    event: InterruptEvent[P],
    kind: Resumable[P, Any],
    *,
    reason: str = "input_required",
    message: str | None = None,
    tool_call_id: str | None = None,
) -> Interrupt:
    """The AG-UI ``Interrupt`` for a minted pause.

    ``responseSchema`` comes from the kind (`Resumable.schema_for`), ``expiresAt`` is the
    token's expiry in ISO 8601 with its zone, and the token travels in
    ``metadata["pausetoken"]["token"]``: the client sends ``metadata["pausetoken"]`` back
    unchanged in the resume entry that answers. Nothing else in the interrupt is secret.

    Args:
        event: What `PauseTokens.mint` returned for ``kind.interrupt``.
        kind: The kind it was minted for.
        reason: AG-UI's ``reason``.
        message: AG-UI's ``message``.
        tool_call_id: The tool call the interrupt concerns.
    """
    return Interrupt(
        id=event.interrupt_id,
        reason=reason,
        message=message,
        tool_call_id=tool_call_id,
        response_schema=kind.schema_for(event.payload),
        expires_at=event.expires_at.isoformat(),
        metadata={METADATA_KEY: {"token": event.token}},
    )


class AgUi:
    """pausetoken for an AG-UI agent server: interrupts with tokens, resumes exactly once.

    The service must read the threads' states:
    ``PauseTokens(..., checkpoints=ThreadCheckpoints(states))``. Building an ``AgUi``
    registers every kind's `Resumable.interrupt` on the service.

    Args:
        service: The [`PauseTokens`][pausetoken.PauseTokens] service.
        kinds: The kinds of pause the agent raises.
        ttl: The tokens' lifetime (default: the service's).

    Raises:
        ConfigurationError: the service does not read thread states, or two kinds share a
            name.
    """

    def __init__(
        self,
        service: PauseTokens,
        kinds: Iterable[Resumable[Any, Any]],
        *,
        ttl: timedelta | None = None,
    ) -> None:
        """Create the adapter; see the class docstring."""
        reader = service.checkpoints
        if not isinstance(reader, ThreadCheckpoints):
            msg = (
                "the service must read the threads' states: build it with "
                "checkpoints=ThreadCheckpoints(states)"
            )
            raise ConfigurationError(msg)
        self.service = service
        self.reader = reader
        self.ttl = ttl
        self._kinds: dict[str, Resumable[Any, Any]] = {}
        for kind in kinds:
            if kind.name in self._kinds:
                msg = f"two kinds are named {kind.name!r}"
                raise InvalidInterrupt(msg, code=InvalidInterrupt.DUPLICATE_INTERRUPT)
            service.register(kind.interrupt)
            self._kinds[kind.name] = kind

    @property
    def states(self) -> ThreadStates:
        """The thread state store the service's reader reads."""
        return self.reader.states

    # -- pausing ---------------------------------------------------------------------------

    async def pause(
        self,
        thread_id: str,
        run_id: str,
        asks: Sequence[Ask[Any]],
        *,
        scope: Scope,
        result: Any = None,
    ) -> RunFinishedEvent:
        """End a run with interrupts: store what the thread waits on, mint a token for each.

        The thread moves to a new checkpoint holding the asks (any interrupts it waited on
        before are abandoned: their tokens are refused as stale from now on).

        Args:
            thread_id: AG-UI's ``threadId``.
            run_id: AG-UI's ``runId`` of the run that pauses.
            asks: The interrupts, at least one.
            scope: Who the pause belongs to.
            result: The run's result, if it has one.

        Returns:
            The ``RunFinishedEvent`` whose interrupt outcome carries one ``Interrupt`` per
            ask, each with its token.

        Raises:
            InvalidMintRequest: no asks, or two with one id.
            UnknownInterrupt: an ask's kind was not given to this adapter.
            UnsupportedPayload: a payload does not fit its kind.
            RedemptionInProgress: another worker moved the thread on meanwhile.
            StoreUnavailable: the thread state store cannot be reached.
        """
        current = await self.states.load(thread_id)
        waiting = self._waiting(asks)
        state = ThreadState(
            new_checkpoint_id(),
            run_id,
            waiting=waiting,
            answered=() if current is None else current.answered,
        )
        replaces = None if current is None else current.checkpoint_id
        if not await self.states.save(thread_id, state, replaces=replaces):
            msg = "another worker moved the thread on while this run paused"
            raise RedemptionInProgress(msg)
        interrupts = await self._mint(thread_id, run_id, state, scope=scope)
        return _finished(thread_id, run_id, result, interrupts)

    def _waiting(self, asks: Sequence[Ask[Any]]) -> tuple[Waiting, ...]:
        if not asks:
            msg = "a run pauses with at least one interrupt"
            raise InvalidMintRequest(msg)
        if len({ask.id for ask in asks}) != len(asks):
            msg = "two interrupts of one pause share an id"
            raise InvalidMintRequest(msg)
        waiting: list[Waiting] = []
        for ask in asks:
            kind = self._kinds.get(ask.kind.name)
            if kind is None or kind != ask.kind:
                msg = f"the kind {ask.kind.name!r} was not given to this adapter"
                raise UnknownInterrupt(msg)
            interrupt = kind.interrupt
            value = interrupt.to_json(interrupt.structure_payload(ask.payload))
            waiting.append(
                Waiting(
                    ask.id,
                    kind.name,
                    value,
                    ask.reason,
                    ask.message,
                    ask.tool_call_id,
                    ask.principal,
                )
            )
        return tuple(waiting)

    async def _mint(
        self, thread_id: str, run_id: str, state: ThreadState, *, scope: Scope
    ) -> list[Interrupt]:
        interrupts: list[Interrupt] = []
        for waiting in state.waiting:
            kind = self._kinds[waiting.name]
            event = await self.service.mint(
                kind.interrupt,
                waiting.value,
                scope=scope,
                thread_id=thread_id,
                run_id=run_id,
                interrupt_id=waiting.interrupt_id,
                checkpoint_id=state.checkpoint_id,
                tool_call_id=waiting.tool_call_id,
                ttl=self.ttl,
                principal=waiting.principal,
            )
            interrupts.append(
                to_interrupt(
                    event,
                    kind,
                    reason=waiting.reason,
                    message=waiting.message,
                    tool_call_id=waiting.tool_call_id,
                )
            )
        return interrupts

    # -- running ---------------------------------------------------------------------------

    async def run(
        self,
        run_input: RunAgentInput,
        agent: Agent,
        *,
        scope: Scope,
        principal: str | None = None,
    ) -> RunFinishedEvent:
        """Run the agent for one AG-UI request: resume it if the input answers interrupts.

        With resume entries, `resume()`; without, the agent runs with no answers and its
        `Outcome` either pauses the thread (`pause()`) or completes the run.

        Returns:
            The ``RunFinishedEvent`` that ends the run.

        Raises:
            PauseTokenError: any refusal of `resume()` or `pause()`.
            Exception: whatever the agent raised.
        """
        if run_input.resume:
            return await self.resume(run_input, agent, scope=scope, principal=principal)
        outcome = await agent(Resumption(run_input))
        if outcome.asks:
            return await self.pause(
                run_input.thread_id,
                run_input.run_id,
                outcome.asks,
                scope=scope,
                result=outcome.result,
            )
        return _finished(run_input.thread_id, run_input.run_id, outcome.result, [])

    async def stream(
        self,
        run_input: RunAgentInput,
        agent: Agent,
        *,
        scope: Scope,
        principal: str | None = None,
    ) -> AsyncIterator[BaseEvent]:
        """The run's events: ``RUN_STARTED``, then ``RUN_FINISHED``, or ``RUN_ERROR``.

        A pausetoken refusal becomes a ``RunErrorEvent`` (`run_error()`) with its stable
        code and no secret; any other exception propagates (the server logs it).
        """
        yield RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        try:
            finished = await self.run(run_input, agent, scope=scope, principal=principal)
        except PauseTokenError as exc:
            logger.info("run refused", extra={"code": exc.code})
            yield run_error(exc)
            return
        yield finished

    # -- resuming --------------------------------------------------------------------------

    async def resume(
        self,
        run_input: RunAgentInput,
        agent: Agent,
        *,
        scope: Scope,
        principal: str | None = None,
    ) -> RunFinishedEvent:
        """Redeem the input's resume entries and run the agent on them, exactly once.

        Everything that can be refused is refused before the agent runs:

        1. each entry carries a token in ``metadata["pausetoken"]["token"]`` that verifies,
           was minted for this thread and for the entry's ``interruptId``; the entries
           answer one pause, each interrupt once, and every interrupt of it (before
           anything is claimed);
        2. each entry's ``(status, payload)`` is redeemed: the scope, the principal, the
           payload read into the kind's response type and its validator, the thread still
           at the token's checkpoint with the interrupt pending and its payload unchanged,
           then the claim;
        3. the thread moves to a new checkpoint (compare and set), so any other token of
           the pause, and a worker taking over a claim whose commit went unconfirmed, is
           refused as stale from now on;
        4. the agent runs under the claims' leases (cancelled if one is lost);
        5. the thread's new state (what the run asks next, and this outcome for retries)
           replaces the fence, tokens are minted for the new asks, and the claims commit.
           If the agent raises, the thread is put back at the answered checkpoint, the
           claims are released and the error propagates: the same answers can be sent
           again.

        A retry of answers already committed does not run the agent: it gets the stored
        outcome (the result, and the interrupts the run ended with, with new tokens while
        the thread still waits on them), with ``metadata["pausetoken"]["replayed"]`` true.
        Another answer to a committed interrupt is ``AlreadyRedeemed``.

        Args:
            run_input: The AG-UI request; its ``resume`` holds the entries.
            agent: The agent: an async function of the `Resumption` returning an `Outcome`.
            scope: The caller's scope (from its authenticated identity).
            principal: Who answers; required when the tokens are bound to a principal.

        Returns:
            The ``RunFinishedEvent`` that ends the run.

        Raises:
            ProofRefused: an entry carries no token, or one for another interrupt or thread.
            InvalidToken, TokenExpired, ScopeMismatch, PrincipalMismatch: a token is refused.
            UnknownInterrupt: a token is for a kind this adapter was not given.
            InvalidResponse: an entry's status or payload does not fit; the entries answer
                two pauses, one interrupt twice, or leave one unanswered.
            StaleToken: the thread moved on without these answers (or their outcome is no
                longer kept).
            PayloadMismatch: the stored payload is not the one the token was minted for.
            AlreadyRedeemed: an interrupt was already answered otherwise.
            RedemptionInProgress: another worker holds a claim on an interrupt.
            LeaseLost, CommitUnconfirmed: see [`redeem()`][pausetoken.PauseTokens.redeem].
            Exception: whatever the agent raised (the claims are released).
        """
        entries = list(run_input.resume or ())
        checked = await self._one_whole_pause(run_input.thread_id, entries)
        checkpoint_id = checked[0].claims.checkpoint_id
        async with AsyncExitStack() as stack:
            redeemed: list[tuple[Resumable[Any, Any], Redemption[Any, dict[str, Any]]]] = []
            envelopes = [c.kind.envelope(c.entry.status, c.entry.payload) for c in checked]
            for entry, envelope in zip(checked, envelopes, strict=True):
                context = self.service.redeem(
                    entry.token,
                    envelope,
                    scope=scope,
                    principal=principal,
                    expect=entry.kind.interrupt,
                )
                redeemed.append((entry.kind, await stack.enter_async_context(context)))
            if all(r.replayed for _, r in redeemed):
                logger.info(
                    "idempotent retry: agent not run again",
                    extra={"jti": fingerprint(redeemed[0][1].claims.jti)},
                )
                return await self._replayed(run_input, checkpoint_id, scope=scope)
            if any(r.replayed for _, r in redeemed):
                msg = "some of these interrupts were already answered; the thread has moved on"
                raise StaleToken(msg)
            answered = await self._fence(run_input, checkpoint_id)
            resumption = Resumption(
                run_input,
                tuple(_answer(kind, r) for kind, r in redeemed),
                tuple(r.lease for _, r in redeemed if r.lease is not None),
            )
            outcome = await self._run_fenced(run_input, agent, resumption, answered)
            return await self._moved_on(run_input, answered, outcome, scope=scope)
        raise AssertionError  # pragma: no cover - the block always returns or raises

    async def _one_whole_pause(
        self, thread_id: str, entries: Sequence[ResumeEntry]
    ) -> list[_Entry]:
        """Before anything is claimed: the proofs verify, are the entries' own, one pause.

        Raises:
            InvalidResponse: no entries, two pauses, one interrupt twice, one left out.
            ProofRefused, InvalidToken, TokenExpired, UnknownInterrupt: see `resume()`.
        """
        if not entries:
            msg = "the run input has no resume entries"
            raise InvalidResponse(msg, field="$.resume")
        checked = [self._verified(thread_id, entry) for entry in entries]
        if len({c.claims.checkpoint_id for c in checked}) != 1:
            msg = "the resume entries answer different pauses; answer one pause per run"
            raise InvalidResponse(msg, field="$.resume")
        ids = {c.claims.interrupt_id for c in checked}
        if len(ids) != len(checked):
            msg = "two resume entries answer one interrupt"
            raise InvalidResponse(msg, field="$.resume")
        state = await self.states.load(thread_id)
        checkpoint_id = checked[0].claims.checkpoint_id
        if state is not None and state.resuming is not None:
            if state.resuming.checkpoint_id == checkpoint_id:
                msg = "another worker is running the agent on answers to this pause"
                raise RedemptionInProgress(msg)
        elif state is not None and state.checkpoint_id == checkpoint_id:
            missing = len({w.interrupt_id for w in state.waiting} - ids)
            if missing:
                msg = f"every interrupt of the pause needs a resume entry: {missing} missing"
                raise InvalidResponse(msg, field="$.resume")
        return checked

    def _verified(self, thread_id: str, entry: ResumeEntry) -> _Entry:
        """An entry's proof: it verifies, and names this thread and the entry's interrupt."""
        token = proof_of(entry)
        claims = self.service.verify(token)
        if not hmac.compare_digest(claims.thread_id.encode(), thread_id.encode()):
            raise ProofForAnotherThread
        if not hmac.compare_digest(claims.interrupt_id.encode(), entry.interrupt_id.encode()):
            raise ProofForAnotherInterrupt
        kind = self._kinds.get(claims.name)
        if kind is None:
            msg = "the token is for a kind of interrupt this adapter was not given"
            raise UnknownInterrupt(msg)
        return _Entry(entry, token, claims, kind)

    async def _fence(self, run_input: RunAgentInput, checkpoint_id: str) -> ThreadState:
        """Under the claims: move the thread off the answered checkpoint before the agent runs.

        Returns:
            The state the thread was in (kept in the fence, to restore on failure).

        Raises:
            StaleToken: the thread moved on meanwhile.
        """
        state = await self.states.load(run_input.thread_id)
        if state is None or state.checkpoint_id != checkpoint_id:
            msg = "the thread moved on before it could be resumed"
            raise StaleToken(msg)
        fence = ThreadState(
            new_checkpoint_id(), run_input.run_id, answered=state.answered, resuming=state
        )
        if not await self.states.save(run_input.thread_id, fence, replaces=checkpoint_id):
            msg = "the thread moved on before it could be resumed"
            raise StaleToken(msg)
        return state

    async def _run_fenced(
        self,
        run_input: RunAgentInput,
        agent: Agent,
        resumption: Resumption,
        answered: ThreadState,
    ) -> Outcome:
        """The agent under every lease; on failure the thread goes back to the answered state."""
        run: Awaitable[Outcome] = agent(resumption)
        for lease in resumption.leases:
            run = lease.run(run)
        try:
            return await run
        except BaseException:
            await self._restore(run_input.thread_id, answered)
            raise

    async def _restore(self, thread_id: str, answered: ThreadState) -> None:
        state = await self.states.load(thread_id)
        if state is None or state.resuming is None:
            return
        try:
            restored = await self.states.save(thread_id, answered, replaces=state.checkpoint_id)
        except PauseTokenError:
            restored = False
        if not restored:
            # The thread stays fenced: its answers are refused as stale, never run twice.
            logger.error("thread left fenced after a failed run: its answers are refused")

    async def _moved_on(
        self, run_input: RunAgentInput, answered: ThreadState, outcome: Outcome, *, scope: Scope
    ) -> RunFinishedEvent:
        """After the agent: the new state replaces the fence, then the new tokens are minted.

        Raises:
            StaleToken: the fence was replaced while the agent ran.
        """
        thread_id, run_id = run_input.thread_id, run_input.run_id
        fence = await self.states.load(thread_id)
        waiting = self._waiting(outcome.asks) if outcome.asks else ()
        next_id = new_checkpoint_id()
        stored = Answered(answered.checkpoint_id, next_id, run_id, outcome.result, waiting)
        kept = (*(fence.answered if fence is not None else ()), stored)[-KEPT_OUTCOMES:]
        state = ThreadState(next_id, run_id, waiting=waiting, answered=kept)
        if (
            fence is None
            or fence.resuming is None
            or not await self.states.save(thread_id, state, replaces=fence.checkpoint_id)
        ):
            msg = "the thread was moved on by someone else while the resumed run ran"
            raise StaleToken(msg)
        interrupts = await self._mint(thread_id, run_id, state, scope=scope) if waiting else []
        return _finished(thread_id, run_id, outcome.result, interrupts)

    async def _replayed(
        self, run_input: RunAgentInput, checkpoint_id: str, *, scope: Scope
    ) -> RunFinishedEvent:
        """The stored outcome of answers already committed, with fresh tokens while pending.

        Raises:
            StaleToken: the thread no longer keeps that outcome.
        """
        thread_id = run_input.thread_id
        state = await self.states.load(thread_id)
        stored = None if state is None else state.outcome(checkpoint_id)
        if state is None or stored is None:
            msg = "these answers were committed, but their outcome is no longer kept"
            raise StaleToken(msg)
        if state.checkpoint_id == stored.next_checkpoint_id and stored.interrupts:
            interrupts = await self._mint(thread_id, stored.run_id, state, scope=scope)
        else:
            interrupts = [
                Interrupt(
                    id=w.interrupt_id,
                    reason=w.reason,
                    message=w.message,
                    tool_call_id=w.tool_call_id,
                )
                for w in stored.interrupts
            ]
        finished = _finished(thread_id, run_input.run_id, stored.result, interrupts)
        finished.metadata = {METADATA_KEY: {"replayed": True}}
        return finished


@attrs.frozen
class _Entry:
    """A resume entry whose proof verified and is its own."""

    entry: ResumeEntry = attrs.field(repr=False)
    token: str = attrs.field(repr=False)
    claims: Claims = attrs.field(repr=False)
    kind: Resumable[Any, Any]


def _answer(kind: Resumable[P, R], redemption: Redemption[Any, dict[str, Any]]) -> Answer[P, R]:
    envelope = redemption.response
    payload = redemption.payload
    assert payload is not None  # noqa: S101 - a fresh redemption carries its payload
    return Answer(
        redemption.claims.interrupt_id,
        envelope["status"],
        payload,
        kind.answer_of(envelope),
        redemption.claims.tool_call_id,
        name=kind.name,
    )


def _finished(
    thread_id: str, run_id: str, result: Any, interrupts: Sequence[Interrupt]
) -> RunFinishedEvent:
    outcome = (
        RunFinishedInterruptOutcome(interrupts=list(interrupts))
        if interrupts
        else RunFinishedSuccessOutcome()
    )
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, result=result, outcome=outcome)
