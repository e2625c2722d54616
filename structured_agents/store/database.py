"""The connection layer under the store: engine, sessions, dialect-specific INSERT.

Sessions come from two ``sessionmaker`` factories over one engine (thread-safe: each call
opens its own short session); the writer's transactions start with ``BEGIN IMMEDIATE`` on
SQLite. Every session is used inside :func:`~structured_agents.store.converting.converting`, so
no SQLAlchemy error leaves the store unconverted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

from sqlalchemy import Engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from structured_agents.store.connection import WRITE_OPTION, default_url, make_engine, normalize_url
from structured_agents.store.converting import converting
from structured_agents.store.migrate import upgrade_engine

__all__ = ["Database"]

Insert = postgresql.Insert | sqlite.Insert


class Database:
    """An open database: engine, session factories, and the schema migrated to the newest revision."""

    def __init__(self, url: str | None = None, *, migrate: bool = True, echo: bool = False) -> None:
        """Open ``url`` (default: the embedded SQLite file) and, with ``migrate``, upgrade its schema."""
        self._url = normalize_url(url or default_url())
        with converting(f"open database {self.url}"):
            self._engine = make_engine(self._url, echo=echo)
        self._reader = sessionmaker(bind=self._engine, expire_on_commit=False)
        self._writer = sessionmaker(
            bind=self._engine.execution_options(**{WRITE_OPTION: True}), expire_on_commit=False
        )
        if migrate:
            upgrade_engine(self._engine)

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return self._url.render_as_string(hide_password=True)

    @property
    def dialect(self) -> str:
        """``postgresql`` or ``sqlite``."""
        return self._engine.dialect.name

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, for queries the store has no method for."""
        return self._engine

    def close(self) -> None:
        """Close every pooled connection."""
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @contextmanager
    def _read(self, action: str) -> Iterator[Session]:
        with converting(action), self._reader() as session:
            yield session

    @contextmanager
    def _write(self, action: str) -> Iterator[Session]:
        with converting(action), self._writer() as session, session.begin():
            yield session

    def _insert(self, table: Any) -> Insert:
        """``INSERT`` with ``ON CONFLICT`` support for the connected dialect."""
        if self.dialect == "postgresql":
            return postgresql.insert(table)
        return sqlite.insert(table)
