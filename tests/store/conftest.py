"""Store fixtures: a fresh database per test on both dialects.

``db_url`` runs a test once on SQLite and once on PostgreSQL (``pg_url``, from
``tests/conftest.py``); ``store`` is a migrated :class:`Store` on ``db_url``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from structured_agents.store import SqlStore, Store


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database of each dialect."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A migrated store on ``db_url``."""
    with SqlStore(db_url) as opened:
        yield opened
