"""Database servers a test starts for itself, on free loopback ports, with data in a tmp dir.

The fault tests restart, kill and cut off these servers; the machine's shared servers
(PostgreSQL 5432, MariaDB 3306, Redis 6379) are never touched. Each server here is a
`PrivateServer`: started by a context manager, restartable (``restart(immediate=...)``),
and stopped (killed if need be) when the context ends, also when the test fails.
Redis servers and clusters come from `redis_servers`; nx-27017 (MongoDB's wire protocol)
from `nx_27017_server()`. `BlackHole` is a loopback TCP proxy that can stop forwarding.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import attrs
import pytest

from redis_servers import free_port

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "BlackHole",
    "PrivateServer",
    "free_port",
    "mariadb_server",
    "nx_27017_command",
    "nx_27017_server",
    "postgresql_server",
    "wait_for_port",
]

Popen = subprocess.Popen[bytes]

#: Seconds a private server may take to start (initdb and mariadb-install-db included).
START_S = 60.0


def wait_for_port(port: int, *, seconds: float = START_S, process: Popen | None = None) -> None:
    """Wait until something accepts connections on ``port``, or fail."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            pytest.fail(f"the server for port {port} exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    pytest.fail(f"nothing listened on port {port} within {seconds:g} s")


@attrs.define
class PrivateServer:
    """A running server: its URL and port, and how to restart and stop it."""

    url: str
    port: int
    start: Callable[[], Popen]
    process: Popen
    #: Signal for a fast (clean) shutdown; SIGKILL is the immediate one.
    stop_signal: int = signal.SIGTERM

    def stop(self, *, immediate: bool = False) -> None:
        """Stop the server (SIGKILL when ``immediate``) and reap it.

        A server started in a session of its own (`postgresql_server()`'s, whose backends are
        child processes) is killed with its whole process group, as a crash would.
        """
        with contextlib.suppress(ProcessLookupError):
            if immediate and os.getpgid(self.process.pid) == self.process.pid:
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.send_signal(signal.SIGKILL if immediate else self.stop_signal)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def resume(self) -> None:
        """Start the server again on the same port and data."""
        self.process = self.start()

    def restart(self, *, immediate: bool = False) -> None:
        """Stop and start again (SIGKILL first when ``immediate``)."""
        self.stop(immediate=immediate)
        self.resume()


def _as_user(user: str) -> dict[str, Any]:
    """Popen arguments that run a command as ``user`` when we are root (PostgreSQL refuses
    root). The process itself changes user (no ``runuser`` in between), so that signals
    sent to it reach the server."""
    if os.geteuid() != 0:
        return {}
    return {"user": user, "group": user, "extra_groups": []}


def _give_to(user: str, *paths: Path) -> None:
    if os.geteuid() == 0:
        for path in paths:
            shutil.chown(path, user, user)


def _tool(name: str) -> str:
    found = shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/usr/local/bin") / name) if p.exists()),
        None,
    )
    if found is None:
        pytest.fail(f"{name} must be installed for the fault tests")
    return found


