"""``pausetoken demo --serve`` end to end: the graph pauses, the page answers, it resumes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

import httpx
import pytest

from pausetoken.asgi import CSRF_HEADER

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
        (["--port", "70000"], "--port takes 0"),
        (["--keep-serving"], "go with --serve"),
    ],
)
def test_serve_options_are_checked(tmp_path: Path, arguments: list[str], message: str) -> None:
    args = [sys.executable, "-m", "pausetoken", "demo", "--dir", str(tmp_path), *arguments]
    if arguments[0] == "--port":
        args.insert(4, "--serve")
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert message in done.stdout + done.stderr
