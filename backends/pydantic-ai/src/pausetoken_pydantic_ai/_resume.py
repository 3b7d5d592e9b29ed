"""``mint_approvals`` after a run paused, and ``resume`` that answers the pause exactly once."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import attrs
from pydantic_ai.conversation_store import ConversationConflict
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import FunctionToolset

from pausetoken.exceptions import (
    ConfigurationError,
    InvalidResponse,
    RedemptionInProgress,
    StaleToken,
)
from pausetoken.plugins import fingerprint
from pausetoken_pydantic_ai._guard import MARKER, ApprovedArgs
from pausetoken_pydantic_ai._kinds import (
    TOOL_APPROVAL,
    args_digest,
    checked_args,
    checking_edits_with,
)
from pausetoken_pydantic_ai._reader import ConversationCheckpoints, approval_value

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import timedelta

    from pydantic_ai.agent import AbstractAgent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.run import AgentRunResult

    from pausetoken import InterruptEvent, PauseTokens, Redemption, Scope
    from pausetoken_pydantic_ai._kinds import ToolApproval

__all__ = ["Resumed", "mint_approvals", "resume"]

logger = logging.getLogger("pausetoken.pydantic_ai")


@attrs.frozen(repr=False)
class Resumed:
    """What `resume()` returns, in the same shape for a fresh answer and a retry.

    Attributes:
        result: The resumed run's result (already saved to the conversation store);
            ``None`` for an idempotent retry, which never hands out later state.
        replayed: ``True`` for an idempotent retry of answers already committed.
        requests: The tool calls the run waits on now (mint tokens for them with
            `mint_approvals()`); ``None`` when it does not wait, or for a retry.
    """

    result: AgentRunResult[Any] | None
    replayed: bool
    requests: DeferredToolRequests | None = None

    def __repr__(self) -> str:
        waiting = 0 if self.requests is None else len(self.requests.approvals)
        return f"Resumed(replayed={self.replayed}, waiting_approvals={waiting})"


def _reader_for(service: PauseTokens) -> ConversationCheckpoints:
    reader = service.checkpoints
    if not isinstance(reader, ConversationCheckpoints):
        msg = (
            "the service must read the conversation store: build it with "
            "checkpoints=ConversationCheckpoints(store)"
        )
        raise ConfigurationError(msg)
    return reader


async def mint_approvals(
    service: PauseTokens,
    conversation_id: str,
    *,
    scope: Scope,
    run_id: str | None = None,
    ttl: timedelta | None = None,
    principal: str | None = None,
) -> list[InterruptEvent[ToolApproval]]:
    """Mint one token per tool call a saved, paused conversation waits to have approved.

    Call it after the run ended with ``DeferredToolRequests`` and was saved
    (``await store.save(result)``). Each token binds the conversation, the stored model
    response that made the calls, the tool call id and the hash of the tool name, call id
    and validated arguments; the event's payload is what to show the approver.

    Args:
        service: The [`PauseTokens`][pausetoken.PauseTokens] service; its reader must be a
            [`ConversationCheckpoints`][pausetoken_pydantic_ai.ConversationCheckpoints] and
            [`TOOL_APPROVAL`][pausetoken_pydantic_ai.TOOL_APPROVAL] registered on it.
        conversation_id: The saved conversation.
        scope: Who the pause belongs to.
        run_id: The run id the tokens carry (default: the conversation id).
        ttl: Token lifetime (default: the service's).
        principal: The only principal allowed to answer, if any.

    Returns:
        One event per approval, in the order Pydantic AI lists them.

    Raises:
        ConfigurationError: the service does not read a conversation store.
        StaleToken: the conversation does not wait on tool calls.
        CheckpointNotFound, CheckpointLost: the conversation is unknown.
        UnsupportedPayload: no validated arguments were recorded for a call.
        UnknownInterrupt: ``TOOL_APPROVAL`` is not registered on the service.
    """
    reader = _reader_for(service)
    paused = await reader.paused(conversation_id)
    events: list[InterruptEvent[ToolApproval]] = []
    for call in paused.requests.approvals:
        value = approval_value(paused, call.tool_call_id)
        events.append(
            await service.mint(
                TOOL_APPROVAL,
                value,
                scope=scope,
                thread_id=conversation_id,
                run_id=run_id or conversation_id,
                interrupt_id=call.tool_call_id,
                checkpoint_id=paused.response_id,
                tool_call_id=call.tool_call_id,
                ttl=ttl,
                principal=principal,
            )
        )
    return events


def tool_validators(agent: AbstractAgent[Any, Any]) -> dict[str, Any]:
    """The argument validators of an agent's function tools, by tool name."""
    found: dict[str, Any] = {}
    pending: list[Any] = list(agent.toolsets)
    while pending:
        toolset = pending.pop()
        if isinstance(toolset, FunctionToolset):
            for name, tool in toolset.tools.items():
                found.setdefault(name, tool.function_schema.validator)
        wrapped = getattr(toolset, "wrapped", None)
        if wrapped is not None:
            pending.append(wrapped)
        pending.extend(getattr(toolset, "toolsets", ()) or ())
    return found


async def resume(
    service: PauseTokens,
    agent: AbstractAgent[Any, Any],
    answers: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    scope: Scope,
    principal: str | None = None,
    **run_options: Any,
) -> Resumed:
    """Redeem the answers to a paused run's approvals and resume it, exactly once.

    Pydantic AI resumes a paused run with results for all of its deferred calls at once, so
    ``answers`` holds one ``(token, decision)`` per approval the run waits on, each token
    from `mint_approvals()`. Everything that can be refused is refused before any tool runs:

    1. every token verifies and names the same pause, and every approval is answered
       (before anything is claimed);
    2. each token is redeemed (signature, scope, principal, the decision's shape, an edit's
       arguments against the tool's own schema, the call still waiting, the validated and
       the requested arguments in the stored conversation unchanged) and claimed;
    3. the conversation is loaded and saved unchanged (its revision fences off another
       worker resuming it at the same time), then read again: it must still wait at this
       pause, so a worker taking over a claim whose commit went unconfirmed stops here;
    4. the agent runs with ``DeferredToolResults`` and an
       [`ApprovedArgs`][pausetoken_pydantic_ai.ApprovedArgs] capability that re-checks each
       approved call's arguments right before its tool runs;
    5. the result is saved to the store, then every claim is committed. If anything raises
       before, the claims are released and the error propagates.

    A retry of answers already committed does not run the agent: ``replayed=True``.

    Args:
        service: The service; its reader is a ``ConversationCheckpoints`` over the store the
            run is saved in.
        agent: The agent whose run paused.
        answers: ``(token, decision)`` per approval; a decision is ``{"type": "approve"}``,
            ``{"type": "edit", "edited_action": {"name": tool, "args": {...}}}`` or
            ``{"type": "reject", "message": "..."}``.
        scope: The caller's scope.
        principal: Who answers; required when the tokens are bound to a principal.
        **run_options: Passed to ``agent.run`` (``deps``, ``usage_limits``...); not
            ``conversation``, ``message_history`` or ``deferred_tool_results``.

    Returns:
        The run's result and what it waits on now, or a replay.

    Raises:
        ConfigurationError: the service reads no conversation store, or ``run_options``
            addresses the conversation.
        InvalidResponse: a decision is malformed, an edit does not fit the tool's schema,
            the answers do not cover every approval of the pause, or they name two pauses.
        PayloadMismatch: the stored arguments, or those a tool was about to receive, are
            not the approved ones (the tool does not run).
        RedemptionInProgress: another worker resumes this conversation or holds a claim.
        StaleToken: the run moved on without these answers.
        PauseTokenError: any refusal of [`redeem()`][pausetoken.PauseTokens.redeem].
        Exception: whatever the run raised (the claims are released).
    """
    reader = _reader_for(service)
    addressed = sorted(
        {"conversation", "message_history", "deferred_tool_results"} & run_options.keys()
    )
    if addressed:
        msg = f"resume() takes the conversation from the tokens; do not pass {', '.join(addressed)}"
        raise ConfigurationError(msg)
    thread_id, checkpoint_id, ids = await _one_whole_pause(service, reader, answers)
    validators = tool_validators(agent)
    async with AsyncExitStack() as stack:
        stack.enter_context(checking_edits_with(validators))
        redeemed: list[Redemption[ToolApproval, dict[str, Any]]] = []
        for token, decision in answers:
            context = service.redeem(
                token, decision, scope=scope, principal=principal, expect=TOOL_APPROVAL
            )
            redeemed.append(await stack.enter_async_context(context))
        if all(r.replayed for r in redeemed):
            logger.info(
                "idempotent retry: run not resumed again",
                extra={"jti": fingerprint(redeemed[0].claims.jti)},
            )
            return Resumed(None, replayed=True)
        if any(r.replayed for r in redeemed):
            msg = "some of these approvals were already answered; the run has moved on"
            raise StaleToken(msg)
        conversation = await _fenced(reader, thread_id, checkpoint_id, ids)
        results, approved = _results(redeemed)
        run = agent.run(
            conversation=conversation,
            deferred_tool_results=results,
            capabilities=[ApprovedArgs(approved)],
            **run_options,
        )
        for redemption in redeemed:
            lease = redemption.lease
            assert lease is not None  # noqa: S101 - a fresh redemption holds a claim
            run = lease.run(run)
        result: AgentRunResult[Any] = await run
        try:
            await reader.store.save(result)
        except ConversationConflict as exc:  # pragma: no cover - the fence excludes it
            msg = "the conversation was saved by another worker while this run ran"
            raise RedemptionInProgress(msg) from exc
    output = result.output
    return Resumed(
        result,
        replayed=False,
        requests=output if isinstance(output, DeferredToolRequests) else None,
    )


async def _one_whole_pause(
    service: PauseTokens,
    reader: ConversationCheckpoints,
    answers: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[str, str, set[str]]:
    """Before anything is claimed: the tokens verify, name one pause and answer all of it.

    Returns:
        The conversation id, the paused response's entry id and the answered call ids.

    Raises:
        InvalidToken, TokenExpired: a token does not verify.
        InvalidResponse: no answers, answers for two pauses or twice for one call, or an
            approval of the pause left unanswered.
    """
    if not answers:
        msg = "no answers: give one (token, decision) per approval the run waits on"
        raise InvalidResponse(msg, field="$")
    claims = [service.verify(token) for token, _ in answers]
    pauses = {(c.thread_id, c.checkpoint_id) for c in claims}
    if len(pauses) != 1:
        msg = "the answers belong to different pauses; resume one pause at a time"
        raise InvalidResponse(msg, field="$")
    ids = {c.interrupt_id for c in claims}
    if len(ids) != len(claims):
        msg = "two answers are for the same tool call"
        raise InvalidResponse(msg, field="$")
    thread_id, checkpoint_id = pauses.pop()
    try:
        requests = (await reader.paused(thread_id)).requests
    except StaleToken:
        # A retry after the run moved on: redeem() answers it (replay) or refuses it.
        return thread_id, checkpoint_id, ids
    missing = len({c.tool_call_id for c in requests.approvals} - ids)
    if missing:
        msg = f"every approval of the pause needs an answer: {missing} missing"
        raise InvalidResponse(msg, field="$")
    return thread_id, checkpoint_id, ids


async def _fenced(
    reader: ConversationCheckpoints, thread_id: str, checkpoint_id: str, ids: set[str]
) -> Conversation:
    """After the claims: load the conversation and fence it off, still at the pause.

    Saving the loaded conversation unchanged advances its revision, or fails if another
    worker saved it since: two workers never run its tools together. Read again after the
    fence, it must still wait at the tokens' response for exactly the answered calls.

    Raises:
        RedemptionInProgress: another worker saved the conversation meanwhile.
        StaleToken: the conversation moved on (another worker resumed it).
        CheckpointNotFound, CheckpointLost: the conversation is gone.
    """
    store = reader.store
    conversation = await store.load(thread_id)
    if conversation is None:
        await reader.paused(thread_id)  # raises for an unknown conversation
        msg = "the conversation is gone"
        raise StaleToken(msg)
    try:
        await store.save(conversation)
    except ConversationConflict as exc:
        msg = "another worker is resuming this conversation"
        raise RedemptionInProgress(msg) from exc
    paused = await reader.paused(thread_id)
    if (
        paused.record.revision != conversation.revision
        or paused.response_id != checkpoint_id
        or {call.tool_call_id for call in paused.requests.approvals} != ids
    ):
        msg = "the conversation moved on before it could be resumed"
        raise StaleToken(msg)
    return conversation


def _results(
    redeemed: Sequence[Redemption[ToolApproval, dict[str, Any]]],
) -> tuple[DeferredToolResults, dict[str, tuple[str, str]]]:
    """The results to resume with, and what each approval approved.

    Returns:
        The ``DeferredToolResults``, and per approved call its tool name and argument digest.
    """
    results = DeferredToolResults()
    approved: dict[str, tuple[str, str]] = {}
    for redemption in redeemed:
        payload, decision = redemption.payload, redemption.response
        assert payload is not None  # noqa: S101 - a fresh redemption carries its payload
        call_id = payload.tool_call_id
        kind = decision["type"]
        if kind == "reject":
            message = decision.get("message")
            results.approvals[call_id] = ToolDenied(message) if message else ToolDenied()
            continue
        if kind == "edit":
            edited = dict(decision["edited_action"]["args"])
            digest = args_digest(checked_args(payload.tool_name, edited))
            results.approvals[call_id] = ToolApproved(override_args=edited)
        else:
            digest = args_digest(payload.args)
            results.approvals[call_id] = ToolApproved()
        approved[call_id] = (payload.tool_name, digest)
        results.metadata[call_id] = {
            MARKER: {"tool_name": payload.tool_name, "args_digest": digest}
        }
    return results, approved
