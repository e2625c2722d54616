"""Store fixtures: a fresh store per test, on every implementation of the seam.

``store`` runs a test three times: on SQLite, on PostgreSQL (``pg_url``, from
``tests/conftest.py``, asked for only then) and on the in-memory :class:`MemoryStore`, so the
SQL store and the memory store are held to one contract. Tests about SQL itself (the schema,
migrations, raw queries) take ``sql_store``, a migrated :class:`SqlStore` on each dialect, or
``db_url``, an empty database of each dialect.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from structured_agents.store import MemoryStore, SqlStore, Store

SQL_DIALECTS = ("sqlite", "postgresql")


def _url(request: pytest.FixtureRequest, dialect: str, tmp_path: Path) -> str:
    if dialect == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=SQL_DIALECTS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database of each dialect."""
    return _url(request, request.param, tmp_path)


@pytest.fixture
def sql_store(db_url: str) -> Iterator[SqlStore]:
    """A migrated SQL store on ``db_url``: for tests of what only SQL serves."""
    with SqlStore(db_url) as opened:
        yield opened


@pytest.fixture(params=[*SQL_DIALECTS, "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store: a migrated SQL store of each dialect, then a memory store."""
    opened: Store = (
        MemoryStore() if request.param == "memory" else SqlStore(_url(request, request.param, tmp_path))
    )
    with opened:
        yield opened
