"""A refund tool on an MCP server that runs once, after its approver answered on the page.

An in-process MCP client calls ``refund``; the server's handler awaits pausetoken's guard
(`ToolApprovals`). The first round answers with a URL-mode elicitation: a link to
pausetoken's approval page, bound to the approver (alice), who signs in there. The page
is driven the way a browser would; then the client retries the call with the sealed
``requestState`` and the tool runs, once. No network: the page runs on an in-process ASGI
transport and the requestState is sealed with `PauseTokenStateCodec` on a pausetoken key
ring. Tokens, redemptions and the tool calls are kept in SQLite files in a temporary
directory. Each step checks itself and prints PASS or FAIL. From a checkout:

    uv run --no-project --with "./sdk[cli,http]" --with "./backends/sqlalchemy[sqlite]" \\
        --with "./backends/mcp[sqlite]" --with httpx python examples/mcp_approval.py

The exit status is 0 only if every step behaved as expected.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

from pausetoken import JoseSigner, KeyRing, PauseTokens, Scope, open_store
from pausetoken.asgi import CSRF_HEADER, Caller, resume_router
from pausetoken.exceptions import NotAuthenticated, PauseTokenError
from pausetoken_mcp import (
    ELICITATION_KEY,
    Approved,
    PauseTokenStateCodec,
    Pending,
    SQLToolCalls,
    ToolApprovals,
    ToolCallCheckpoints,
    as_tool_errors,
)

if TYPE_CHECKING:
    from starlette.requests import Request

ORIGIN = "https://app.example"
ACME = Scope("acme")
ARGS = {"order": "order-1", "amount_cents": 1250}
# Who is signed in on the page, by session cookie: the app's own login, really.
SESSIONS = {"s-alice": "alice", "s-mallory": "mallory"}

refunds_paid: list[tuple[str, int]] = []
failures: list[str] = []


def check(step: str, ok: bool) -> None:  # noqa: FBT001 - a step and whether it held
    print(("PASS " if ok else "FAIL ") + step)
    if not ok:
        failures.append(step)


def build_server(service: PauseTokens, codec: PauseTokenStateCodec) -> MCPServer:
    """The MCP server: its requestState sealed on the ring, its refund tool guarded."""
    server = MCPServer(
        "refunds",
        request_state_security=RequestStateSecurity(codec=codec),
        log_level="WARNING",
    )
    approvals = ToolApprovals(service, approval_url=f"{ORIGIN}/approve")

    @server.tool()
    async def refund(order: str, amount_cents: int, ctx: Context) -> str | InputRequiredResult:
        """Refund an order, once a manager approved it."""
        args = {"order": order, "amount_cents": amount_cents}

        async def pay() -> None:  # the side effect the approval guards
            refunds_paid.append((order, amount_cents))

        with as_tool_errors():  # a refusal reaches the client as "[code] detail"
            step = await approvals.gate(
                ctx.request_state, ctx.input_responses, "refund", args, scope=ACME, approver="alice"
            )
            if isinstance(step, Pending):
                return step.result
            if not isinstance(step, Approved):
                return f"not refunded: {step.message or 'rejected'}"
            async with step.redeem() as run:
                await run.run(pay())
        return f"refunded {amount_cents} cents on {order}"

    return server


async def authenticate(request: Request) -> Caller:
    user = SESSIONS.get(request.cookies.get("session", ""))
    if user is None:
        raise NotAuthenticated
    return Caller(ACME, principal=user)


def text(result: object) -> str:
    if not isinstance(result, CallToolResult):
        return f"not a final result: {type(result).__name__}"
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


def approval_link(first: object) -> tuple[str, str]:
    """The approval link and the request state of a first round."""
    if not isinstance(first, InputRequiredResult) or first.request_state is None:
        raise SystemExit("FAIL: the first round did not ask for input")
    link = (first.input_requests or {})[ELICITATION_KEY].params
    if not isinstance(link, ElicitRequestURLParams):
        raise SystemExit("FAIL: the first round did not ask for a URL")
    return link.url, first.request_state


async def approve_on_the_page(page: Any, link: str, approve_early: Any) -> None:
    """Drive the approval page the way a browser does: anonymous, mallory, then alice."""
    token = link.split("#token=", 1)[1]  # what the page's script reads
    transport = httpx.ASGITransport(app=page)
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN) as browser:
        served = re.search(
            r'name="pausetoken-csrf" content="([^"]+)"', (await browser.get("/approve")).text
        )
        headers = {CSRF_HEADER: served[1] if served else "", "Origin": ORIGIN}
        answer = {"token": token, "answer": {"type": "approve"}}

        anonymous = await browser.post("/approve/answer", json=answer, headers=headers)
        print("  refused:", anonymous.json()["code"], anonymous.status_code)
        check("the link alone answers nothing", anonymous.json()["code"] == "not_authenticated")
        browser.cookies.set("session", "s-mallory")
        mallory = await browser.post("/approve/answer", json=answer, headers=headers)
        print("  refused:", mallory.json()["code"], mallory.status_code)
        check("another signed-in person is refused", mallory.json()["code"] == "principal_mismatch")

        await approve_early()

        browser.cookies.set("session", "s-alice")
        shown = await browser.post("/approve/describe", json={"token": token}, headers=headers)
        action = shown.json()["payload"]["action"]
        check("the page shows alice the tool call", action["args"] == ARGS)
        done = await browser.post("/approve/answer", json=answer, headers=headers)
        check("alice approves on the page", done.json()["result"] == {"decision": "approve"})


async def main(directory: Path) -> None:
    store = open_store(f"sqlite+aiosqlite:///{directory / 'tokens.db'}")
    calls = SQLToolCalls(f"sqlite+aiosqlite:///{directory / 'calls.db'}")
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=store,
        checkpoints=ToolCallCheckpoints(calls, namespace="refunds"),
    )
    codec = PauseTokenStateCodec(KeyRing.generate("dir"))  # every worker loads this ring
    async with service, Client(build_server(service, codec)) as client:
        approvals = ToolApprovals(service, approval_url=f"{ORIGIN}/approve")
        page = resume_router(service, authenticate=authenticate, resume=approvals.answer_from_page)
        first = await client.session.call_tool("refund", ARGS, allow_input_required=True)
        link, state = approval_link(first)
        check("the first round asks for an approval by URL", link.startswith(f"{ORIGIN}/approve#"))
        check("the request state is sealed", "order-1" not in state)
        accepted: Any = {ELICITATION_KEY: ElicitResult(action="accept")}

        async def call(arguments: dict[str, Any]) -> object:
            return await client.session.call_tool(
                "refund",
                arguments,
                request_state=state,
                input_responses=accepted,
                allow_input_required=True,
            )

        async def approve_early() -> None:
            early = await call(ARGS)
            waiting = isinstance(early, InputRequiredResult) and not refunds_paid
            check("before the answer the call still waits, and nothing ran", waiting)

        await approve_on_the_page(page, link, approve_early)
        try:
            await call({**ARGS, "amount_cents": 999_999})
        except MCPError as exc:
            print("  refused:", exc.error.message)
        check("other arguments with the state are refused", not refunds_paid)

        second = await call(ARGS)
        ran_once = refunds_paid == [("order-1", 1250)]
        check(
            "the approved call runs the tool once", text(second).startswith("refunded") and ran_once
        )
        replay = await call(ARGS)
        print("  refused:", text(replay))
        check(
            "a replayed request state is refused", "[already_redeemed]" in text(replay) and ran_once
        )
    await calls.aclose()
    await store.aclose()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        try:
            asyncio.run(main(Path(directory)))
        except PauseTokenError as exc:
            print("FAIL: unexpected", exc.code)
            sys.exit(1)
    if failures:
        print(f"FAIL: {len(failures)} step(s) not as expected")
        sys.exit(1)
    print("PASS: every step as expected")
