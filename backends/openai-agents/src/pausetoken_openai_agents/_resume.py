"""``mint_pending`` after a run paused for approvals, ``resume`` that applies one exactly once."""

from __future__ import annotations

import hmac
import logging
from typing import TYPE_CHECKING, Any

import attrs
from agents import RunHooks, Runner

from pausetoken import hash_payload
from pausetoken.exceptions import (
    ConfigurationError,
    LeaseLost,
    PauseTokenError,
    PayloadMismatch,
    StaleToken,
)
from pausetoken.plugins import fingerprint
from pausetoken_openai_agents._reader import (
    TOOL_APPROVAL,
    AgentRunCheckpoints,
    Decision,
    ToolCall,
    find_approval,
    tool_call,
)
from pausetoken_openai_agents._states import state_digest

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import timedelta

    from agents import (
        Agent,
        ModelResponse,
        RunConfig,
        RunResult,
        RunState,
        Tool,
        ToolApprovalItem,
        TResponseInputItem,
    )
    from agents.run_context import AgentHookContext, RunContextWrapper

    from pausetoken import Claims, InterruptEvent, PauseTokens, Scope

__all__ = ["Resumed", "mint_pending", "resume"]

logger = logging.getLogger("pausetoken.openai_agents")


@attrs.frozen(repr=False)
class Resumed:
    """What `resume()` returns, in the same shape for a fresh decision and a retry.

    Attributes:
        output: The resumed run's ``final_output`` (``None`` while it waits for more
            approvals, and for an idempotent retry, which never returns later run data).
        replayed: ``True`` for a retry of a decision already applied.
        approvals: The tool calls the run waits at now (mint their tokens with
            `mint_pending()`); empty when it finished. Their arguments are left out of a
            retry's result.
    """

    output: Any
    replayed: bool
    approvals: tuple[ToolCall, ...] = ()

    def __repr__(self) -> str:
        calls = ", ".join(repr(call.call_id) for call in self.approvals)
        return f"Resumed(replayed={self.replayed}, approvals=[{calls}])"


class _Watch(RunHooks[Any]):
    """The application's run hooks, noting whether the approved call's tool started."""

    def __init__(self, call_id: str, inner: RunHooks[Any] | None) -> None:
        self.call_id = call_id
        self.inner = inner
        self.started = False

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(
        self, context: AgentHookContext[Any], agent: Agent[Any], output: Any
    ) -> None:
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]
    ) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        # A tool whose context names no call could be the approved one: counted as it.
        if getattr(context, "tool_call_id", self.call_id) == self.call_id:
            self.started = True
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
    ) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


async def _waiting(reader: AgentRunCheckpoints, run_id: str, context: Any) -> tuple[ToolCall, ...]:
    """The calls a run waits at now, without their arguments (for a retry's result)."""
    now = await reader.states.load(run_id)
    if now is None:
        return ()
    state = await reader.restore_text(now, context=context)
    return tuple(
        attrs.evolve(tool_call(item), arguments=None, arguments_sha256="")
        for item in state.get_interruptions()
    )


def _approved_item(
    text: str, state: RunState[Any, Any], claims: Claims, approved: ToolCall | None
) -> ToolApprovalItem:
    """Under the claim, the state read again: what is applied is what was approved.

    Raises:
        StaleToken: the run moved on, or the call no longer awaits approval.
        PayloadMismatch: the call's tool or argument text is not the approved one.
    """
    if not hmac.compare_digest(state_digest(text), claims.checkpoint_id):
        msg = "the run moved on while the decision was being checked"
        raise StaleToken(msg)
    item = find_approval(state, claims.interrupt_id)
    if item is None or approved is None:
        msg = "the tool call no longer awaits approval"
        raise StaleToken(msg)
    if item.name != approved.tool_name or not hmac.compare_digest(
        hash_payload(item.arguments or ""), approved.arguments_sha256
    ):
        raise PayloadMismatch
    return item


def _reader_for(service: PauseTokens) -> AgentRunCheckpoints:
    reader = service.checkpoints
    if not isinstance(reader, AgentRunCheckpoints):
        msg = (
            "the service must read the agent's run states: build it with "
            "checkpoints=AgentRunCheckpoints(agent, states)"
        )
        raise ConfigurationError(msg)
    service.register(TOOL_APPROVAL)
    return reader


async def mint_pending(
    service: PauseTokens,
    run_id: str,
    *,
    scope: Scope,
    result: RunResult | None = None,
    ttl: timedelta | None = None,
    principal: str | None = None,
) -> list[InterruptEvent[ToolCall]]:
    """Mint one token per tool call a run waits to have approved.

    With ``result`` (what ``Runner.run`` returned), its state is first stored under
    ``run_id`` (a new run: an id that already has a state is refused). Without it, the
    stored state is read: call it so after `resume()` returned with ``approvals``.

    Each token binds the run id, the digest of the stored state, the call id, the tool's
    name and the hash of its arguments.

    Args:
        service: The service; its reader must be an
            [`AgentRunCheckpoints`][pausetoken_openai_agents.AgentRunCheckpoints].
        run_id: The application's id for the run (the tokens' thread and run id).
        scope: Who the approvals belong to.
        result: A run that just returned, to store before minting.
        ttl: Token lifetime (default: the service's).
        principal: The only principal allowed to answer, if any.

    Returns:
        One event per approval, in the order the run lists them; empty when the run is
        not waiting for any.

    Raises:
        ConfigurationError: the service does not read run states, or ``run_id`` already
            has a stored state and ``result`` was given.
        CheckpointNotFound: no state is stored for ``run_id``.
        UnsupportedPayload: an approval has no call id or tool name.
        StoreUnavailable: the run state store cannot be reached.
    """
    reader = _reader_for(service)
    if result is not None:
        text = result.to_state().to_string()
        if not await reader.states.save(run_id, text, replaces=None):
            msg = "a state is already stored for this run id: give each run its own id"
            raise ConfigurationError(msg)
        state = await reader.restore_text(text)
    else:
        text, state = await reader.restore(run_id)
    digest = state_digest(text)
    calls = [tool_call(item) for item in state.get_interruptions()]
    return [
        await service.mint(
            TOOL_APPROVAL,
            call,
            scope=scope,
            thread_id=run_id,
            run_id=run_id,
            interrupt_id=call.call_id,
            checkpoint_id=digest,
            tool_call_id=call.call_id,
            ttl=ttl,
            principal=principal,
        )
        for call in calls
    ]


