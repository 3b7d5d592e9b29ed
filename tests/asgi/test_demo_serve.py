"""``pausetoken demo --serve`` end to end: the graph pauses, the page answers, it resumes."""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

import httpx
import pytest

from pausetoken._cli import main
from pausetoken.asgi import CSRF_HEADER
from pausetoken.exceptions import ConfigurationError
from pausetoken_langgraph import _command

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

LINK = re.compile(r"(http://127\.0\.0\.1:\d+)/approve#token=([A-Za-z0-9_\-.]+)")


def _stop(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait(30)
    assert process.stdout is not None
    process.stdout.close()


def _wait_for(lines: list[str], text: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline, f"{text!r} was not printed:\n{''.join(lines)}"
        time.sleep(0.05)


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAUSETOKEN_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "pausetoken", "demo", "--serve", "--dir", str(tmp_path), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "COLUMNS": "80"},
    )
    assert process.stdout is not None
    lines: list[str] = []
    found: list[re.Match[str]] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            match = LINK.search(line)
            if match and not found:
                found.append(match)
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(120) or not found:
        _stop(process)
        pytest.fail("no approval link was printed:\n" + "".join(lines))
    return process, found[0][1], found[0][2], lines


def _page_headers(client: httpx.Client, base: str) -> dict[str, str]:
    page = client.get("/approve")
    assert page.status_code == 200
    csrf = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
    assert csrf is not None
    return {CSRF_HEADER: csrf[1], "Origin": base}


def test_the_page_answers_the_paused_graph_and_the_demo_exits(tmp_path: Path) -> None:
    process, base, token, lines = _start(tmp_path)
    try:
        with httpx.Client(base_url=base, timeout=30) as client:
            headers = _page_headers(client, base)
            described = client.post("/approve/describe", json={"token": token}, headers=headers)
            assert described.status_code == 200, described.text
            payload = described.json()["payload"]
            assert payload["action"]["name"] == "issue_refund"
            assert payload["allowed_decisions"] == ["approve", "edit", "reject"]
            forbidden = client.post(
                "/approve/answer",
                json={"token": token, "answer": {"type": "respond", "message": "no"}},
                headers=headers,
            )
            assert (forbidden.status_code, forbidden.json()["code"]) == (422, "invalid_response")
            answered = client.post(
                "/approve/answer",
                json={"token": token, "answer": {"type": "approve"}},
                headers=headers,
            )
            assert answered.status_code == 200, answered.text
            assert answered.json() == {
                "replayed": False,
                "result": {
                    "order_id": payload["action"]["args"]["order_id"],
                    "amount": "42.00 EUR",
                    "status": "refunded",
                },
            }
        assert process.wait(60) == 0
    finally:
        _stop(process)
    output = "".join(lines)
    assert "the graph resumed and finished: 'refunded'" in output


def test_keep_serving_shows_the_link_answered_until_interrupted(tmp_path: Path) -> None:
    process, base, token, lines = _start(tmp_path, "--keep-serving")
    try:
        with httpx.Client(base_url=base, timeout=30) as client:
            headers = _page_headers(client, base)
            decision = {
                "type": "edit",
                "edited_action": {"name": "issue_refund", "args": {"amount": "21.00 EUR"}},
            }
            answered = client.post(
                "/approve/answer", json={"token": token, "answer": decision}, headers=headers
            )
            assert answered.json()["result"]["amount"] == "21.00 EUR"
        _wait_for(lines, "Still serving")
        with httpx.Client(base_url=base, timeout=30) as client:
            headers = _page_headers(client, base)
            again = client.post("/approve/describe", json={"token": token}, headers=headers)
            assert (again.status_code, again.json()["code"]) == (409, "already_redeemed")
        process.send_signal(signal.SIGINT)
        process.wait(60)
    finally:
        _stop(process)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--serve", "--port", "70000"], "--port takes 0"),
        (["--keep-serving"], "go with --serve"),
        (["--port", "8080"], "go with --serve"),
    ],
)
def test_serve_options_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    assert main(["demo", "--dir", str(tmp_path), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_serve_runs_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command hands its options to serve_demo; the flow itself is tested below.
    seen: dict[str, object] = {}

    async def fake_serve(**options: object) -> bool:
        seen.update(options)
        return True

    monkeypatch.setattr(_command, "serve_demo", fake_serve)
    argv = ["demo", "--serve", "--port", "8123", "--keep-serving", "--dir", str(tmp_path)]
    assert main(argv) == 0
    assert (seen["port"], seen["keep_serving"], seen["directory"]) == (8123, True, tmp_path)


# -- in-process: the same flow, measured by coverage -----------------------------------------


async def test_serve_demo_resumes_the_graph_with_a_reject(tmp_path: Path) -> None:
    from rich.console import Console

    from pausetoken_langgraph._serve import serve_demo

    links: asyncio.Queue[str] = asyncio.Queue()
    output = io.StringIO()
    demo = asyncio.create_task(
        serve_demo(
            directory=tmp_path,
            console=Console(file=output, width=100),
            on_link=links.put_nowait,
        )
    )
    link = await asyncio.wait_for(links.get(), 60)
    match = LINK.search(link)
    assert match is not None
    base, token = match[1], match[2]
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        page = await client.get("/approve")
        csrf = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
        assert csrf is not None
        headers = {CSRF_HEADER: csrf[1], "Origin": base}
        for wrong, field in (
            ({"type": "respond", "message": "no"}, "$.type"),
            (
                {"type": "edit", "edited_action": {"name": "other", "args": {}}},
                "$.edited_action.name",
            ),
            ({"type": "edit", "edited_action": {"name": "issue_refund"}}, "$.edited_action"),
            ({"type": "reject", "message": 7}, "$.message"),
        ):
            refused = await client.post(
                "/approve/answer", json={"token": token, "answer": wrong}, headers=headers
            )
            assert (refused.status_code, refused.json()["field"]) == (422, field)
        decision = {"type": "reject", "message": "not this time"}
        answered = await client.post(
            "/approve/answer", json={"token": token, "answer": decision}, headers=headers
        )
        assert answered.json()["result"]["status"] == "rejected"
    assert await asyncio.wait_for(demo, 60) is True
    assert "the graph resumed and finished: 'rejected'" in output.getvalue()
    assert token in output.getvalue()  # the link is printed for the person, and only there


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1"])  # noqa: S104 - refused, the point
async def test_serve_demo_listens_on_loopback_only(tmp_path: Path, host: str) -> None:
    from rich.console import Console

    from pausetoken_langgraph._serve import serve_demo

    with pytest.raises(ConfigurationError, match="loopback") as caught:
        await serve_demo(directory=tmp_path, console=Console(file=io.StringIO()), host=host)
    assert caught.value.code == "cli_usage"


async def test_serve_demo_says_when_its_port_is_taken(tmp_path: Path) -> None:
    from rich.console import Console

    from pausetoken_langgraph._serve import serve_demo

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ConfigurationError, match=f"--port {port}") as caught:
            await serve_demo(directory=tmp_path, console=Console(file=io.StringIO()), port=port)
    assert caught.value.code == "cli_usage"
