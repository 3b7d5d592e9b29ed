"""The HTTP page's recipe served by ``uvicorn --workers 3``: answers cross the workers.

docs/http.md ("Serving it") shows an application whose service and router are built in its
lifespan, once per worker process, with Starlette and with FastAPI. This test writes those
very blocks to ``app.py`` and ``fastapi_app.py``, serves each with three uvicorn workers on a
free loopback port (a shared SQLite store and checkpointer, one key file), and answers
approval pages through whichever worker takes each request: every page served by one worker
must be answerable through the others.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Final

import httpx
import pytest
from asgi_support import free_socket

from docs_blocks import blocks, write_key_file
from pausetoken.asgi import CSRF_HEADER

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow

WORKERS: Final = 3
ALICE: Final = {"Authorization": "Bearer key-of-alice"}

# Tells which worker process answered: a header added around the application, as is.
TAGGED: Final = """
import os

from {module} import app as application


async def app(scope, receive, send):
    async def tagged(message):
        if message["type"] == "http.response.start":
            worker = (b"x-worker", str(os.getpid()).encode())
            message = {**message, "headers": [*message.get("headers", []), worker]}
        await send(message)

    await application(scope, receive, tagged if scope["type"] == "http" else send)
"""


def _recipe(module: str) -> str:
    start = f'"""{module}.py:'
    [found] = [b.code for b in blocks("docs/http.md") if b.code.startswith(start)]
    return found


@contextlib.contextmanager
def _uvicorn(directory: Path) -> Iterator[str]:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()  # uvicorn binds it again; a race with another binder is unlikely on loopback
    env = {name: value for name, value in os.environ.items() if not name.startswith("PAUSETOKEN")}
    env |= {
        "PAUSETOKEN_STORE_URL": f"sqlite+aiosqlite:///{directory / 'tokens.db'}",
        "PAUSETOKEN_KEYS_FILE": str(write_key_file(directory / "keys.json")),
        "CHECKPOINTS_DB": str(directory / "checkpoints.db"),
    }
    command = [sys.executable, "-m", "uvicorn", "tagged:app", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", str(WORKERS), "--log-level", "warning"]
    log = (directory / "uvicorn.log").open("wb")
    server = subprocess.Popen(command, cwd=directory, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        seen: set[str] = set()
        # Ready once every worker has answered (each ran the lifespan).
        while len(seen) < WORKERS:
            assert server.poll() is None, (directory / "uvicorn.log").read_text()
            assert time.monotonic() < deadline, "uvicorn's workers did not all start"
            with contextlib.suppress(httpx.TransportError):
                seen.add(httpx.get(f"{url}/pauses/openapi.json", timeout=5).headers["x-worker"])
            time.sleep(0.05)
        yield url
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        log.close()


def _fresh(url: str) -> httpx.Client:
    """A client without kept-alive connections: each request may reach another worker."""
    return httpx.Client(
        base_url=url, headers=ALICE, timeout=20, limits=httpx.Limits(max_keepalive_connections=0)
    )


@pytest.mark.parametrize("module", ["app", "fastapi_app"], ids=["starlette", "fastapi"])
def test_pages_served_by_one_worker_are_answered_through_the_others(
    module: str, tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text(_recipe("app"), encoding="utf-8")
    if module != "app":
        (tmp_path / f"{module}.py").write_text(_recipe(module), encoding="utf-8")
    (tmp_path / "tagged.py").write_text(TAGGED.replace("{module}", module), encoding="utf-8")
    with _uvicorn(tmp_path) as url, _fresh(url) as client:
        # The page's anti-forgery value as served by different workers (which worker takes
        # a connection is the kernel's choice: ask until two have served the page).
        served: dict[str, str] = {}
        for _ in range(300):
            page = client.get("/pauses/approve")
            csrf = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
            assert csrf is not None
            served.setdefault(page.headers["x-worker"], csrf[1])
            if len(served) == WORKERS:
                break
        assert len(served) >= 2, "one worker served every page"
        pages = sorted(served.items())
        crossed, results = 0, []
        for n in range(6):
            started = client.post("/refunds", json={"order_id": f"o-{n}"})
            assert started.status_code == 200, started.text
            token = started.json()["link"].split("#token=")[1]
            # Each request carries a value some worker served; whichever takes it answers.
            served_by, csrf = pages[n % len(pages)]
            headers = {CSRF_HEADER: csrf, "Origin": url}
            shown = client.post("/pauses/approve/describe", json={"token": token}, headers=headers)
            assert shown.status_code == 200, shown.text
            crossed += shown.headers["x-worker"] != served_by
            served_by, csrf = pages[(n + 1) % len(pages)]
            answered = client.post(
                "/pauses/approve/answer",
                json={"token": token, "answer": {"approved": n % 2 == 0}},
                headers={CSRF_HEADER: csrf, "Origin": url},
            )
            assert answered.status_code == 200, answered.text
            crossed += answered.headers["x-worker"] != served_by
            results.append(answered.json()["result"]["status"])

    assert results == ["refunded", "rejected"] * 3
    assert crossed >= 3, "the requests never left the worker that served the page"