async def resume(
    service: PauseTokens,
    token: str,
    decision: Decision | Mapping[str, Any],
    *,
    scope: Scope,
    principal: str | None = None,
    context: Any = None,
    run_config: RunConfig | None = None,
    hooks: RunHooks[Any] | None = None,
) -> Resumed:
    """Redeem a token, apply its decision to the stored run state and resume, exactly once.

    Every check runs before anything changes and before any tool runs: the token (forged,
    expired, another scope or principal), the decision's shape, that the stored state is
    still the one the token was minted for and the call still awaits approval, and that
    the call's tool and arguments are those the token binds. Then the pause is claimed
    (one worker only); the state is read again and its digest and the call's argument
    digest are checked once more; ``approve`` or ``reject`` is applied; ``Runner.run``
    resumes (cancelled if the claim is lost); the new state replaces the old one only if
    the old one is still stored; and the claim is committed. A run moved on this way makes
    every other token of the old state stale, so a takeover after ``CommitUnconfirmed``
    is refused instead of running the tool again.

    When ``Runner.run`` raises before the approved tool started, the claim is released,
    the stored state is unchanged and the error propagates: the same decision can be sent
    again. When it raises after the tool started, the approval is used up (the claim is
    committed) and the error propagates, so that no retry runs the tool twice; the stored
    state, which the SDK does not return for a failed run, still shows the call pending.

    Args:
        service: The service; its reader must be an
            [`AgentRunCheckpoints`][pausetoken_openai_agents.AgentRunCheckpoints].
        token: A token from `mint_pending()`.
        decision: A [`Decision`][pausetoken_openai_agents.Decision] or data that
            structures into one (``{"approve": true}``).
        scope: The caller's scope.
        principal: Who answers; required when the token is bound to a principal.
        context: The run context, when it does not restore from the state as a mapping.
        run_config: Passed to ``Runner.run``.
        hooks: The application's run hooks; ``Runner.run`` gets them wrapped in hooks that
            note whether the approved tool started.

    Returns:
        The run's output, whether this was a retry, and the approvals it waits at now.

    Raises:
        InvalidToken, TokenExpired, ScopeMismatch, PrincipalMismatch: the token is refused.
        InvalidResponse: the decision does not fit `Decision`.
        StaleToken: the run moved on from the token's state, or the call was decided.
        PayloadMismatch: the stored call is not the one the token was minted for.
        AlreadyRedeemed: the approval was already decided otherwise.
        RedemptionInProgress: another worker holds the claim on this approval.
        LeaseLost: the claim or the stored state was taken over while the run resumed.
        CommitUnconfirmed: the run resumed and its state was saved, but the commit could
            not be confirmed (any later attempt is refused as stale).
        Exception: whatever ``Runner.run`` raised (the claim is released, or committed if
            the approved tool had started).
    """
    reader = _reader_for(service)
    async with service.redeem(
        token, decision, scope=scope, principal=principal, expect=TOOL_APPROVAL
    ) as redemption:
        claims = redemption.claims
        run_id = claims.thread_id
        if redemption.replayed:
            logger.info(
                "idempotent retry: decision not applied again",
                extra={"jti": fingerprint(claims.jti)},
            )
            return Resumed(None, replayed=True, approvals=await _waiting(reader, run_id, context))
        text, state = await reader.restore(run_id, context=context)
        item = _approved_item(text, state, claims, redemption.payload)
        answer = redemption.response
        if answer.approve:
            state.approve(item)
        else:
            state.reject(item, rejection_message=answer.message)
        lease = redemption.lease
        assert lease is not None  # noqa: S101 - a fresh redemption always holds a claim
        watch = _Watch(claims.interrupt_id, hooks)
        failed: Exception | None = None
        try:
            result = await lease.run(
                Runner.run(reader.agent, state, run_config=run_config, hooks=watch)
            )
        except PauseTokenError:
            raise
        except Exception as exc:
            if not watch.started:
                raise  # no tool ran: the claim is released, the decision can be sent again
            # The approved tool ran before the run failed: the approval is used up (the claim
            # is committed), so that no retry runs the tool again.
            logger.warning(
                "the run failed after the approved tool ran; the approval is used",
                extra={"jti": fingerprint(claims.jti), "error": type(exc).__name__},
            )
            failed = exc
        else:
            moved_on = result.to_state().to_string()
            if not await reader.states.save(run_id, moved_on, replaces=claims.checkpoint_id):
                msg = "another worker stored a new state for this run while it resumed"
                raise LeaseLost(msg)
            calls = tuple(tool_call(item) for item in result.interruptions)
    if failed is not None:
        raise failed
    output = None if calls else result.final_output
    return Resumed(output, replayed=False, approvals=calls)
