"""mint_pending and resume on real checkpointers: exactly once, stale answers refused."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from langgraph_support import APPROVAL, Decision, Refund, State, thread

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    PauseTokens,
    Scope,
    TokenStatus,
    hash_payload,
    make_converter,
)
from pausetoken.exceptions import (
    AlreadyRedeemed,
    ConfigurationError,
    InvalidResponse,
    InvalidToken,
    RedemptionInProgress,
    ScopeMismatch,
    StaleToken,
    UnknownInterrupt,
)
from pausetoken_langgraph import LangGraphCheckpoints, ask, mint_pending, resume
from scaffolding import ACME

if TYPE_CHECKING:
    from collections.abc import Callable

    import cattrs
    from langgraph_support import Effects, Graphs

    from pausetoken import TokenStore
    from scaffolding import Clock

APPROVE = {"approved": True, "note": "ok"}
REJECT = {"approved": False}


async def test_one_interrupt_is_minted_redeemed_and_the_run_finishes(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    [pause] = paused["__interrupt__"]

    [event] = await mint_pending(tokens, graph, config, scope=ACME)

    assert event.interrupt_id == pause.id
    assert event.thread_id == config["configurable"]["thread_id"]
    assert event.payload == Refund("order-refund", 1999)
    head = (await graph.aget_state(config)).config["configurable"]["checkpoint_id"]
    assert event.checkpoint_id == head
    claims = tokens.verify(event.token)
    assert claims.request_hash == hash_payload(pause.value["payload"])
    resumed = await resume(tokens, graph, event.token, APPROVE, scope=ACME)
    assert resumed.output == {"log": ["refund:True"]}
    assert (resumed.replayed, resumed.interrupts) == (False, ())
    assert effects.done == ["refund:True"]
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.REDEEMED


@pytest.mark.parametrize("order", [("left", "right"), ("right", "left")])
async def test_two_parallel_interrupts_are_redeemed_in_either_order(
    graphs: Graphs,
    make_tokens: Callable[..., PauseTokens],
    effects: Effects,
    order: tuple[str, str],
) -> None:
    graph = graphs.parallel()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    events = await mint_pending(tokens, graph, config, scope=ACME)
    by_node = {event.payload.order_id.removeprefix("order-"): event for event in events}
    assert sorted(by_node) == ["left", "right"]
    first, second = (by_node[name] for name in order)

    after_first = await resume(tokens, graph, first.token, APPROVE, scope=ACME)
    assert [p.interrupt_id for p in after_first.interrupts] == [second.interrupt_id]
    assert after_first.interrupts[0].payload == {
        "order_id": f"order-{order[1]}",
        "amount_cents": 1999,
    }
    final = await resume(tokens, graph, second.token, REJECT, scope=ACME)

    assert final.interrupts == ()
    assert sorted(final.output["log"]) == sorted([f"{order[0]}:True", f"{order[1]}:False"])
    assert effects.done == [f"{order[0]}:True", f"{order[1]}:False"]


async def test_the_first_token_of_a_node_cannot_answer_its_second_interrupt(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.sequential()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [first] = await mint_pending(tokens, graph, config, scope=ACME)
    assert first.payload == Refund("order-first", 100)

    paused_again = await resume(tokens, graph, first.token, APPROVE, scope=ACME)
    [second] = await mint_pending(tokens, graph, config, scope=ACME)

    # Answering the first question does not create a checkpoint: only the interrupt check
    # tells the two apart.
    assert second.checkpoint_id == first.checkpoint_id
    assert second.interrupt_id != first.interrupt_id
    assert [p.interrupt_id for p in paused_again.interrupts] == [second.interrupt_id]
    with pytest.raises(AlreadyRedeemed):
        await resume(tokens, graph, first.token, REJECT, scope=ACME)
    # The first token's answer again is an idempotent retry: nothing resumes.
    again = await resume(tokens, graph, first.token, APPROVE, scope=ACME)
    assert (again.output, again.replayed) == (None, True)
    # The retry names the pause the run waits at now, but shows none of its data.
    assert [(p.interrupt_id, p.payload) for p in again.interrupts] == [(second.interrupt_id, None)]
    assert effects.done == []
    await resume(tokens, graph, second.token, REJECT, scope=ACME)
    assert effects.done == ["both:True:False"]


async def test_a_second_token_for_an_answered_interrupt_cannot_answer_it_again(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.sequential()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [first] = await mint_pending(tokens, graph, config, scope=ACME)
    [twin] = await mint_pending(tokens, graph, config, scope=ACME)
    assert twin.interrupt_id == first.interrupt_id

    await resume(tokens, graph, first.token, APPROVE, scope=ACME)
    done = list(effects.done)

    with pytest.raises(AlreadyRedeemed):
        await resume(tokens, graph, twin.token, REJECT, scope=ACME)
    # The same answer through the twin is the pause's first result again: nothing resumes.
    await resume(tokens, graph, twin.token, APPROVE, scope=ACME)
    assert effects.done == done


async def test_an_interrupt_inside_a_subgraph_is_redeemed_once(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.nested()
    tokens = make_tokens(graph)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)
    assert event.interrupt_id == paused["__interrupt__"][0].id

    output = await resume(tokens, graph, event.token, APPROVE, scope=ACME)

    assert output.output == {"log": ["inner:True"]}
    assert effects.done == ["inner:True"]
    with pytest.raises(AlreadyRedeemed):
        await resume(tokens, graph, event.token, REJECT, scope=ACME)


async def test_a_token_for_a_thread_that_moved_on_is_stale(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)
    # Someone resumes the run without the token; then it pauses on a fresh run.
    await graph.ainvoke(Command(resume={paused["__interrupt__"][0].id: REJECT}), config)
    await graph.ainvoke({"log": []}, config)

    with pytest.raises(StaleToken):
        await resume(tokens, graph, event.token, APPROVE, scope=ACME)
    assert effects.done == ["refund:False"]
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE


async def test_resume_cannot_be_pointed_at_another_thread(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    thread_a, thread_b = thread(), thread()
    await graph.ainvoke({"log": []}, thread_a)
    await graph.ainvoke({"log": []}, thread_b)
    [token_a] = await mint_pending(tokens, graph, thread_a, scope=ACME)

    for addressed in ("thread_id", "checkpoint_id", "checkpoint_ns"):
        config = {"configurable": {addressed: thread_b["configurable"]["thread_id"]}}
        with pytest.raises(ConfigurationError) as refused:
            await resume(tokens, graph, token_a.token, APPROVE, scope=ACME, config=config)
        assert refused.value.code == "langgraph_resume_addressed"

    assert effects.done == []
    assert await tokens.status(token_a.token, scope=ACME) is TokenStatus.ACTIVE
    # Extra configurable values are passed on; the thread still comes from the token.
    config = {"configurable": {"user": "alice"}, "tags": ["approval"]}
    await resume(tokens, graph, token_a.token, APPROVE, scope=ACME, config=config)
    assert (await graph.aget_state(thread_a)).next == ()
    assert (await graph.aget_state(thread_b)).next == ("refund",)


def _with_claim(token: str, **changes: Any) -> str:
    head, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims.update(changes)
    encoded = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{encoded}.{signature}"


async def test_a_token_is_bound_to_the_graph_it_was_minted_for(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph, other = graphs.single(), graphs.parallel()  # one checkpointer, two graphs
    tokens, other_tokens = make_tokens(graph), make_tokens(other)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)

    with pytest.raises(ConfigurationError) as mismatch:
        await resume(tokens, other, event.token, APPROVE, scope=ACME)
    assert mismatch.value.code == "langgraph_reader_mismatch"
    with pytest.raises(InvalidToken) as foreign:
        await resume(other_tokens, other, event.token, APPROVE, scope=ACME)
    assert foreign.value.code == "token_namespace_mismatch"

    assert effects.done == []
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE
    assert (await resume(tokens, graph, event.token, APPROVE, scope=ACME)).replayed is False
    assert effects.done == ["refund:True"]


async def test_a_token_edited_to_name_another_thread_is_refused(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    thread_a, thread_b = thread(), thread()
    await graph.ainvoke({"log": []}, thread_a)
    await graph.ainvoke({"log": []}, thread_b)
    [token_a] = await mint_pending(tokens, graph, thread_a, scope=ACME)
    [token_b] = await mint_pending(tokens, graph, thread_b, scope=ACME)

    forged = _with_claim(
        token_a.token,
        thread_id=token_b.thread_id,
        checkpoint_id=token_b.checkpoint_id,
        interrupt_id=token_b.interrupt_id,
    )
    with pytest.raises(InvalidToken):
        await resume(tokens, graph, forged, APPROVE, scope=ACME)
    assert effects.done == []


async def test_bad_attempts_burn_nothing(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)

    with pytest.raises(ScopeMismatch):
        await resume(tokens, graph, event.token, APPROVE, scope=Scope("globex"))
    with pytest.raises(InvalidResponse):
        await resume(tokens, graph, event.token, {"approved": "yes"}, scope=ACME)

    assert effects.done == []
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE
    await resume(tokens, graph, event.token, APPROVE, scope=ACME)
    assert effects.done == ["refund:True"]


async def test_twenty_concurrent_resumes_run_the_side_effect_once(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)

    outcomes = await asyncio.gather(
        *(resume(tokens, graph, event.token, APPROVE, scope=ACME) for _ in range(20)),
        return_exceptions=True,
    )

    assert effects.count("refund:True") == 1
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert all(isinstance(o, RedemptionInProgress) for o in refused), refused
    assert [o for o in outcomes if not isinstance(o, BaseException)]
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.REDEEMED


async def test_two_tokens_for_one_interrupt_racing_resume_it_once(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [one] = await mint_pending(tokens, graph, config, scope=ACME)
    [two] = await mint_pending(tokens, graph, config, scope=ACME)

    outcomes = await asyncio.gather(
        *(
            resume(tokens, graph, event.token, answer, scope=ACME)
            for event, answer in [(one, APPROVE), (two, REJECT)] * 5
        ),
        return_exceptions=True,
    )

    assert len(effects.done) == 1
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert all(isinstance(o, RedemptionInProgress | StaleToken | AlreadyRedeemed) for o in refused)
    statuses = {await tokens.status(e.token, scope=ACME) for e in (one, two)}
    assert statuses == {TokenStatus.REDEEMED}  # one pause, one answer, whichever token


async def test_tokens_minted_under_two_scopes_for_one_interrupt_resume_it_once(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    globex = Scope("globex")
    [ours] = await mint_pending(tokens, graph, config, scope=ACME)
    [theirs] = await mint_pending(tokens, graph, config, scope=globex)

    outcomes = await asyncio.gather(
        resume(tokens, graph, ours.token, APPROVE, scope=ACME),
        resume(tokens, graph, theirs.token, APPROVE, scope=globex),
        return_exceptions=True,
    )

    assert effects.done == ["refund:True"]
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert all(isinstance(o, RedemptionInProgress | StaleToken) for o in refused), refused
    with pytest.raises(AlreadyRedeemed):
        await resume(tokens, graph, theirs.token, REJECT, scope=globex)
    assert effects.done == ["refund:True"]


async def test_a_failed_resume_is_released_and_the_retry_runs_the_side_effect_once(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)
    effects.fail_next = 1

    with pytest.raises(RuntimeError, match="payment provider"):
        await resume(tokens, graph, event.token, APPROVE, scope=ACME)
    assert effects.done == []
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE

    resumed = await resume(tokens, graph, event.token, APPROVE, scope=ACME)
    assert resumed.output == {"log": ["refund:True"]}
    assert (resumed.replayed, resumed.interrupts) == (False, ())
    assert effects.done == ["refund:True"]
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.REDEEMED


class _DiesBeforeRelease:
    """A store whose worker dies after claiming: releases never reach it."""

    def __init__(self, inner: TokenStore) -> None:
        self.inner = inner
        self.lost: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def release(self, jti: str, lease_id: str) -> bool:
        self.lost.append(jti)
        return True


async def test_a_claim_left_by_a_dead_worker_lapses_and_the_retry_runs_once(
    graphs: Graphs,
    make_tokens: Callable[..., PauseTokens],
    effects: Effects,
    store: TokenStore,
    clock: Clock,
) -> None:
    graph = graphs.single()
    dying = _DiesBeforeRelease(store)
    crashed = make_tokens(graph, on=dying)
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)
    effects.fail_next = 1

    with pytest.raises(RuntimeError):
        await resume(crashed, graph, event.token, APPROVE, scope=ACME)
    assert dying.lost == [event_claims_key(tokens, event.token)]  # the claim was left behind
    with pytest.raises(RedemptionInProgress) as busy:
        await resume(tokens, graph, event.token, APPROVE, scope=ACME)
    assert busy.value.retry_after is not None
    assert busy.value.retry_after > 0

    clock.now += (tokens.lease + tokens.policy.leeway).total_seconds() + 1
    output = await resume(tokens, graph, event.token, APPROVE, scope=ACME)

    assert output.output == {"log": ["refund:True"]}
    assert effects.done == ["refund:True"]
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.REDEEMED
    again = await resume(tokens, graph, event.token, APPROVE, scope=ACME)
    assert (again.output, again.replayed) == (None, True)
    assert effects.done == ["refund:True"]


async def test_replays_with_another_answer_conflict_and_same_answer_retries_do_not_resume(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)
    [event] = await mint_pending(tokens, graph, config, scope=ACME)
    first = await resume(tokens, graph, event.token, APPROVE, scope=ACME)

    with pytest.raises(AlreadyRedeemed):
        await resume(tokens, graph, event.token, REJECT, scope=ACME)
    retried = await resume(tokens, graph, event.token, Decision(True, "ok"), scope=ACME)

    assert (first.replayed, retried.replayed) == (False, True)
    assert first.output == {"log": ["refund:True"]}
    assert retried.output is None
    assert effects.done == ["refund:True"]


def event_claims_key(tokens: PauseTokens, token: str) -> str:
    return tokens.verify(token).pause_key


# -- one structuring path ------------------------------------------------------------------


class Money:
    """A type cattrs cannot read on its own: answers carry it as a decimal string."""

    def __init__(self, cents: int) -> None:
        self.cents = cents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and other.cents == self.cents

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def parse(cls, text: object, _kind: object = None) -> Money:
        if not isinstance(text, str):
            msg = "money is a decimal string"
            raise TypeError(msg)
        units, _, cents = text.partition(".")
        return cls(int(units) * 100 + int(cents or 0))

    def __str__(self) -> str:
        return f"{self.cents // 100}.{self.cents % 100:02d}"


@attrs.frozen
class Counteroffer:
    amount: Money


def money_converter() -> cattrs.Converter:
    converter = make_converter()
    converter.register_structure_hook(Money, Money.parse)
    converter.register_unstructure_hook(Money, str)
    return converter


COUNTEROFFER = Interrupt(
    "counteroffer", payload=Counteroffer, response=Counteroffer, converter=money_converter()
)


async def test_a_hook_the_service_structures_with_is_the_one_ask_uses_in_the_node(
    store: TokenStore, clock: Clock
) -> None:
    offered: list[Money] = []

    def node(state: State) -> dict[str, Any]:
        offered.append(ask(COUNTEROFFER, Counteroffer(Money(1999))).amount)
        return {"log": ["countered"]}

    builder = StateGraph(State)
    builder.add_node("offer", node)
    builder.add_edge(START, "offer")
    builder.add_edge("offer", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=store,
        checkpoints=LangGraphCheckpoints(graph),
        clock=clock,
    )
    tokens.register(COUNTEROFFER)
    config = thread()
    paused = await graph.ainvoke({"log": []}, config)
    assert paused["__interrupt__"][0].value["payload"] == {"amount": "19.99"}
    [event] = await mint_pending(tokens, graph, config, scope=ACME, expect=COUNTEROFFER)
    assert event.payload == Counteroffer(Money(1999))

    resumed = await resume(tokens, graph, event.token, {"amount": "12.50"}, scope=ACME)

    assert resumed.output == {"log": ["countered"]}
    assert offered == [Money(1250)]


# -- typed handles: expect= ----------------------------------------------------------------


async def test_with_the_expected_interrupt_pauses_are_minted_and_resumed_as_without(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    config = thread()
    await graph.ainvoke({"log": []}, config)

    [event] = await mint_pending(tokens, graph, config, scope=ACME, expect=APPROVAL)
    assert event.payload == Refund("order-refund", 1999)
    resumed = await resume(tokens, graph, event.token, APPROVE, scope=ACME, expect=APPROVAL)

    assert resumed.output == {"log": ["refund:True"]}
    assert effects.done == ["refund:True"]


async def test_pauses_and_tokens_of_another_interrupt_than_the_expected_one_are_refused(
    graphs: Graphs, make_tokens: Callable[..., PauseTokens], effects: Effects
) -> None:
    graph = graphs.single()
    tokens = make_tokens(graph)
    tokens.register(COUNTEROFFER)
    config = thread()
    await graph.ainvoke({"log": []}, config)

    with pytest.raises(UnknownInterrupt) as refused:
        await mint_pending(tokens, graph, config, scope=ACME, expect=COUNTEROFFER)
    assert refused.value.code == "interrupt_mismatch"
    [event] = await mint_pending(tokens, graph, config, scope=ACME)
    with pytest.raises(UnknownInterrupt) as refused:
        await resume(tokens, graph, event.token, APPROVE, scope=ACME, expect=COUNTEROFFER)
    assert refused.value.code == "interrupt_mismatch"

    assert effects.done == []
    assert await tokens.status(event.token, scope=ACME) is TokenStatus.ACTIVE
    await resume(tokens, graph, event.token, APPROVE, scope=ACME, expect=APPROVAL)
    assert effects.done == ["refund:True"]
