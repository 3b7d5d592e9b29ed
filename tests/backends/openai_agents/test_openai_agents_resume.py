"""mint_pending() and resume(): one token per tool approval, each decision applied once."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from agents import RunHooks, Runner
from openai_agents_support import (
    REFUND_ARGUMENTS,
    FakeModel,
    Refunds,
    refund_agent,
    run_id,
    tamper_arguments,
)

from pausetoken import JoseSigner, KeyRing, PauseTokens
from pausetoken.exceptions import (
    AlreadyRedeemed,
    CommitUnconfirmed,
    ConfigurationError,
    InvalidResponse,
    InvalidToken,
    PayloadMismatch,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    StoreUnavailable,
    TokenExpired,
)
from pausetoken_openai_agents import (
    TOOL_APPROVAL,
    AgentRunCheckpoints,
    Decision,
    SQLRunStates,
    ToolCall,
    mint_pending,
    resume,
    state_digest,
)
from scaffolding import ACME, GLOBEX

if TYPE_CHECKING:
    from collections.abc import Callable

    from agents import Agent

    from pausetoken import InterruptEvent, TokenStore
    from pausetoken.plugins import ClaimRequest, ClaimResult


async def paused(tokens: PauseTokens, agent: Agent[Any], run: str) -> InterruptEvent[ToolCall]:
    result = await Runner.run(agent, "refund order A-1001")
    assert result.interruptions, "the fake model's tool call must wait for approval"
    (event,) = await mint_pending(tokens, run, scope=ACME, result=result)
    return event


async def test_a_token_binds_the_call_its_tool_and_the_stored_state(
    make_tokens: Callable[..., PauseTokens], states: SQLRunStates, refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    run = run_id()
    event = await paused(tokens, agent, run)
    stored = await states.load(run)
    assert stored is not None
    claims = tokens.verify(event.token)
    assert event.payload.tool_name == "refund"
    assert event.payload.call_id == claims.interrupt_id == claims.tool_call_id == "call-1"
    assert event.payload.arguments == REFUND_ARGUMENTS
    assert claims.thread_id == run
    assert claims.checkpoint_id == state_digest(stored)
    assert claims.ns == "openai-agents:refunds"
    assert refunds.done == []


async def test_an_approval_runs_the_tool_once_and_the_run_finishes(
    make_tokens: Callable[..., PauseTokens], states: SQLRunStates, refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    run = run_id()
    event = await paused(tokens, agent, run)
    before = await states.load(run)
    done = await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert not done.replayed
    assert done.approvals == ()
    assert done.output == "refunded 1999 on A-1001"
    assert refunds.done == [REFUND_ARGUMENTS]
    assert await states.load(run) != before  # the run moved on


async def test_a_rejection_sends_its_message_and_never_runs_the_tool(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    answer = {"approve": False, "message": "refund refused by finance"}
    done = await resume(tokens, event.token, answer, scope=ACME)
    assert done.output == "refund refused by finance"
    assert refunds.done == []


async def test_a_second_approval_of_the_run_gets_its_own_token(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds, FakeModel(calls=2))
    tokens = make_tokens(agent)
    run = run_id()
    first = await paused(tokens, agent, run)
    middle = await resume(tokens, first.token, Decision(approve=True), scope=ACME)
    assert middle.output is None
    assert [call.call_id for call in middle.approvals] == ["call-2"]
    (second,) = await mint_pending(tokens, run, scope=ACME)
    assert second.payload.call_id == "call-2"
    with pytest.raises(AlreadyRedeemed):  # the first call was decided otherwise
        await resume(tokens, first.token, Decision(approve=False), scope=ACME)
    done = await resume(tokens, second.token, Decision(approve=True), scope=ACME)
    assert done.output is not None
    assert len(refunds.done) == 2


async def test_tampered_stored_arguments_are_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens], states: SQLRunStates, refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    run = run_id()
    event = await paused(tokens, agent, run)
    stored = await states.load(run)
    assert stored is not None
    forged = tamper_arguments(stored, {"order_id": "A-1001", "amount_cents": 999_999})
    assert await states.save(run, forged, replaces=state_digest(stored))
    with pytest.raises(StaleToken):
        await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == []


async def test_a_token_for_other_arguments_than_the_stored_ones_is_not_minted(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    run = run_id()
    event = await paused(tokens, agent, run)
    shown = attrs.evolve(event.payload, arguments={"order_id": "A-1001", "amount_cents": 1})
    with pytest.raises(PayloadMismatch):
        await tokens.mint(
            TOOL_APPROVAL,
            shown,
            scope=ACME,
            thread_id=run,
            run_id=run,
            interrupt_id="call-1",
            checkpoint_id=tokens.verify(event.token).checkpoint_id,
        )


async def test_a_tampered_token_is_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    head, body, signature = event.token.split(".")
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    with pytest.raises(InvalidToken):
        await resume(tokens, f"{head}.{flipped}.{signature}", Decision(approve=True), scope=ACME)
    assert refunds.done == []


async def test_a_state_changed_after_the_checks_is_refused_under_the_claim(
    make_tokens: Callable[..., PauseTokens], states: SQLRunStates, refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    run = run_id()
    event = await paused(tokens, agent, run)
    stored = await states.load(run)
    assert stored is not None
    forged = tamper_arguments(stored, {"order_id": "A-1001", "amount_cents": 999_999})
    reader = tokens.checkpoints
    assert isinstance(reader, AgentRunCheckpoints)
    checked = reader.pending

    async def then_tampered(**where: Any) -> Any:
        found = await checked(**where)
        await states.save(run, forged, replaces=state_digest(stored))
        return found

    reader.pending = then_tampered  # type: ignore[method-assign]
    with pytest.raises(StaleToken):
        await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == []


async def test_a_replay_of_the_same_decision_is_answered_without_running_the_tool(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    again = await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert again.replayed
    assert again.output is None
    assert refunds.done == [REFUND_ARGUMENTS]


async def test_a_replay_with_another_decision_is_refused(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    await resume(tokens, event.token, Decision(approve=False), scope=ACME)
    with pytest.raises(AlreadyRedeemed):
        await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == []


async def test_another_tenants_token_is_refused_before_the_tool_runs(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    with pytest.raises(ScopeMismatch):
        await resume(tokens, event.token, Decision(approve=True), scope=GLOBEX)
    assert refunds.done == []
    # Refused before anything changed: the right tenant still decides.
    await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == [REFUND_ARGUMENTS]


async def test_a_forged_token_is_refused(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    run = run_id()
    await paused(tokens, agent, run)
    impostor = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=tokens.store, checkpoints=tokens.checkpoints
    )
    (forged,) = await mint_pending(impostor, run, scope=ACME)
    with pytest.raises(InvalidToken):
        await resume(tokens, forged.token, Decision(approve=True), scope=ACME)
    assert refunds.done == []


async def test_an_expired_token_is_refused(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    now = [1_900_000_000.0]
    agent = refund_agent(refunds)
    tokens = make_tokens(agent, clock=lambda: now[0])
    event = await paused(tokens, agent, run_id())
    now[0] += timedelta(days=2).total_seconds()
    with pytest.raises(TokenExpired):
        await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == []


async def test_a_malformed_decision_is_refused_and_the_token_stays_good(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    with pytest.raises(InvalidResponse):
        await resume(tokens, event.token, {"approve": "maybe"}, scope=ACME)
    await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert len(refunds.done) == 1


async def test_a_second_worker_is_refused_while_the_first_resumes(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    entered, leave = asyncio.Event(), asyncio.Event()
    first_agent = refund_agent(refunds)
    first = make_tokens(first_agent)
    event = await paused(first, first_agent, run_id())
    refund_tool = first_agent.tools[0]
    invoke = refund_tool.on_invoke_tool

    async def slow(context: Any, arguments: str) -> Any:
        entered.set()
        await leave.wait()
        return await invoke(context, arguments)

    refund_tool.on_invoke_tool = slow
    # The second worker: its own agent object and service over the same stores.
    second = make_tokens(refund_agent(refunds))
    running = asyncio.create_task(resume(first, event.token, Decision(approve=True), scope=ACME))
    await entered.wait()
    with pytest.raises(RedemptionInProgress):
        await resume(second, event.token, Decision(approve=True), scope=ACME)
    leave.set()
    assert not (await running).replayed
    assert refunds.done == [REFUND_ARGUMENTS]


@attrs.define
class CommitFails:
    """A token store whose commits never reach it, moving the clock past the lease."""

    store: TokenStore
    clock: list[float]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def claim(self, request: ClaimRequest) -> ClaimResult:
        return await self.store.claim(request)

    async def commit(self, *args: Any) -> bool:
        self.clock[0] += 120
        msg = "unreachable"
        raise StoreUnavailable(msg)


async def test_a_takeover_after_an_unconfirmed_commit_never_runs_the_tool_twice(
    make_tokens: Callable[..., PauseTokens], store: TokenStore, refunds: Refunds
) -> None:
    now = [1_900_000_000.0]
    agent = refund_agent(refunds)
    lease = timedelta(seconds=5)
    first = make_tokens(agent, clock=lambda: now[0], lease=lease)
    first.store = CommitFails(store, now)
    event = await paused(first, agent, run_id())
    with pytest.raises(CommitUnconfirmed):
        await resume(first, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == [REFUND_ARGUMENTS]
    # The lease lapsed; another worker takes the same token over.
    second = make_tokens(refund_agent(refunds), clock=lambda: now[0], lease=lease)
    with pytest.raises(StaleToken):
        await resume(second, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == [REFUND_ARGUMENTS]


async def test_a_service_that_reads_no_run_states_is_refused(
    store: TokenStore, refunds: Refunds
) -> None:
    from pausetoken import MemoryCheckpoints

    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=MemoryCheckpoints()
    )
    with pytest.raises(ConfigurationError):
        await mint_pending(tokens, run_id(), scope=ACME)


async def test_a_run_id_is_stored_once(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    run = run_id()
    await paused(tokens, agent, run)
    result = await Runner.run(agent, "refund order A-1001")
    with pytest.raises(ConfigurationError):
        await mint_pending(tokens, run, scope=ACME, result=result)


async def test_a_run_failing_after_the_tool_ran_uses_the_approval_up(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    model = FakeModel()
    agent = refund_agent(refunds, model)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    model.fail_after_output = 1
    with pytest.raises(RuntimeError, match="model provider unavailable"):
        await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert refunds.done == [REFUND_ARGUMENTS]
    again = await resume(tokens, event.token, Decision(approve=True), scope=ACME)
    assert again.replayed
    with pytest.raises(AlreadyRedeemed):
        await resume(tokens, event.token, Decision(approve=False), scope=ACME)
    assert refunds.done == [REFUND_ARGUMENTS]


async def test_a_run_failing_before_any_tool_ran_leaves_the_decision_to_send_again(
    make_tokens: Callable[..., PauseTokens], states: SQLRunStates, refunds: Refunds
) -> None:
    model = FakeModel()
    agent = refund_agent(refunds, model)
    tokens = make_tokens(agent)
    run = run_id()
    event = await paused(tokens, agent, run)
    stored = await states.load(run)
    model.fail_after_output = 1  # the model fails on the rejection's output
    with pytest.raises(RuntimeError, match="model provider unavailable"):
        await resume(tokens, event.token, Decision(approve=False, message="no"), scope=ACME)
    assert await states.load(run) == stored
    done = await resume(tokens, event.token, Decision(approve=False, message="no"), scope=ACME)
    assert not done.replayed
    assert done.output == "no"
    assert refunds.done == []


async def test_the_applications_run_hooks_still_see_the_run(
    make_tokens: Callable[..., PauseTokens], refunds: Refunds
) -> None:
    seen: list[str] = []

    class Hooks(RunHooks[Any]):
        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            seen.append(f"start:{tool.name}")

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
            seen.append(f"end:{tool.name}")

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            seen.append("llm")

    agent = refund_agent(refunds)
    tokens = make_tokens(agent)
    event = await paused(tokens, agent, run_id())
    await resume(tokens, event.token, Decision(approve=True), scope=ACME, hooks=Hooks())
    assert seen == ["start:refund", "end:refund", "llm"]
