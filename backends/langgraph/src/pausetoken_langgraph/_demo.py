"""``pausetoken demo``: a LangGraph approval flow end to end, each step checking itself."""

from __future__ import annotations

import asyncio
import contextvars
import re
import time
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict

import attrs
from langgraph.graph import END, START, StateGraph

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    PauseTokens,
    Scope,
    TokenStatus,
    open_store,
    redact_url,
)
from pausetoken.exceptions import (
    AlreadyRedeemed,
    BackendNotInstalled,
    CommandLineError,
    InvalidResponse,
    InvalidToken,
    LangGraphMisconfigured,
    PauseTokenError,
    RedemptionInProgress,
    ScopeMismatch,
)
from pausetoken.plugins import install_hint
from pausetoken_langgraph._ask import ask
from pausetoken_langgraph._reader import LangGraphCheckpoints
from pausetoken_langgraph._resume import mint_pending, resume

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from contextlib import AbstractAsyncContextManager

    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel
    from rich.console import Console

    from pausetoken import TokenStore

__all__ = ["RACERS", "run_demo"]

#: How many redeemers race for one token in the last step.
RACERS: Final = 50
_ACME: Final = Scope("acme")
_GLOBEX: Final = Scope("globex")
_APPROVE: Final = {"approved": True, "note": "within policy"}
_REJECT: Final = {"approved": False}
_POSTGRESQL: Final = re.compile(r"^postgres(?:ql)?(?:\+psycopg)?://")

# Which racer's resume reached the node: set by each racer, read inside the node.
_racer: contextvars.ContextVar[int | None] = contextvars.ContextVar("racer", default=None)


@attrs.frozen
class RefundRequest:
    """What the approver is shown."""

    order_id: str
    amount_cents: int
    reason: str


@attrs.frozen
class Decision:
    """What the approver answers."""

    approved: bool
    note: str = ""


class _State(TypedDict, total=False):
    order_id: str
    status: str


@attrs.define
class _Ledger:
    """The side effect the graph causes: refunds paid, and which racer paid them."""

    paid: list[str] = attrs.Factory(list)
    racers: list[int | None] = attrs.Factory(list)

    def pay(self, order_id: str) -> None:
        self.paid.append(order_id)
        self.racers.append(_racer.get())


@attrs.frozen
class _Step:
    title: str
    passed: bool
    detail: str


def _build_graph(saver: BaseCheckpointSaver[Any], ledger: _Ledger) -> Pregel[Any, Any, Any, Any]:
    def approve(state: _State) -> _State:
        order_id = state["order_id"]
        request = RefundRequest(order_id, 4_200, "parcel arrived damaged")
        decision = ask("refund_approval", request, response=Decision)
        if not decision.approved:
            return {"status": "rejected"}
        ledger.pay(order_id)
        return {"status": "refunded"}

    builder = StateGraph(_State)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver)


@attrs.frozen
class _Checkpointer:
    """The checkpointer the options ask for, checked before anything is printed."""

    kind: Literal["sqlite", "postgresql"]
    target: str  # a file path, or psycopg's postgresql:// URL
    shown: str  # what the report prints (the URL redacted)


def _plan_checkpointer(url: str | None, directory: Path) -> _Checkpointer:
    if url is None:
        path = str(directory / "checkpoints.db")
        return _Checkpointer("sqlite", path, f"AsyncSqliteSaver {path}")
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        parent = Path(path).expanduser().absolute().parent
        if not path or not parent.is_dir():
            msg = (
                f"--checkpointer {redact_url(url)}: the directory {parent} does not exist"
                if path
                else "--checkpointer sqlite:///PATH needs the path of the SQLite file"
            )
            raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
        return _Checkpointer("sqlite", path, f"AsyncSqliteSaver {path}")
    if _POSTGRESQL.match(url):
        target = _POSTGRESQL.sub("postgresql://", url)
        return _Checkpointer("postgresql", target, f"AsyncPostgresSaver {redact_url(url)}")
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme.lower().startswith("postgres"):
        msg = (
            f"--checkpointer: LangGraph's AsyncPostgresSaver connects with psycopg; write "
            f"postgresql://... (not {scheme}://)"
        )
    else:
        got = f"a {scheme}:// URL" if scheme else "no URL scheme"
        msg = f"--checkpointer takes postgresql://USER@HOST/DB or sqlite:///PATH (got {got})"
    raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)


