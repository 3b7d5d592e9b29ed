"""What the HTTP tests share: a service with its kinds of pause, the router, a live server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import warnings
from typing import TYPE_CHECKING, Any, Final, TypeVar

import attrs
import uvicorn

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    Scope,
    kinds,
)
from pausetoken.asgi import Caller, ResumeRequest, ResumeResult, resume_router
from pausetoken.exceptions import NotAuthenticated

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator

    from starlette.requests import Request

T = TypeVar("T")

ACME: Final = Scope("acme")
GLOBEX: Final = Scope("globex")
#: API keys of the test application: the caller comes from the Authorization header.
API_KEYS: Final = {"key-acme": Caller(ACME, "alice"), "key-globex": Caller(GLOBEX, "bob")}
AUTH: Final = {"Authorization": "Bearer key-acme"}


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


REFUND: Final = Interrupt("refund", payload=Refund, response=Decision)
# The shape of LangChain's per-call tool approval, with the decisions the page offers.
TOOL_APPROVAL: Final = Interrupt("tool_approval", payload=dict[str, Any], response=dict[str, Any])


# The shape of LangChain's batched review: one interrupt for a model turn's tool calls.
BATCHED: Final = Interrupt("batched_review", payload=dict[str, Any], response=dict[str, Any])
# Named as pausetoken_langgraph names LangChain's batched review (the page labels it).
LANGCHAIN_REVIEW: Final = Interrupt(
    "langchain.review", payload=dict[str, Any], response=dict[str, Any]
)


def batched_review() -> dict[str, Any]:
    return {
        "action_requests": [
            {"name": "send_email", "args": {"to": "customer@example.com", "subject": "Refund"}},
            {"name": "issue_refund", "args": {"order_id": "A-1042", "amount": "42.00 EUR"}},
        ],
        "review_configs": [
            {"action_name": "send_email", "allowed_decisions": ["approve", "respond"]},
            {"action_name": "issue_refund", "allowed_decisions": ["approve", "reject"]},
        ],
    }


def langchain_review() -> dict[str, Any]:
    """A batched review with the descriptions LangChain's middleware writes by default."""
    args = {"to": "customer@example.com", "subject": "Refund"}
    return {
        "action_requests": [
            {
                "name": "send_email",
                "args": args,
                "description": (
                    f"Tool execution requires approval\n\nTool: send_email\nArgs: {args!r}"
                ),
            }
        ],
        "review_configs": [
            {"action_name": "send_email", "allowed_decisions": ["approve", "reject"]}
        ],
    }


def questions() -> kinds.Questions:
    return kinds.Questions(
        [
            kinds.Question(
                "Ship the order today?",
                [kinds.Option("Yes"), kinds.Option("No", "hold it until Monday")],
                header="Shipping",
            ),
            kinds.Question(
                "Which carriers may take it?",
                [
                    kinds.Option("Post"),
                    kinds.Option("Courier"),
                    kinds.Option("Pickup", "the customer collects"),
                ],
                header="Carriers",
                multi_select=True,
                allow_other=True,
            ),
        ]
    )


def approval(order_id: str = "A-1042") -> kinds.Approval:
    return kinds.Approval(
        kinds.Action(
            "issue_refund",
            {"order_id": order_id, "amount": "42.00 EUR", "reason": "parcel arrived damaged"},
        ),
        allowed_decisions=("approve", "edit", "reject"),
        description="Refund the customer for the damaged parcel.",
    )


def tool_call(order_id: str = "A-1042") -> dict[str, Any]:
    return {
        "type": "tool_approval",
        "tool_call_id": f"call-{order_id}",
        "name": "issue_refund",
        "args": {"order_id": order_id, "amount": "42.00 EUR", "reason": "parcel arrived damaged"},
        "description": "Refund the customer for the damaged parcel.",
        "allowed_decisions": ["approve", "edit", "reject"],
    }


async def authenticate(request: Request) -> Caller:
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    caller = API_KEYS.get(key)
    if caller is None:
        raise NotAuthenticated
    return caller


