"""Private Redis servers the slow tests start on free loopback ports (never the shared one)."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import attrs
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


def free_cluster_port() -> int:
    """A port a cluster node can use: free, at most 55535, with its bus port (+10000) free."""
    for _ in range(200):
        port = secrets.randbelow(25_000) + 20_000
        with contextlib.ExitStack() as stack:
            try:
                for candidate in (port, port + 10_000):
                    sock = stack.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return port
    pytest.fail("no free pair of loopback ports for a cluster node")  # pragma: no cover


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


@contextlib.contextmanager
def redis_cluster(directory: Path, *, masters: int = 3, replicas: int = 1) -> Iterator[list[int]]:
    """A Redis Cluster of ``masters`` masters with ``replicas`` replicas each; its ports.

    Started on free loopback ports, formed with ``redis-cli --cluster create``, and stopped
    (every process killed) afterwards. The first ``masters`` ports are the masters.
    """
    with private_cluster(directory, masters=masters, replicas=replicas) as cluster:
        yield cluster.ports


@attrs.define
class PrivateCluster:
    """A running Redis Cluster a test started: its nodes, and how to stop and freeze them.

    ``processes[i]`` serves ``ports[i]`` with its files (``nodes.conf``, the append-only file
    when ``durable``) in ``directory / str(port)``; `restart_node()` starts a node again on
    them, so it rejoins the cluster as the node it was.
    """

    directory: Path
    ports: list[int]
    node_options: tuple[str, ...]
    processes: list[subprocess.Popen[bytes]] = attrs.field(factory=list)

    @property
    def url(self) -> str:
        """A ``redis+cluster://`` URL seeded with the masters."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports) + "/"

    def start_node(self, index: int) -> subprocess.Popen[bytes]:
        """Start node ``index`` on its port and files; wait until it answers."""
        port = self.ports[index]
        config = str(self.directory / str(port) / "nodes.conf")
        options = (*self.node_options, "--cluster-config-file", config)
        return start_server(self.directory / str(port), port, *options)

    def restart_node(self, index: int) -> None:
        """Start node ``index`` again after it was stopped."""
        self.processes[index] = self.start_node(index)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Every node stopped with SIGSTOP (connections stay open and go unanswered, as
        behind a firewall that drops packets), and continued at the end."""
        for process in self.processes:
            process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            for process in self.processes:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGCONT)


@contextlib.contextmanager
def private_cluster(
    directory: Path, *, masters: int = 3, replicas: int = 1, durable: bool = False
) -> Iterator[PrivateCluster]:
    """A Redis Cluster of ``masters`` masters with ``replicas`` replicas each.

    Started on free loopback ports, formed with ``redis-cli --cluster create``, and stopped
    (every process killed) afterwards. The first ``masters`` nodes are the masters. With
    ``durable``, every node runs with `DURABLE` (each acknowledged write on its disk).
    """
    _, cli = redis_binaries()
    ports: list[int] = []
    while len(ports) < masters * (1 + replicas):
        port = free_cluster_port()
        if port not in ports:
            ports.append(port)
    persistence = DURABLE if durable else ("--appendonly", "no")
    cluster = PrivateCluster(
        directory,
        ports,
        (*persistence, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000"),
    )
    try:
        for index in range(len(ports)):
            cluster.processes.append(cluster.start_node(index))
        nodes = [f"127.0.0.1:{port}" for port in ports]
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *nodes,
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            capture_output=True,
            check=True,
            timeout=60,
        )
        for port in ports:
            wait_cluster_ok(port)
        yield cluster
    finally:
        for process in cluster.processes:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGCONT)
            stop(process)


def wait_cluster_ok(port: int, *, seconds: float = 30.0) -> None:
    """Wait until the node on ``port`` reports ``cluster_state:ok``."""
    _, cli = redis_binaries()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done = subprocess.run(
            [cli, "-h", "127.0.0.1", "-p", str(port), "cluster", "info"],
            capture_output=True,
            text=True,
            check=False,
        )
        if "cluster_state:ok" in done.stdout:
            return
        time.sleep(0.1)
    pytest.fail(f"the Redis Cluster node on port {port} was not ok within {seconds}s")