def _saver_factory(
    plan: _Checkpointer,
) -> Callable[[str], AbstractAsyncContextManager[BaseCheckpointSaver[Any]]]:
    if plan.kind == "sqlite":
        try:
            from langgraph.checkpoint.sqlite.aio import (  # noqa: PLC0415 - optional extra
                AsyncSqliteSaver,
            )
        except ImportError as exc:
            msg = (
                f"the demo needs SQLite checkpoints: {install_hint('pausetoken-langgraph[sqlite]')}"
            )
            raise BackendNotInstalled(msg) from exc
        return AsyncSqliteSaver.from_conn_string
    try:
        from langgraph.checkpoint.postgres.aio import (  # noqa: PLC0415 - optional extra
            AsyncPostgresSaver,
        )
    except ImportError as exc:
        msg = (
            "PostgreSQL checkpoints need the extra: "
            f"{install_hint('pausetoken-langgraph[postgresql]')}"
        )
        raise BackendNotInstalled(msg) from exc
    return AsyncPostgresSaver.from_conn_string


@asynccontextmanager
async def _open_saver(plan: _Checkpointer) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    factory = _saver_factory(plan)
    async with AsyncExitStack() as stack:
        try:
            saver = await stack.enter_async_context(factory(plan.target))
            setup = getattr(saver, "setup", None)
            if plan.kind == "postgresql" and setup is not None:
                await setup()
        except Exception as exc:
            # The driver's message goes on the cause chain, where the CLI reads it redacted.
            msg = f"cannot open the LangGraph checkpointer ({plan.shown})"
            raise LangGraphMisconfigured(
                msg, code=LangGraphMisconfigured.DEMO_CHECKPOINTER_FAILED
            ) from exc
        yield saver