@attrs.define
class App:
    """A service, the runs it resumed, and the router over them."""

    tokens: PauseTokens
    checkpoints: MemoryCheckpoints
    resumed: list[tuple[str, Any]] = attrs.Factory(list)
    # Set by a test to hold a resume open, or to make it fail.
    gate: asyncio.Event | None = None
    started: asyncio.Event = attrs.Factory(asyncio.Event)
    fail_with: Exception | None = None
    # The event loop the service runs on, when a server thread serves it.
    loop: asyncio.AbstractEventLoop | None = None

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the server's loop, from a test's thread."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    async def resume(self, request: ResumeRequest) -> ResumeResult:
        async with self.tokens.redeem(
            request.token, request.answer, scope=request.scope, principal=request.principal
        ) as done:
            if done.replayed:
                return ResumeResult({"status": "resumed"}, replayed=True)
            self.started.set()
            if self.gate is not None:
                await self.gate.wait()
            if self.fail_with is not None:
                raise self.fail_with
            self.resumed.append((done.claims.thread_id, done.response))
            # The run moves on, as a runtime's does when it resumes.
            self.checkpoints.resolve(done.claims.thread_id, done.claims.interrupt_id)
        return ResumeResult({"status": "resumed", "thread_id": done.claims.thread_id})

    def router(self, **options: Any) -> Any:
        return resume_router(self.tokens, authenticate=authenticate, resume=self.resume, **options)

    async def mint(
        self,
        thread_id: str = "t-1",
        *,
        kind: str = "refund",
        scope: Scope = ACME,
        payload: Any = None,
        **options: Any,
    ) -> str:
        """Mint a token of one kind, with its usual payload or ``payload`` (dict kinds)."""
        if kind == "langchain":
            event = await self.tokens.mint(
                LANGCHAIN_REVIEW,
                langchain_review() if payload is None else payload,
                scope=scope,
                thread_id=thread_id,
                run_id="r-1",
                **options,
            )
        elif kind == "refund":
            event = await self.tokens.mint(
                REFUND,
                Refund("order-1", 1250),
                scope=scope,
                thread_id=thread_id,
                run_id="r-1",
                **options,
            )
        elif kind == "batched":
            event = await self.tokens.mint(
                BATCHED,
                batched_review() if payload is None else payload,
                scope=scope,
                thread_id=thread_id,
                run_id="r-1",
                **options,
            )
        elif kind == "questions":
            event = await self.tokens.mint(
                kinds.QUESTION,
                questions(),
                scope=scope,
                thread_id=thread_id,
                run_id="r-1",
                **options,
            )
        elif kind == "approval":
            event = await self.tokens.mint(
                kinds.APPROVAL,
                approval(),
                scope=scope,
                thread_id=thread_id,
                run_id="r-1",
                **options,
            )
        else:
            event = await self.tokens.mint(
                TOOL_APPROVAL,
                tool_call() if payload is None else payload,
                scope=scope,
                thread_id=thread_id,
                run_id="r-1",
                **options,
            )
        return event.token


def make_app(clock: Callable[[], float] | None = None) -> App:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        store = MemoryStore()
    checkpoints = MemoryCheckpoints()
    options: dict[str, Any] = {} if clock is None else {"clock": clock}
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.generate()), store=store, checkpoints=checkpoints, **options
    )
    tokens.register(REFUND)
    tokens.register(TOOL_APPROVAL)
    kinds.register(tokens)
    tokens.register(BATCHED)
    tokens.register(LANGCHAIN_REVIEW)
    return App(tokens, checkpoints)


def free_socket() -> socket.socket:
    """A listening socket on a free loopback port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextlib.contextmanager
def serve_in_thread(build: Callable[[], tuple[Any, Any]]) -> Iterator[tuple[str, Any]]:
    """Serve an ASGI app with uvicorn on a free loopback port, in a thread of its own.

    ``build()`` returns the ASGI app and a context for the test; it runs in the server's
    thread, on its event loop. Yields the base URL and the context.
    """
    sock = free_socket()
    port = sock.getsockname()[1]
    built: dict[str, Any] = {}
    ready = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        async def main() -> None:
            app, built["context"] = build()
            # log_config=None: uvicorn's loggers propagate, so tests see its access log too.
            config = uvicorn.Config(app, log_level="info", log_config=None, lifespan="off")
            server = uvicorn.Server(config)
            built["server"] = server
            task = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started and not task.done():  # noqa: ASYNC110 - uvicorn sets a flag
                await asyncio.sleep(0.01)
            ready.set()
            await task

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to the test
            failed.append(exc)
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "uvicorn did not start"
    assert not failed, failed
    try:
        yield f"http://127.0.0.1:{port}", built["context"]
    finally:
        built["server"].should_exit = True
        thread.join(30)
        sock.close()
