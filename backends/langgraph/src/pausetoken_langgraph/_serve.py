"""``pausetoken demo --serve``: a paused graph answered from the approval page in a browser."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import TYPE_CHECKING, Any, Final, TypedDict

from langgraph.graph import END, START, StateGraph

from pausetoken import JoseSigner, KeyRing, PauseTokens, Scope, kinds, open_store, redact_url
from pausetoken.exceptions import BackendNotInstalled, CommandLineError
from pausetoken.plugins import install_hint
from pausetoken_langgraph._ask import ask
from pausetoken_langgraph._demo import _open_saver, _plan_checkpointer
from pausetoken_langgraph._reader import LangGraphCheckpoints
from pausetoken_langgraph._resume import mint_pending, resume

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel
    from rich.console import Console

    from pausetoken import TokenStore

__all__ = ["serve_demo"]

_SCOPE: Final = Scope("demo")
_DECISIONS: Final[tuple[kinds.DecisionType, ...]] = ("approve", "edit", "reject")


class _State(TypedDict, total=False):
    order_id: str
    amount: str
    status: str
    note: str


def _build_graph(saver: BaseCheckpointSaver[Any]) -> Pregel[Any, Any, Any, Any]:
    def approve(state: _State) -> _State:
        args = {"order_id": state["order_id"], "amount": state["amount"]}
        decision = ask(
            kinds.APPROVAL,
            kinds.Approval(
                kinds.Action("issue_refund", args),
                allowed_decisions=_DECISIONS,
                description="The parcel arrived damaged; the customer asks for a refund.",
            ),
        )
        if decision["type"] == "approve":
            return {"status": "refunded"}
        if decision["type"] == "edit":
            amount = str(decision["edited_action"]["args"].get("amount", state["amount"]))
            return {"status": "refunded", "amount": amount}
        return {"status": "rejected", "note": str(decision.get("message", ""))}

    builder = StateGraph(_State)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver)


def _uvicorn() -> Any:
    try:
        import uvicorn  # noqa: PLC0415 - the serve extra
    except ImportError as exc:
        hint = install_hint("pausetoken-langgraph[serve]")
        msg = f"pausetoken demo --serve needs uvicorn and Starlette: {hint}"
        raise BackendNotInstalled(msg, code=BackendNotInstalled.COMMAND_NOT_INSTALLED) from exc
    return uvicorn


def _listen(host: str, port: int) -> socket.socket:
    if host not in {"127.0.0.1", "::1", "localhost"}:
        msg = "--serve listens on the loopback interface only (127.0.0.1, ::1 or localhost)"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        msg = f"--port {port}: cannot listen on {host} ({exc.strerror or type(exc).__name__})"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE) from exc
    sock.listen(64)
    return sock


async def serve_demo(
    *,
    directory: Path,
    store_url: str | None = None,
    checkpointer_url: str | None = None,
    console: Console,
    host: str = "127.0.0.1",
    port: int = 0,
    keep_serving: bool = False,
    on_link: Callable[[str], None] | None = None,
) -> bool:
    """Pause a graph, serve the approval page on loopback, and resume when it is answered.

    Args:
        directory: Where the SQLite files live (the checkpoints and, by default, the store).
        store_url: The token store (default: a SQLite file in ``directory``).
        checkpointer_url: ``postgresql://...`` or ``sqlite:///PATH`` (default: SQLite in
            ``directory``).
        console: Where to print the link and the outcome.
        host: The loopback address to listen on.
        port: The port (0: a free one).
        keep_serving: Keep serving after the answer (until interrupted), so that the link
            can be opened again and shows that it was answered.
        on_link: Called with the approval link once the server listens (for tests).

    Returns:
        ``True`` when the graph resumed with the answer and finished.

    Raises:
        BackendNotInstalled: uvicorn or Starlette is missing (the ``serve`` extra).
        ConfigurationError: a URL, the host or the port cannot be used.
    """
    uvicorn = _uvicorn()
    store_url = store_url or f"sqlite+aiosqlite:///{directory / 'tokens.db'}"
    plan = _plan_checkpointer(checkpointer_url, directory)
    sock = _listen(host, port)
    store = open_store(store_url)
    try:
        await store.check()
        async with _open_saver(plan) as saver:
            shown = (redact_url(store_url), plan.shown)
            tokens, graph, token, order = await _paused(store, saver)
            finished: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            server = uvicorn.Server(
                uvicorn.Config(
                    _router(tokens, graph, finished),
                    log_level="warning",
                    lifespan="off",
                    access_log=False,
                )
            )
            serving = asyncio.create_task(server.serve(sockets=[sock]))
            try:
                while not server.started and not serving.done():  # noqa: ASYNC110 - a flag
                    await asyncio.sleep(0.02)
                bound = sock.getsockname()
                address = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
                link = f"http://{address}:{bound[1]}/approve#token={token}"
                _announce(console, link, shown)
                if on_link is not None:
                    on_link(link)
                output = await _wait(finished, serving)
                if output is not None:
                    _report(console, output, order, keep_serving=keep_serving)
                    if keep_serving:
                        await serving
            finally:
                server.should_exit = True
                with contextlib.suppress(asyncio.CancelledError):
                    await serving
            return output is not None
    finally:
        sock.close()
        await store.aclose()


async def _paused(
    store: TokenStore, saver: BaseCheckpointSaver[Any]
) -> tuple[PauseTokens, Pregel[Any, Any, Any, Any], str, str]:
    """The service, the graph paused at its approval, the pause's token and the order."""
    graph = _build_graph(saver)
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=LangGraphCheckpoints(graph)
    )
    kinds.register(tokens)
    order = f"order-{int(time.time() * 1000) % 10**6}"
    config: Any = {"configurable": {"thread_id": f"demo-serve-{order}"}}
    await graph.ainvoke({"order_id": order, "amount": "42.00 EUR"}, config)
    [event] = await mint_pending(tokens, graph, config, scope=_SCOPE)
    return tokens, graph, event.token, order


