"""ToolApprovals: every refusal comes before the tool runs, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
from mcp_support import ARGS, first_round, page_answer
from mcp_types import ElicitResult

from pausetoken.exceptions import (
    AlreadyRedeemed,
    CommitUnconfirmed,
    ConfigurationError,
    InvalidToken,
    PayloadMismatch,
    PrincipalMismatch,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    StoreUnavailable,
)
from pausetoken_mcp import (
    ELICITATION_KEY,
    Approved,
    CallState,
    Pending,
    Rejected,
    SQLToolCalls,
    ToolApprovals,
    ToolCallCheckpoints,
)
from scaffolding import ACME, GLOBEX, Clock

if TYPE_CHECKING:
    from collections.abc import Callable

    from pausetoken import TokenStore

ACCEPTED: Any = {ELICITATION_KEY: ElicitResult(action="accept")}


async def approved_call(approvals: ToolApprovals) -> str:
    """A first round, then alice's approval on the page; returns the request state."""
    token, state = first_round(
        await approvals.gate(None, None, "refund", ARGS, scope=ACME, approver="alice")
    )
    await approvals.answer_from_page(page_answer(token, "approve"))
    return state


async def run_tool(approvals: ToolApprovals, state: str, ran: list[str], **kw: Any) -> None:
    step = await approvals.gate(
        state,
        ACCEPTED,
        "refund",
        kw.get("args", ARGS),
        scope=kw.get("scope", ACME),
        approver="alice",
    )
    assert isinstance(step, Approved)

    async def side_effect() -> None:
        ran.append("refund")

    async with step.redeem() as run:
        await asyncio.sleep(kw.get("hold", 0))  # holding the claim, the tool not started
        await run.run(side_effect())


