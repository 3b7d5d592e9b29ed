"""``pausetoken demo``: a LangGraph approval flow end to end, each step checking itself."""

from __future__ import annotations

import asyncio
import contextvars
import re
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TypedDict

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
    ConfigurationError,
    InvalidResponse,
    InvalidToken,
    PauseTokenError,
    RedemptionInProgress,
    ScopeMismatch,
)
from pausetoken_langgraph._ask import ask
from pausetoken_langgraph._reader import LangGraphCheckpoints
from pausetoken_langgraph._resume import mint_pending, resume

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

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


@asynccontextmanager
async def _checkpointer(
    url: str | None, directory: Path
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    if url is None or url.startswith("sqlite:///"):
        try:
            from langgraph.checkpoint.sqlite.aio import (  # noqa: PLC0415 - optional extra
                AsyncSqliteSaver,
            )
        except ImportError as exc:
            msg = 'the demo needs SQLite checkpoints: pip install "pausetoken-langgraph[sqlite]"'
            raise BackendNotInstalled(msg) from exc
        path = str(directory / "checkpoints.db") if url is None else url.removeprefix("sqlite:///")
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            yield saver
        return
    if _POSTGRESQL.match(url):
        try:
            from langgraph.checkpoint.postgres.aio import (  # noqa: PLC0415 - optional extra
                AsyncPostgresSaver,
            )
        except ImportError as exc:
            msg = (
                "PostgreSQL checkpoints need the extra: "
                'pip install "pausetoken-langgraph[postgresql]"'
            )
            raise BackendNotInstalled(msg) from exc
        async with AsyncPostgresSaver.from_conn_string(_POSTGRESQL.sub("postgresql://", url)) as pg:
            await pg.setup()
            yield pg
        return
    msg = "--checkpointer takes a postgresql://... or sqlite:///path URL"
    raise ConfigurationError(msg, code="cli_usage")


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

    A LangGraph graph asks for a refund approval with :func:`~pausetoken_langgraph.ask`;
    the demo mints its token, shows that a tampered token, another tenant and a malformed
    answer are refused without using the token up, redeems it (the graph finishes), refuses
    a replay with another answer, answers a retry idempotently, and lets
    :data:`RACERS` redeemers race for one fresh token.

    Args:
        directory: Where the SQLite files live (the checkpoints and, by default, the store).
        store_url: The token store (default: a SQLite file in ``directory``).
        checkpointer_url: ``postgresql://...`` for ``AsyncPostgresSaver`` (default: a
            SQLite file in ``directory``).
        console: Where to draw the report.

    Returns:
        ``True`` if every step behaved as expected.

    Raises:
        ConfigurationError: a backend is missing or a URL is not usable.
    """
    from rich.table import Table  # noqa: PLC0415 - rich is the [cli] extra
    from rich.text import Text  # noqa: PLC0415

    store_url = store_url or f"sqlite+aiosqlite:///{directory / 'tokens.db'}"
    console.print(Text("pausetoken demo: a refund approval on LangGraph", style="bold"))
    console.print(
        Text(
            "Keys are generated in this process for the demo only; a service loads its key "
            "set from PAUSETOKEN_KEYS_FILE (see `pausetoken keygen`).",
            style="dim",
        )
    )
    console.print(Text(f"token store:  {redact_url(store_url)}", style="dim"))
    console.print(Text(f"checkpointer: {_describe(checkpointer_url, directory)}", style="dim"))
    steps: list[_Step] = []

    def report(step: _Step) -> None:
        steps.append(step)
        mark = Text("PASS ", style="bold green") if step.passed else Text("FAIL ", style="bold red")
        console.print(mark + Text(step.title, style="bold") + Text(f" - {step.detail}"))

    started = time.perf_counter()
    async with _checkpointer(checkpointer_url, directory) as saver:
        store: TokenStore = open_store(store_url)
        try:
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
                    table_type=Table,
                    text_type=Text,
                )
            except PauseTokenError as exc:
                detail = f"{exc.code} (HTTP {exc.http_status})"
                report(_Step("unexpected refusal", passed=False, detail=detail))
        finally:
            await store.aclose()
    passed = bool(steps) and all(step.passed for step in steps)
    elapsed = time.perf_counter() - started
    count = sum(step.passed for step in steps)
    verdict = Text("PASS", style="bold green") if passed else Text("FAIL", style="bold red")
    console.print(verdict + Text(f": {count}/{len(steps)} steps as expected in {elapsed:.1f} s"))
    return passed


def _describe(checkpointer_url: str | None, directory: Path) -> str:
    if checkpointer_url is None:
        return f"AsyncSqliteSaver {directory / 'checkpoints.db'}"
    if _POSTGRESQL.match(checkpointer_url):
        return f"AsyncPostgresSaver {redact_url(checkpointer_url)}"
    return f"AsyncSqliteSaver {checkpointer_url.removeprefix('sqlite:///')}"


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
