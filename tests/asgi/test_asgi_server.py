"""The router behind a real uvicorn server on a free loopback port, and what reaches the logs."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from asgi_support import ACME, AUTH, REFUND, TOOL_APPROVAL, App, Refund, make_app, serve_in_thread
from starlette.applications import Starlette
from starlette.routing import Mount

from pausetoken.asgi import CSRF_HEADER, TOKEN_HEADER

if TYPE_CHECKING:
    from collections.abc import Iterator

# Unique strings in the payload and the answers: none may reach a log record.
PAYLOAD_CANARY = "order-canary-91c2e"
ANSWER_CANARY = "note-canary-7f3ab"


@pytest.fixture
def served() -> Iterator[tuple[str, App]]:
    def build() -> tuple[Any, App]:
        app = make_app()
        app.loop = asyncio.get_running_loop()
        return Starlette(routes=[Mount("/pauses", app=app.router())]), app

    with serve_in_thread(build) as (url, app):
        yield f"{url}/pauses", app


def _mint(served: tuple[str, App], thread_id: str, kind: str = "refund") -> str:
    _url, app = served

    async def mint() -> str:
        if kind == "refund":
            event = await app.tokens.mint(
                REFUND, Refund(PAYLOAD_CANARY, 1250), scope=ACME, thread_id=thread_id, run_id="r"
            )
        else:
            event = await app.tokens.mint(
                TOOL_APPROVAL,
                {"type": "tool_approval", "name": "x", "args": {"id": PAYLOAD_CANARY}},
                scope=ACME,
                thread_id=thread_id,
                run_id="r",
            )
        return event.token

    return app.call(mint())


def test_answers_over_real_http_and_no_token_or_answer_is_logged(
    served: tuple[str, App], caplog: pytest.LogCaptureFixture
) -> None:
    url, app = served
    caplog.set_level(logging.DEBUG)
    tokens = [_mint(served, f"t-{n}") for n in range(3)]
    yes = {"approved": True, "note": ANSWER_CANARY}
    no = {"approved": False, "note": ANSWER_CANARY + "-other"}
    with httpx.Client(base_url=url, headers=AUTH, timeout=10) as client:
        first = client.post("/resume", json={"answer": yes}, headers={TOKEN_HEADER: tokens[0]})
        assert first.status_code == 200
        assert first.json()["result"]["status"] == "resumed"
        assert client.post("/resume", json={"token": tokens[0], "answer": yes}).json()["replayed"]
        conflict = client.post("/resume", json={"token": tokens[0], "answer": no})
        assert (conflict.status_code, conflict.json()["code"]) == (409, "already_redeemed")
        invalid = client.post("/resume", json={"token": tokens[1], "answer": {"approved": 3}})
        assert invalid.status_code == 422
        forged = client.post("/resume", json={"token": tokens[1][:-3] + "AAA", "answer": yes})
        assert forged.status_code == 401
        foreign = client.post(
            "/resume",
            json={"token": tokens[1], "answer": yes},
            headers={"Authorization": "Bearer key-globex"},
        )
        assert foreign.status_code == 403
        app.fail_with = RuntimeError(f"boom {ANSWER_CANARY}")
        failed = client.post("/resume", json={"token": tokens[2], "answer": yes})
        assert (failed.status_code, failed.json()["code"]) == (500, "resume_failed")
        app.fail_with = None
        page = client.get("/approve")
        csrf = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
        assert csrf is not None
        headers = {CSRF_HEADER: csrf[1], "Origin": url.rsplit("/pauses", 1)[0]}
        described = client.post("/approve/describe", json={"token": tokens[2]}, headers=headers)
        assert described.json()["payload"]["order_id"] == PAYLOAD_CANARY
        answered = client.post(
            "/approve/answer", json={"token": tokens[2], "answer": yes}, headers=headers
        )
        assert answered.status_code == 200
        again = client.post("/approve/describe", json={"token": tokens[2]}, headers=headers)
        assert again.json()["code"] == "already_redeemed"
        bad_json = client.post(
            "/resume",
            content=tokens[1].encode() + b"{",
            headers={"Content-Type": "application/json"},
        )
        assert bad_json.status_code == 400

    records = caplog.records
    assert any(r.name == "uvicorn.access" for r in records), "the access log was not captured"
    assert any(r.name == "pausetoken.asgi" for r in records)
    assert any(r.name == "pausetoken.service" for r in records)
    secrets = [*tokens, *(t.split(".")[1] for t in tokens), *(t.split(".")[2] for t in tokens)]
    secrets += [PAYLOAD_CANARY, ANSWER_CANARY]
    leaks = []
    for record in records:
        text = record.getMessage() + " " + repr(vars(record))
        leaks += [(record.name, s[:8]) for s in secrets if s in text]
    assert leaks == []