@contextlib.contextmanager
def postgresql_server() -> Iterator[PrivateServer]:
    """A PostgreSQL server (``initdb`` + ``postgres``) as the ``postgres`` user; database ``test``.

    The URL is ``postgresql+asyncpg://postgres@127.0.0.1:<port>/test`` (trust authentication).
    Its data lives in a directory of its own under the system's temporary directory (pytest's
    are private to root, and the server runs as ``postgres``), removed at the end.
    """
    directory = Path(tempfile.mkdtemp(prefix="pausetoken-postgresql-"))
    directory.chmod(0o755)
    _give_to("postgres", directory)
    data = directory / "data"
    user = _as_user("postgres")
    subprocess.run(
        [_tool("initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"],
        check=True,
        capture_output=True,
        timeout=START_S,
        **user,
    )
    port = free_port()

    def start() -> Popen:
        options = [
            "-D", str(data), "-p", str(port), "-h", "127.0.0.1", "-k", str(directory),
            "-c", "fsync=off", "-c", "max_connections=60", "-c", "shared_buffers=16MB",
        ]  # fmt: skip
        log = (directory / "server.log").open("ab")
        process = subprocess.Popen(
            [_tool("postgres"), *options],
            stdout=log,
            stderr=log,
            start_new_session=True,
            **user,
        )
        log.close()
        _wait_for_postgresql(port, process)
        return process

    server = PrivateServer(
        url=f"postgresql+asyncpg://postgres@127.0.0.1:{port}/test",
        port=port,
        start=start,
        process=start(),
        stop_signal=signal.SIGINT,  # PostgreSQL's "fast" shutdown
    )
    try:
        createdb = [_tool("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        subprocess.run(
            [*createdb, "test"], check=True, capture_output=True, timeout=START_S, **user
        )
        yield server
    finally:
        server.stop(immediate=True)
        shutil.rmtree(directory, ignore_errors=True)


def _wait_for_postgresql(port: int, process: Popen) -> None:
    wait_for_port(port, process=process)
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        ready = subprocess.run(
            [_tool("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)],
            check=False,
            timeout=10,
        )
        if ready.returncode == 0:
            return
        time.sleep(0.05)
    pytest.fail(f"the private PostgreSQL on port {port} did not become ready")


@contextlib.contextmanager
def mariadb_server(directory: Path) -> Iterator[PrivateServer]:
    """A MariaDB server (``mariadb-install-db`` + ``mariadbd``) with database ``test``.

    Grant tables are skipped (any user connects); the URL is
    ``mysql+asyncmy://root@127.0.0.1:<port>/test``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "data"
    subprocess.run(
        [
            _tool("mariadb-install-db"),
            "--no-defaults",
            f"--datadir={data}",
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ],
        check=True,
        capture_output=True,
        timeout=START_S * 2,
    )
    (data / "test").mkdir(exist_ok=True)  # a database is a directory
    port = free_port()

    def start() -> Popen:
        options = [
            "--no-defaults", f"--datadir={data}", f"--port={port}", "--bind-address=127.0.0.1",
            f"--socket={directory / 'mysqld.sock'}", f"--pid-file={directory / 'mysqld.pid'}",
            "--user=root", "--skip-grant-tables", "--skip-name-resolve",
            "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
            "--innodb-flush-log-at-trx-commit=1", "--max-connections=100",
            f"--log-error={directory / 'server.log'}",
        ]  # fmt: skip
        process = subprocess.Popen(
            [_tool("mariadbd"), *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port(port, process=process)
        return process

    server = PrivateServer(
        url=f"mysql+asyncmy://root@127.0.0.1:{port}/test", port=port, start=start, process=start()
    )
    try:
        yield server
    finally:
        server.stop(immediate=True)


def nx_27017_command() -> str | None:
    """The nx-27017 command: beside this interpreter (a nox session), else on PATH."""
    beside = Path(sys.executable).parent / "nx-27017"
    return str(beside) if beside.exists() else shutil.which("nx-27017")


@contextlib.contextmanager
def nx_27017_server(directory: Path, *, database: str = "pausetoken") -> Iterator[PrivateServer]:
    """An nx-27017 (MongoDB wire protocol on SQLite) keeping its data in ``directory``."""
    command = nx_27017_command()
    if command is None:
        pytest.fail("nx-27017 must be installed for the MongoDB fault tests (pip install nx-27017)")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()

    def start() -> Popen:
        args = [command, "--db", str(directory / "data.db"), "--host", "127.0.0.1"]
        args += ["-p", str(port), "--log-file", str(directory / "server.log")]
        # Its own pid file: the default one in /tmp makes a second server refuse to start.
        args += ["--pid-file", str(directory / "server.pid")]
        log = (directory / "stdout.log").open("ab")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_for_port(port, process=process)
        return process

    server = PrivateServer(
        url=f"mongodb://127.0.0.1:{port}/{database}", port=port, start=start, process=start()
    )
    try:
        yield server
    finally:
        server.stop(immediate=True)


class BlackHole:
    """A loopback TCP proxy to ``target_port`` that can stop forwarding (a partition).

    While ``cut`` is set, new connections are accepted and then never answered, and bytes on
    open connections are dropped: the client sees neither data nor a reset, as behind a
    firewall that drops packets. Used as a context manager; it closes everything at the end.
    """

    def __init__(self, target_port: int) -> None:
        """Listen on a free loopback port (``port``) and forward to ``target_port``."""
        self.target_port = target_port
        self.cut = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closed.set()
        self._listener.close()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._sockets.append(client)
            if self.cut.is_set():
                continue  # accepted, never answered
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), 5)
            except OSError:
                client.close()
                continue
            self._sockets.append(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while not self._closed.is_set():
                data = source.recv(65536)
                if not data:
                    break
                if self.cut.is_set():
                    continue  # dropped on the floor
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
