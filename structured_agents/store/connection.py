"""Database URLs and engines: PostgreSQL through psycopg 3, or an embedded SQLite file.

``postgres://`` and ``postgresql://`` URLs are rewritten to the ``postgresql+psycopg`` driver.
With no URL the store is embedded: a SQLite file in the user data directory
(``platformdirs.user_data_dir("structured-agents")``).

SQLite is tuned for several threads and processes sharing one file: WAL journal, foreign
keys on, a 30 s busy timeout, and write transactions opened with ``BEGIN IMMEDIATE`` so a
transaction that reads before it writes cannot fail on a lock upgrade.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from structured_agents.paths import data_dir
from structured_agents.store.errors import StoreError

__all__ = ["WRITE_OPTION", "default_url", "make_engine", "normalize_url"]

DB_FILENAME = "structured_agents.db"
WRITE_OPTION = "sa_write"
"""Execution option marking an engine whose transactions write (``BEGIN IMMEDIATE`` on SQLite)."""
SQLITE_BUSY_TIMEOUT_S = 30.0


def default_url() -> str:
    """The embedded database: a SQLite file in the user data directory (created if missing)."""
    directory = data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{directory / DB_FILENAME}"


def normalize_url(url: str) -> URL:
    """Parse ``url`` and pick the psycopg 3 driver for PostgreSQL; refuse other databases."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"invalid database URL {url!r}: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend in ("postgres", "postgresql"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            raise StoreError(
                f"database URL {url!r}: in-memory SQLite cannot be shared by threads or workers; "
                "use a file (sqlite:///path/to/file.db)"
            )
        return parsed
    raise StoreError(f"database URL {url!r}: only postgresql and sqlite are supported, got {backend!r}")


def _tune_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_engine(url: URL, *, echo: bool = False) -> Engine:
    """An engine for a normalized URL (see :func:`normalize_url`)."""
    if url.get_backend_name() == "sqlite":
        Path(url.database or "").parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            echo=echo,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
        )
        _tune_sqlite(engine)
        return engine
    return create_engine(url, echo=echo, pool_pre_ping=True)
