"""Store fixtures: a PostgreSQL server for the session, and a fresh database per test on both dialects.

``pg_url`` is an empty PostgreSQL database; ``db_url`` runs a test once on SQLite and once on
PostgreSQL; ``store`` is a migrated :class:`Store` on ``db_url``. PostgreSQL starts only when a
test asks for it, and a missing PostgreSQL fails the tests (see ``tests/services.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from services import PostgresServer, create_database, drop_database, start_postgres

from structured_agents.store import SqlStore, Store


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A PostgreSQL server shared by the session."""
    server = start_postgres(tmp_path_factory.mktemp("postgres"))
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """URL of a new, empty PostgreSQL database, dropped after the test."""
    url = create_database(pg_server)
    yield url
    drop_database(pg_server, url)


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