def _router(
    tokens: PauseTokens,
    graph: Pregel[Any, Any, Any, Any],
    finished: asyncio.Future[dict[str, Any]],
) -> Any:
    """The approval page's router; ``finished`` gets the graph's output once it resumed."""
    from pausetoken.asgi import Caller, ResumeRequest, ResumeResult, resume_router  # noqa: PLC0415

    async def authenticate(_request: Any) -> Caller:
        # Only this machine can reach the server: every caller is the demo's tenant.
        return Caller(_SCOPE)

    async def resume_run(request: ResumeRequest) -> ResumeResult:
        done = await resume(tokens, graph, request.token, request.answer, scope=request.scope)
        if not done.replayed and not finished.done():
            finished.set_result(dict(done.output))
        return ResumeResult(done.output, replayed=done.replayed)

    return resume_router(
        tokens,
        authenticate=authenticate,
        resume=resume_run,
        page_title="pausetoken demo: refund approval",
    )


def _announce(console: Console, link: str, shown: tuple[str, str]) -> None:
    from rich.text import Text  # noqa: PLC0415 - rich is the [cli] extra

    console.print(Text("pausetoken demo --serve: a refund waits for approval", style="bold"))
    console.print(Text(f"token store:  {shown[0]}", style="dim"), soft_wrap=True)
    console.print(Text(f"checkpointer: {shown[1]}", style="dim"), soft_wrap=True)
    console.print(Text("Open this link in a browser to decide:"))
    console.print(Text(link, style="bold cyan"), soft_wrap=True)


def _report(console: Console, output: dict[str, Any], order: str, *, keep_serving: bool) -> None:
    from rich.text import Text  # noqa: PLC0415 - rich is the [cli] extra

    status = output.get("status")
    console.print(
        Text("PASS ", style="bold green")
        + Text(f"the graph resumed and finished: {status!r} ({order})")
    )
    if keep_serving:
        console.print(Text("Still serving; press Ctrl-C to stop.", style="dim"))


async def _wait(
    finished: asyncio.Future[dict[str, Any]], serving: asyncio.Task[None]
) -> dict[str, Any] | None:
    """The graph's output once answered, or ``None`` if the server stopped first."""
    waiting: set[asyncio.Future[Any]] = {finished, serving}
    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    if finished.done():
        # Let the page's request that resumed the graph get its response.
        await asyncio.sleep(0.5)
        return finished.result()
    return None
