"""``mint_pending`` after a run paused, and ``resume`` that answers a pause exactly once."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, overload

import attrs
from langgraph.types import Command

from pausetoken.exceptions import (
    LangGraphMisconfigured,
    StaleToken,
    UnknownInterrupt,
)
from pausetoken.plugins import fingerprint
from pausetoken_langgraph._ask import unwrap
from pausetoken_langgraph._langchain import (
    LANGCHAIN_PER_CALL,
    checking_edits_against,
    langchain_kind,
)
from pausetoken_langgraph._reader import LangGraphCheckpoints, pending_interrupts, stored_value

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import timedelta

    from langgraph.pregel import Pregel
    from langgraph.types import Interrupt as GraphInterrupt

    from pausetoken import Interrupt, InterruptEvent, PauseTokens, Scope

__all__ = ["PendingPause", "Resumed", "mint_pending", "resume"]

logger = logging.getLogger("pausetoken.langgraph")

P = TypeVar("P")


#: Keys of ``config["configurable"]`` that would make a resume address another place than
#: the token's thread head (``checkpoint_id`` forks the thread).
_ADDRESSING: Final = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns"})


@attrs.frozen
class PendingPause:
    """A pause the run is waiting at after a resume.

    Attributes:
        interrupt_id: LangGraph's interrupt id (what `mint_pending()` binds).
        name: The registered name for a pause raised with
            [`ask()`][pausetoken_langgraph.ask], the kind's name for one of LangChain's
            middleware (``"langchain.review"``, ``"langchain.tool_approval"``); ``None``
            for any other (foreign) interrupt.
        payload: What the pause shows; ``None`` in the result of an idempotent retry,
            which never returns data written after the answer it repeats.
    """

    interrupt_id: str
    name: str | None
    payload: Any = attrs.field(default=None, repr=False)


@attrs.frozen(repr=False)
class Resumed:
    """What `resume()` returns, in the same shape for a fresh answer and a retry.

    Attributes:
        output: What ``graph.ainvoke`` returned, without its ``__interrupt__`` entry;
            ``None`` for an idempotent retry (the run was resumed by the first answer, and
            its later state is not handed to whoever retries).
        replayed: ``True`` for an idempotent retry of an answer already committed.
        interrupts: The pauses the run waits at now (mint tokens for them with
            `mint_pending()`); empty when the run finished.
    """

    output: Any
    replayed: bool
    interrupts: tuple[PendingPause, ...] = ()

    def __repr__(self) -> str:
        pauses = ", ".join(repr(p.interrupt_id) for p in self.interrupts)
        return f"Resumed(replayed={self.replayed}, interrupts=[{pauses}])"


def _kind_name(found: GraphInterrupt) -> str | None:
    name = unwrap(found.value)[0]
    if name is None and (kind := langchain_kind(found)) is not None:
        return kind.name
    return name


def _pauses(found: Iterable[Any], *, with_payload: bool) -> tuple[PendingPause, ...]:
    return tuple(
        PendingPause(item.id, _kind_name(item), stored_value(item) if with_payload else None)
        for item in found
    )


def _foreign(service: PauseTokens, found: GraphInterrupt) -> Interrupt[Any, Any] | None:
    """The registered LangChain kind a foreign interrupt is, if it is one."""
    kind = langchain_kind(found)
    if kind is None:
        return None
    try:
        registered = service.interrupt(kind.name)
    except UnknownInterrupt:
        return None
    return registered if registered == kind else None


def _reader_for(service: PauseTokens, graph: Pregel[Any, Any, Any, Any]) -> LangGraphCheckpoints:
    reader = service.checkpoints
    if not isinstance(reader, LangGraphCheckpoints) or reader.graph is not graph:
        msg = (
            "the service must read this graph: build it with "
            "checkpoints=LangGraphCheckpoints(graph) for the graph being resumed "
            "(one service per graph)"
        )
        raise LangGraphMisconfigured(msg, code=LangGraphMisconfigured.LANGGRAPH_READER_MISMATCH)
    return reader


@overload
async def mint_pending(
    service: PauseTokens,
    graph: Pregel[Any, Any, Any, Any],
    config: Mapping[str, Any],
    *,
    scope: Scope,
    run_id: str | None = None,
    ttl: timedelta | None = None,
    principal: str | None = None,
    foreign: Literal["refuse", "skip"] = "refuse",
    expect: Interrupt[P, Any],
) -> list[InterruptEvent[P]]: ...


@overload
async def mint_pending(
    service: PauseTokens,
    graph: Pregel[Any, Any, Any, Any],
    config: Mapping[str, Any],
    *,
    scope: Scope,
    run_id: str | None = None,
    ttl: timedelta | None = None,
    principal: str | None = None,
    foreign: Literal["refuse", "skip"] = "refuse",
    expect: None = None,
) -> list[InterruptEvent[Any]]: ...


async def mint_pending(
    service: PauseTokens,
    graph: Pregel[Any, Any, Any, Any],
    config: Mapping[str, Any],
    *,
    scope: Scope,
    run_id: str | None = None,
    ttl: timedelta | None = None,
    principal: str | None = None,
    foreign: Literal["refuse", "skip"] = "refuse",
    expect: Interrupt[Any, Any] | None = None,
) -> list[InterruptEvent[Any]]:
    """Mint one token per pending interrupt of a run that returned paused.

    Call it after ``ainvoke``/``astream`` returned with ``__interrupt__`` (never inside a
    node: nodes re-run on resume). Each token binds the thread, the head checkpoint,
    LangGraph's interrupt id and the hash of the payload LangGraph stored.

    With [`register_langchain()`][pausetoken_langgraph.register_langchain] called on the
    service, the interrupts of LangChain's ``HumanInTheLoopMiddleware`` get tokens too: one
    per batched review, or one per tool call in per-call mode (binding its
    ``tool_call_id``, and the decisions the tool allows).

    Every pending interrupt is minted again on each call: after one of several parallel
    interrupts was answered, the others keep their first tokens, and a second token for
    the same interrupt is refused once either was used (see `resume()`).

    Args:
        service: The [`PauseTokens`][pausetoken.PauseTokens] service; its reader must be
            ``LangGraphCheckpoints(graph)``.
        graph: The compiled graph.
        config: The run's config; only ``configurable.thread_id`` is read (a
            ``checkpoint_id`` in it must still be the head).
        scope: Who the pauses belong to.
        run_id: The run id the tokens carry (default: ``config["run_id"]``, else the
            thread id).
        ttl: Token lifetime (default: the service's).
        principal: The only principal allowed to answer, if any.
        foreign: What to do with pending interrupts not raised by
            [`ask()`][pausetoken_langgraph.ask] and not of a registered LangChain kind
            (see [`register_langchain()`][pausetoken_langgraph.register_langchain]):
            ``"refuse"`` (the default) raises before anything is minted, ``"skip"`` mints
            tokens for the others only.
        expect: The registered interrupt every pause raised with ``ask()`` must be; the
            events' payloads are then typed as its payload type. A pause of another
            interrupt is refused before anything is minted.

    Returns:
        One event per minted token, in the order LangGraph recorded the interrupts; empty
        when the run is not paused.

    Raises:
        ConfigurationError: the service does not read this graph's checkpoints, or the
            config has no thread id.
        UnknownInterrupt: a pending interrupt was not raised by ``ask`` nor of a registered
            LangChain kind (code ``foreign_interrupt``), its name is not registered, or it
            is not the ``expect=`` interrupt (code ``interrupt_mismatch``).
        StaleToken: the config names a checkpoint that is no longer the head.
        CheckpointNotFound, CheckpointLost: the thread is unknown.
        UnsupportedPayload: a stored payload does not fit its registered type.
    """
    reader = _reader_for(service, graph)
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if not isinstance(thread_id, str) or not thread_id:
        msg = "the config has no configurable.thread_id"
        raise LangGraphMisconfigured(msg, code=LangGraphMisconfigured.LANGGRAPH_THREAD_REQUIRED)
    if configurable.get("checkpoint_ns"):
        msg = "tokens address the root graph: pass the thread's config, not a subgraph's"
        raise LangGraphMisconfigured(msg, code=LangGraphMisconfigured.LANGGRAPH_SUBGRAPH_CONFIG)
    head = await reader.head(thread_id)
    head_id = str(head.config["configurable"]["checkpoint_id"])
    seen_id = configurable.get("checkpoint_id")
    if seen_id is not None and seen_id != head_id:
        msg = "the thread has moved on from the checkpoint in the config"
        raise StaleToken(msg)
    asked: list[tuple[str, Interrupt[Any, Any], Any, str | None]] = []
    for interrupt_id, found in pending_interrupts(head.pending_writes).items():
        name, payload = unwrap(found.value)
        tool_call_id = None
        if name is None:
            registered = _foreign(service, found)
            if registered is None:
                if foreign == "refuse":
                    msg = (
                        "a pending interrupt was not raised with ask() (for LangChain's "
                        "human-in-the-loop middleware, call register_langchain(tokens)); pass "
                        "foreign='skip' to mint tokens for the others"
                    )
                    raise UnknownInterrupt(msg, code=UnknownInterrupt.FOREIGN_INTERRUPT)
                logger.info(
                    "foreign interrupt skipped", extra={"interrupt": fingerprint(interrupt_id)}
                )
                continue
            payload = stored_value(found)
            if registered is LANGCHAIN_PER_CALL:
                tool_call_id = payload["tool_call_id"] or None
        else:
            registered = service.interrupt(name)  # every name is known before anything is minted
        if expect is not None and registered != expect:
            msg = f"a pending pause is for another interrupt than {expect.name!r}"
            raise UnknownInterrupt(msg, code=UnknownInterrupt.INTERRUPT_MISMATCH)
        asked.append((interrupt_id, registered, payload, tool_call_id))
    run = run_id if run_id is not None else str(config.get("run_id") or thread_id)
    return [
        await service.mint(
            interrupt,
            payload,
            scope=scope,
            thread_id=thread_id,
            run_id=run,
            interrupt_id=interrupt_id,
            checkpoint_id=head_id,
            tool_call_id=tool_call_id,
            ttl=ttl,
            principal=principal,
        )
        for interrupt_id, interrupt, payload, tool_call_id in asked
    ]


def _resume_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    base = dict(config or {})
    configurable = dict(base.get("configurable") or {})
    addressed = sorted(_ADDRESSING & configurable.keys())
    if addressed:
        msg = (
            f"resume takes the thread from the token; remove {', '.join(addressed)} from "
            "config['configurable'] (an old checkpoint_id would fork the thread)"
        )
        raise LangGraphMisconfigured(msg, code=LangGraphMisconfigured.LANGGRAPH_RESUME_ADDRESSED)
    base["configurable"] = configurable
    return base


async def resume(
    service: PauseTokens,
    graph: Pregel[Any, Any, Any, Any],
    token: str,
    response: Any,
    *,
    scope: Scope,
    principal: str | None = None,
    config: Mapping[str, Any] | None = None,
    context: Any = None,
    expect: Interrupt[Any, Any] | None = None,
) -> Resumed:
    """Redeem a token and resume the paused run with the answer, exactly once.

    The token is redeemed in two phases
    ([`pausetoken.PauseTokens.redeem()`][pausetoken.PauseTokens.redeem]): every
    check runs before anything changes; the pause is claimed; the graph resumes with
    ``Command(resume={interrupt_id: answer})`` on the token's thread (its head, never an
    old checkpoint); when ``ainvoke`` returns, the claim is committed, and when it raises it
    is released and the error propagates, so the same answer can be retried. The claim's
    lease is renewed while the graph runs; if it is lost anyway (the store was unreachable
    for longer than the lease), the run is cancelled and ``LeaseLost`` is raised.

    The claim is per pause, not per token: a second token minted for the same interrupt
    cannot resume it again (another answer is refused, the same answer is a retry). A token
    is bound to the graph its service reads (see
    [`LangGraphCheckpoints`][pausetoken_langgraph.LangGraphCheckpoints]).

    A retry of an answer that was already committed (same token, same answer) does not
    resume the run again: the result has ``replayed=True``, no output, and the ids and
    names of the pauses the run waits at now.

    Args:
        service: The [`PauseTokens`][pausetoken.PauseTokens] service; its reader must be
            ``LangGraphCheckpoints(graph)``.
        graph: The compiled graph.
        token: The token from `mint_pending()`.
        response: The answer (data that structures into the registered response type).
            For LangChain's middleware: ``{"decisions": [...]}`` for a batched review, one
            decision for a per-call tool approval; checked against the actions and the
            decisions they allow before anything is claimed, so an invalid answer never
            reaches LangGraph. An edit's arguments are checked against the tool's own
            argument schema too (the tools of ``graph``'s tool node).
        scope: The caller's scope.
        principal: Who answers; required when the token is bound to a principal.
        config: Extra run config (callbacks, tags, recursion limit, configurable values).
            It must not name ``thread_id``, ``checkpoint_id`` or ``checkpoint_ns``: the
            thread comes from the signed token.
        context: The run context for graphs with a context schema.
        expect: The registered interrupt the token must be for (as for ``redeem()``): an
            endpoint that answers one kind of pause refuses tokens of any other before
            anything is claimed.

    Returns:
        The result: the run's output, whether this was a retry, and the pauses now pending.

    Raises:
        ConfigurationError: the service does not read this graph, or ``config``
            addresses a thread or checkpoint.
        InvalidToken: the token was minted for another graph (``token_namespace_mismatch``)
            or does not verify.
        StaleToken: the run moved on without this pause being answered through pausetoken.
        RedemptionInProgress: another redeemer holds the claim on this pause.
        LeaseLost: the claim was lost while the graph ran (the run was cancelled).
        CommitUnconfirmed: the graph ran but the commit could not be confirmed.
        PauseTokenError: any refusal of
            [`pausetoken.PauseTokens.redeem()`][pausetoken.PauseTokens.redeem].
        Exception: whatever the graph raised while resuming (the claim is released).
    """
    reader = _reader_for(service, graph)
    base = _resume_config(config)
    # LangChain's edits are checked against the graph's tools in redeem(), before its claim.
    with checking_edits_against(graph):
        async with service.redeem(
            token, response, scope=scope, principal=principal, expect=expect
        ) as redemption:
            claims = redemption.claims
            run_config: Any = {**base, "configurable": {**base["configurable"]}}
            run_config["configurable"]["thread_id"] = claims.thread_id
            if redemption.replayed:
                logger.info(
                    "idempotent retry: run not resumed again",
                    extra={"jti": fingerprint(claims.jti), "interrupt": claims.name},
                )
                head = await reader.head(claims.thread_id)
                now_waiting = pending_interrupts(head.pending_writes).values()
                return Resumed(
                    None, replayed=True, interrupts=_pauses(now_waiting, with_payload=False)
                )
            # Written with the interrupt's converter: the one ask() reads it back with.
            answer = service.interrupt(claims.name).to_json(redemption.response)
            command: Command[Any] = Command(resume={claims.interrupt_id: answer})
            lease = redemption.lease
            assert lease is not None  # noqa: S101 - a fresh redemption always holds a claim
            # Cancelled if the claim is lost meanwhile, so two workers never both run on.
            output = await lease.run(graph.ainvoke(command, run_config, context=context))
    waiting = output.get("__interrupt__", ()) if isinstance(output, Mapping) else ()
    if isinstance(output, Mapping) and "__interrupt__" in output:
        output = {key: value for key, value in output.items() if key != "__interrupt__"}
    return Resumed(output, replayed=False, interrupts=_pauses(waiting, with_payload=True))
