"""Private Redis servers the slow tests start on free loopback ports (never the shared one)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def redis_binaries() -> tuple[str, str]:
    """``redis-server`` and ``redis-cli``, or fail: CI machines have both."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        pytest.fail("redis-server and redis-cli must be on PATH for the Redis server tests")
    return server, cli


def wait_ready(port: int, *, seconds: float = 20.0) -> None:
    """Wait until the server on ``port`` answers PING."""
    _, cli = redis_binaries()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done = subprocess.run(
            [cli, "-h", "127.0.0.1", "-p", str(port), "ping"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.stdout.strip() == "PONG":
            return
        time.sleep(0.05)
    pytest.fail(f"redis-server on port {port} did not answer within {seconds}s")


def start_server(directory: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    """A ``redis-server`` on ``port`` keeping its files in ``directory``."""
    server, _ = redis_binaries()
    directory.mkdir(parents=True, exist_ok=True)
    args = [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)]
    process = subprocess.Popen(
        [*args, "--save", "", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_ready(port)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and reap it."""
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait(timeout=10)


@contextlib.contextmanager
def durable_server(directory: Path) -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    """A server with ``appendonly yes`` and ``appendfsync always``; stopped afterwards.

    Yields its port and a one-item list holding the process, which a test may replace
    after a restart (the list is what is stopped at the end).
    """
    port = free_port()
    running = [start_server(directory, port, *DURABLE)]
    try:
        yield port, running
    finally:
        for process in running:
            stop(process)


#: The configuration the docs recommend: every acknowledged write is on disk.
DURABLE = ("--appendonly", "yes", "--appendfsync", "always")