async def test_an_approved_call_runs_once_and_a_replay_is_refused(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    approvals, ran = make_approvals(), []
    state = await approved_call(approvals)
    await run_tool(approvals, state, ran)
    assert ran == ["refund"]
    with pytest.raises(AlreadyRedeemed):
        await run_tool(approvals, state, ran)
    assert ran == ["refund"]


async def test_tampered_arguments_are_refused_before_the_tool_runs(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    approvals = make_approvals()
    state = await approved_call(approvals)
    with pytest.raises(PayloadMismatch):
        await approvals.gate(
            state, ACCEPTED, "refund", {**ARGS, "amount_cents": 9999}, scope=ACME, approver="alice"
        )
    with pytest.raises(PayloadMismatch):
        await approvals.gate(state, ACCEPTED, "wire_money", ARGS, scope=ACME, approver="alice")


async def test_a_cross_tenant_state_is_refused_before_the_tool_runs(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    approvals = make_approvals()
    state = await approved_call(approvals)
    with pytest.raises(ScopeMismatch):
        await approvals.gate(state, ACCEPTED, "refund", ARGS, scope=GLOBEX, approver="alice")


async def test_a_second_worker_is_refused_while_the_first_holds_the_claim(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    first, second, ran = make_approvals(), make_approvals(), []
    state = await approved_call(first)
    holding = asyncio.create_task(run_tool(first, state, ran, hold=0.5))
    await asyncio.sleep(0.2)
    with pytest.raises(RedemptionInProgress):
        await run_tool(second, state, ran)
    await holding
    assert ran == ["refund"]


async def test_racing_workers_run_the_tool_exactly_once(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    workers, ran = [make_approvals() for _ in range(6)], []
    state = await approved_call(workers[0])
    outcomes = await asyncio.gather(
        *(run_tool(worker, state, ran) for worker in workers), return_exceptions=True
    )
    assert ran == ["refund"]
    refused = [o for o in outcomes if o is not None]
    assert len(refused) == len(workers) - 1
    assert all(isinstance(o, RedemptionInProgress | AlreadyRedeemed | StaleToken) for o in refused)


async def test_the_link_answers_only_for_its_authenticated_approver(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    approvals = make_approvals()
    token, state = first_round(
        await approvals.gate(None, None, "refund", ARGS, scope=ACME, approver="alice")
    )
    with pytest.raises(PrincipalMismatch):
        await approvals.answer_from_page(page_answer(token, "approve", principal="mallory"))
    pending = await approvals.gate(state, ACCEPTED, "refund", ARGS, scope=ACME, approver="alice")
    assert isinstance(pending, Pending)
    assert pending.result.input_requests is None  # later rounds carry the state only


async def test_a_run_token_is_not_an_approval_and_the_page_answers_once(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    approvals = make_approvals()
    token, _ = first_round(
        await approvals.gate(None, None, "refund", ARGS, scope=ACME, approver="alice")
    )
    done = await approvals.answer_from_page(page_answer(token, "reject"))
    assert done.result == {"decision": "reject"}
    with pytest.raises(AlreadyRedeemed):
        await approvals.answer_from_page(page_answer(token, "approve"))


async def test_a_rejection_or_a_declined_link_never_runs_the_tool(
    make_approvals: Callable[..., ToolApprovals],
) -> None:
    approvals = make_approvals()
    token, state = first_round(
        await approvals.gate(None, None, "refund", ARGS, scope=ACME, approver="alice")
    )
    await approvals.answer_from_page(page_answer(token, "reject"))
    step = await approvals.gate(state, ACCEPTED, "refund", ARGS, scope=ACME, approver="alice")
    assert isinstance(step, Rejected)

    _, declined_state = first_round(
        await approvals.gate(None, None, "refund", ARGS, scope=ACME, approver="alice")
    )
    declined: Any = {ELICITATION_KEY: ElicitResult(action="decline")}
    step = await approvals.gate(
        declined_state, declined, "refund", ARGS, scope=ACME, approver="alice"
    )
    assert isinstance(step, Rejected)


@pytest.mark.parametrize("state", ["", "{}", '{"v":1,"call":1}', "not json", '{"v":2}'])
async def test_a_state_of_another_shape_is_an_invalid_token(
    make_approvals: Callable[..., ToolApprovals], state: str
) -> None:
    with pytest.raises(InvalidToken):
        await make_approvals().gate(state, None, "refund", ARGS, scope=ACME, approver="alice")


async def test_a_link_needs_an_approver(make_approvals: Callable[..., ToolApprovals]) -> None:
    with pytest.raises(ConfigurationError):
        await make_approvals().gate(None, None, "refund", ARGS, scope=ACME, approver="")


class CommitNeverArrives:
    """A token store whose commits never reach the engine; the clock passes the lease meanwhile."""

    def __init__(self, store: TokenStore, clock: Clock, lease_s: float) -> None:
        self._store = store
        self._clock = clock
        self._lease_s = lease_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit(self, *args: Any, **kwargs: Any) -> bool:
        del args, kwargs
        self._clock.now += self._lease_s * 3
        raise ConnectionError


async def test_a_takeover_after_an_unconfirmed_commit_never_runs_the_tool_twice(
    make_approvals: Callable[..., ToolApprovals],
    store: TokenStore,
    calls: SQLToolCalls,
    clock: Clock,
) -> None:
    healthy = make_approvals()
    lease = healthy.service.lease
    broken = make_approvals(
        token_store=CommitNeverArrives(store, clock, lease.total_seconds()), lease=lease
    )
    state = await approved_call(healthy)
    ran: list[str] = []
    with pytest.raises(CommitUnconfirmed):
        await run_tool(broken, state, ran)
    assert ran == ["refund"]
    # The first worker's lease has ended: a second worker may claim the pause, and is
    # refused by the reader (the call started) before the tool runs again.
    with pytest.raises(StaleToken):
        await run_tool(healthy, state, ran)
    assert ran == ["refund"]
    assert isinstance(healthy.service.checkpoints, ToolCallCheckpoints)
    record = await calls.load(json.loads(state)["call"])
    assert record is not None
    assert record.state is CallState.STARTED


async def test_a_refused_postgresql_connection_is_store_unavailable() -> None:
    # Nothing listens on port 1: asyncpg raises OSError past SQLAlchemy at once.
    calls = SQLToolCalls("postgresql+asyncpg://postgres@127.0.0.1:1/none")
    try:
        with pytest.raises(StoreUnavailable) as refused:
            await calls.open("call-1", {"secret": "payload"})
        assert "payload" not in str(refused.value)
        with pytest.raises(StoreUnavailable):
            await calls.load("call-1")
        with pytest.raises(StoreUnavailable):
            await calls.advance("call-1", expected=CallState.WAITING, state=CallState.APPROVED)
    finally:
        await calls.aclose()
