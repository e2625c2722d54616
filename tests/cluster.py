"""Real services for the distributed tests: redis-server, and Celery workers as subprocesses.

Each process runs in its own session (process group), so a test can SIGKILL a worker with
its pool children, as a crash would, and the fixtures' finalizers can always kill what is
left. A missing ``redis-server`` fails the tests: they never skip. ``pg_stop`` and
``pg_start`` take the session's PostgreSQL server (``tests/services.py``) down and bring it
back on the same data directory and port.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import redis
from services import RUN_AS, PostgresServer

__all__ = ["WORKER_SETTINGS", "RedisServer", "WorkerProcess", "free_port", "pg_start", "pg_stop", "wait_for"]

SA = Path(sys.executable).with_name("sa")
WORKER_SETTINGS = {
    "SA_ENGINE__MAX_BATCH_SIZE": "16",
    "SA_WORKERS__BATCH_WAIT_S": "0.05",
    "SA_WORKERS__MAX_ATTEMPTS": "3",
    "SA_WORKERS__RETRY_BACKOFF_S": "0.2",
    "SA_WORKERS__RETRY_BACKOFF_MAX_S": "1",
    "SA_WORKERS__VISIBILITY_TIMEOUT_S": "8",
    "SA_WORKERS__STALE_AFTER_S": "12",
    "SA_WORKERS__SWEEP_INTERVAL_S": "3",
    "SA_WORKERS__TOOL_TIME_LIMIT_S": "60",
}
"""Worker settings of the test cluster (and the distributed benchmark): short timeouts and sweeps."""


def free_port() -> int:
    """A TCP port free on localhost right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, check: Callable[[], bool], timeout: float, interval: float = 0.2) -> None:
    """Poll ``check()`` until it is true; AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def _kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


class RedisServer:
    """A redis-server with an append-only file (fsync always), restartable on the same port."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).is_file():
            raise RuntimeError("redis-server not found: install it (apt-get install redis-server)")
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The broker URL."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers."""
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)]
        command += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        client = redis.Redis(port=self.port)

        def answers() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for("redis-server", answers, 20)

    def wipe(self) -> None:
        """Delete the data of a stopped server (its append-only file), so that it starts empty:
        every message, queue binding and unacknowledged delivery is lost."""
        if self.process is not None:
            raise RuntimeError("stop redis-server before wiping its data")
        shutil.rmtree(self.directory / "appendonlydir", ignore_errors=True)  # Redis 7
        for name in ("appendonly.aof", "dump.rdb"):  # Redis 6 and older; snapshots
            (self.directory / name).unlink(missing_ok=True)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL)."""
        if self.process is None:
            return
        _kill_group(self.process, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            _kill_group(self.process, signal.SIGKILL)
            self.process.wait(10)
        self.process = None


def _pg_ctl(server: PostgresServer, *args: str) -> None:
    command = [str(server.bin_dir / "pg_ctl"), "-D", str(server.data_dir / "data"), *args]
    if server.as_root:  # PostgreSQL refuses to run as root (see tests/services.py)
        command = ["runuser", "-u", RUN_AS, "--", *command]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(
            f"pg_ctl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
        )


def pg_stop(server: PostgresServer, mode: str = "fast") -> None:
    """Stop the PostgreSQL server (``fast``: its clients are disconnected; ``immediate``: as a
    crash, recovered from the WAL on the next start) and wait until it is down."""
    _pg_ctl(server, "-m", mode, "-w", "stop")


def pg_start(server: PostgresServer) -> None:
    """Start a stopped PostgreSQL server again, on the same data directory and port, and wait
    until it accepts connections. ``pg_ctl restart`` starts a stopped server too, with the
    options of its last start (``postmaster.opts``: port, socket directory, settings)."""
    _pg_ctl(server, "-l", str(server.data_dir / "log"), "-w", "restart")


class WorkerProcess:
    """``sa worker gpu|cpu`` in its own process group, output in a log file."""

    def __init__(self, kind: str, env: Mapping[str, str], log: Path, *args: str) -> None:
        self.kind = kind
        self.env = dict(env)
        self.log = log
        self.args = args
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> None:
        """Start the worker and wait until Celery says it is ready."""
        offset = self.log.stat().st_size if self.log.exists() else 0
        out = self.log.open("ab")
        command = [str(SA), "worker", self.kind, "--loglevel=INFO", *self.args]
        self.process = subprocess.Popen(
            command, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )

        def ready() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"worker {self.kind} exited:\n{self.tail()}")
            return b" ready." in self.log.read_bytes()[offset:]

        wait_for(f"worker {self.kind} to be ready", ready, timeout)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the worker and its pool, and reap it."""
        if self.process is None:
            return
        _kill_group(self.process, sig)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            _kill_group(self.process, signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def stop(self) -> None:
        """Warm shutdown (SIGTERM), SIGKILL if it lingers."""
        self.kill(signal.SIGTERM)

    def tail(self, lines: int = 40) -> str:
        """The end of the worker's log."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])