@asynccontextmanager
async def _checkpointer(
    url: str | None, directory: Path
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The checkpointer ``--checkpointer url`` asks for (the benchmarks open theirs so)."""
    async with _open_saver(_plan_checkpointer(url, directory)) as saver:
        yield saver


def _short(token: str) -> str:
    return f"{token[:12]}…{token[-6:]} ({len(token)} characters)"


def _tampered(token: str) -> str:
    head, body, signature = token.split(".")
    middle = len(body) // 2
    flipped = "A" if body[middle] != "A" else "B"
    return f"{head}.{body[:middle]}{flipped}{body[middle + 1 :]}.{signature}"


async def _refused(call: Awaitable[Any], kind: type[PauseTokenError]) -> tuple[bool, str]:
    try:
        await call
    except kind as exc:
        return True, f"refused: {exc.code} (HTTP {exc.http_status})"
    except PauseTokenError as exc:
        return False, f"refused with the wrong error: {exc.code}"
    return False, "accepted, but it had to be refused"


async def run_demo(
    *,
    directory: Path,
    store_url: str | None = None,
    checkpointer_url: str | None = None,
    console: Console,
) -> bool:
    """Run the approval demo and report each step; return whether every step passed.

    A LangGraph graph asks for a refund approval with [`ask()`][pausetoken_langgraph.ask];
    the demo mints its token, shows that a tampered token, another tenant and a malformed
    answer are refused without using the token up, redeems it (the graph finishes), refuses
    a replay with another answer, answers a retry idempotently, and lets
    `RACERS` redeemers race for one fresh token.

    Args:
        directory: Where the SQLite files live (the checkpoints and, by default, the store).
        store_url: The token store (default: a SQLite file in ``directory``).
        checkpointer_url: ``postgresql://...`` for ``AsyncPostgresSaver`` (default: a
            SQLite file in ``directory``).
        console: Where to draw the report.

    Returns:
        ``True`` if every step behaved as expected.

    Raises:
        ConfigurationError: a backend is missing, a URL is not usable, or the checkpointer
            or the store cannot be opened (``demo_checkpointer_failed``, the store's own
            codes). The options are checked and both are opened before anything is printed.
        StoreUnavailable: the token store cannot be reached.
    """
    from rich.table import Table  # noqa: PLC0415 - rich is the [cli] extra
    from rich.text import Text  # noqa: PLC0415

    store_url = store_url or f"sqlite+aiosqlite:///{directory / 'tokens.db'}"
    plan = _plan_checkpointer(checkpointer_url, directory)
    _saver_factory(plan)  # a missing extra is said before anything is printed
    store: TokenStore = open_store(store_url)
    try:
        await store.check()
        async with _open_saver(plan) as saver:
            return await _run(
                store,
                saver,
                store_shown=redact_url(store_url),
                checkpointer_shown=plan.shown,
                console=console,
                table_type=Table,
                text_type=Text,
            )
    finally:
        await store.aclose()


async def _run(
    store: TokenStore,
    saver: BaseCheckpointSaver[Any],
    *,
    store_shown: str,
    checkpointer_shown: str,
    console: Console,
    table_type: Any,
    text_type: Any,
) -> bool:
    text = text_type
    console.print(text("pausetoken demo: a refund approval on LangGraph", style="bold"))
    console.print(
        text(
            "Keys are generated in this process for the demo only; a service loads its key "
            "set from PAUSETOKEN_KEYS_FILE (see `pausetoken keygen`).",
            style="dim",
        )
    )
    console.print(text(f"token store:  {store_shown}", style="dim"))
    console.print(text(f"checkpointer: {checkpointer_shown}", style="dim"))
    steps: list[_Step] = []

    def report(step: _Step) -> None:
        steps.append(step)
        mark = text("PASS ", style="bold green") if step.passed else text("FAIL ", style="bold red")
        console.print(mark + text(step.title, style="bold") + text(f" - {step.detail}"))

    started = time.perf_counter()
    ledger = _Ledger()
    graph = _build_graph(saver, ledger)
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=store,
        checkpoints=LangGraphCheckpoints(graph),
    )
    tokens.register(Interrupt("refund_approval", payload=RefundRequest, response=Decision))
    try:
        await _steps(
            tokens,
            graph=graph,
            ledger=ledger,
            report=report,
            console=console,
            table_type=table_type,
            text_type=text_type,
        )
    except PauseTokenError as exc:
        detail = f"{exc.code} (HTTP {exc.http_status})"
        report(_Step("unexpected refusal", passed=False, detail=detail))
    passed = bool(steps) and all(step.passed for step in steps)
    elapsed = time.perf_counter() - started
    count = sum(step.passed for step in steps)
    verdict = text("PASS", style="bold green") if passed else text("FAIL", style="bold red")
    console.print(verdict + text(f": {count}/{len(steps)} steps as expected in {elapsed:.1f} s"))
    return passed


async def _steps(
    tokens: PauseTokens,
    *,
    graph: Pregel[Any, Any, Any, Any],
    ledger: _Ledger,
    report: Callable[[_Step], None],
    console: Console,
    table_type: Any,
    text_type: Any,
) -> None:
    run_id = f"order-{int(time.time() * 1000) % 10**9}"
    config: Any = {"configurable": {"thread_id": f"demo-{run_id}"}}
    paused = await graph.ainvoke({"order_id": run_id}, config)
    pauses = paused.get("__interrupt__", [])
    report(_Step("the graph pauses", len(pauses) == 1, f"{len(pauses)} interrupt(s) pending"))
    if len(pauses) != 1:
        return

    events = await mint_pending(tokens, graph, config, scope=_ACME, run_id=run_id)
    minted = len(events) == 1
    report(_Step("a token is minted", minted, f"{len(events)} token(s) for tenant 'acme'"))
    if not minted:
        return
    event = events[0]
    claims = tokens.verify(event.token)
    table = table_type(title="claims (verified)", show_header=True)
    table.add_column("claim")
    table.add_column("value", overflow="fold")
    table.add_row("token", text_type(_short(event.token)))
    for name, value in claims.to_dict().items():
        table.add_row(name, text_type(str(value)))
    console.print(table)

    ok, detail = await _refused(
        resume(tokens, graph, _tampered(event.token), _APPROVE, scope=_ACME), InvalidToken
    )
    report(_Step("a tampered token is refused", ok, detail))

    ok, detail = await _refused(
        resume(tokens, graph, event.token, _APPROVE, scope=_GLOBEX), ScopeMismatch
    )
    report(_Step("another tenant is refused", ok, detail))

    ok, detail = await _refused(
        resume(tokens, graph, event.token, {"approved": "yes"}, scope=_ACME), InvalidResponse
    )
    still = await tokens.status(event.token, scope=_ACME)
    ok = ok and still is TokenStatus.ACTIVE and not ledger.paid
    report(_Step("a malformed answer is refused", ok, f"{detail}; the token is {still.value}"))

    resumed = await resume(tokens, graph, event.token, _APPROVE, scope=_ACME)
    status = await tokens.status(event.token, scope=_ACME)
    finished = resumed.output.get("status")
    ok = finished == "refunded" and ledger.paid == [run_id] and not resumed.interrupts
    ok = ok and status is TokenStatus.REDEEMED
    report(
        _Step(
            "the answer is redeemed and the graph finishes",
            ok,
            f"graph status {finished!r}, refunds paid: {len(ledger.paid)}, token {status.value}",
        )
    )

    ok, detail = await _refused(
        resume(tokens, graph, event.token, _REJECT, scope=_ACME), AlreadyRedeemed
    )
    report(_Step("a replay with another answer is refused", ok, detail))

    again = await resume(tokens, graph, event.token, _APPROVE, scope=_ACME)
    ok = again.replayed and again.output is None and ledger.paid == [run_id]
    report(
        _Step(
            "a retry with the same answer is answered idempotently",
            ok,
            f"the run was not resumed again; refunds paid: {len(ledger.paid)}",
        )
    )

    await _race(tokens, graph, ledger, report)


async def _race(
    tokens: PauseTokens,
    graph: Pregel[Any, Any, Any, Any],
    ledger: _Ledger,
    report: Callable[[_Step], None],
) -> None:
    order_id = "order-race"
    config: Any = {"configurable": {"thread_id": f"demo-race-{time.time_ns()}"}}
    await graph.ainvoke({"order_id": order_id}, config)
    [event] = await mint_pending(tokens, graph, config, scope=_ACME)

    async def racer(number: int) -> str:
        _racer.set(number)
        try:
            await resume(tokens, graph, event.token, _APPROVE, scope=_ACME)
        except RedemptionInProgress:
            return "in progress"
        except PauseTokenError as exc:
            return exc.code
        return "answered"

    outcomes = await asyncio.gather(*(racer(n) for n in range(RACERS)))
    winners = [n for n, paid in zip(ledger.racers, ledger.paid, strict=True) if paid == order_id]
    answered = outcomes.count("answered")
    ok = len(winners) == 1 and answered + outcomes.count("in progress") == RACERS
    status = await tokens.status(event.token, scope=_ACME)
    ok = ok and status is TokenStatus.REDEEMED
    report(
        _Step(
            f"{RACERS} concurrent redeemers, one winner",
            ok,
            f"refund paid {len(winners)} time(s) (by racer {winners[0] if winners else '-'}); "
            f"{answered - 1 if winners else answered} idempotent answer(s), "
            f"{outcomes.count('in progress')} told to retry; token {status.value}",
        )
    )
