"""Migrations, URLs and error conversion, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect
from sqlalchemy.exc import OperationalError

from structured_agents.errors import StructuredAgentsError
from structured_agents.store import (
    VIEWS,
    SqlStore,
    StoreError,
    current_revision,
    head_revision,
    upgrade,
)
from structured_agents.store.connection import normalize_url
from structured_agents.store.models import Base

TABLES = {"batches", "runs", "turns", "tool_calls", "results", "events"}


def test_upgrade_creates_tables_and_views(db_url: str) -> None:
    upgrade(db_url)
    engine = create_engine(normalize_url(db_url))
    try:
        inspector = inspect(engine)
        assert set(inspector.get_table_names()) >= TABLES
        assert set(VIEWS) <= set(inspector.get_view_names())
        assert current_revision(engine) == head_revision()
        indexes = {ix["name"] for ix in inspector.get_indexes("runs")}
        assert {"ix_runs_batch_id_status", "ix_runs_status_created_at"} <= indexes
        assert "ix_events_run_id_id" in {ix["name"] for ix in inspector.get_indexes("events")}
        assert "ix_tool_calls_name" in {ix["name"] for ix in inspector.get_indexes("tool_calls")}
    finally:
        engine.dispose()


def test_migrated_schema_matches_the_models(db_url: str) -> None:
    upgrade(db_url)
    engine = create_engine(normalize_url(db_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def test_upgrade_is_idempotent_and_store_migrates_on_open(db_url: str) -> None:
    upgrade(db_url)
    upgrade(db_url)
    with SqlStore(db_url) as store:
        assert current_revision(store.engine) == head_revision()
        assert store.list_batches() == []


def test_store_without_migrate_does_not_touch_the_schema(db_url: str) -> None:
    with SqlStore(db_url, migrate=False) as store:
        assert current_revision(store.engine) is None
        with pytest.raises(StoreError, match="list batches failed"):
            store.list_batches()


def test_postgres_urls_use_psycopg3() -> None:
    for url in ("postgres://u@h/db", "postgresql://u@h/db", "postgresql+psycopg://u@h/db"):
        assert normalize_url(url).drivername == "postgresql+psycopg"


@pytest.mark.parametrize("url", ["mysql://u@h/db", "sqlite://", "sqlite:///:memory:", "not a url"])
def test_unsupported_urls_are_refused(url: str) -> None:
    with pytest.raises(StoreError):
        normalize_url(url)


def test_sqlite_file_and_directory_are_created(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "sa.db"
    with SqlStore(f"sqlite:///{path}") as store:
        assert store.dialect == "sqlite"
    assert path.is_file()


def test_driver_errors_become_store_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        SqlStore("postgresql://nobody@127.0.0.1:1/none")
    assert isinstance(info.value, StructuredAgentsError)
    assert isinstance(info.value.__cause__, OperationalError)
    assert "migrate database" in str(info.value)


def test_embedded_mode_uses_the_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with SqlStore() as store:
        assert store.dialect == "sqlite"
        assert store.url.endswith("/data/structured-agents/structured_agents.db")
        store.create_batch("docstrings", "1.0", "/src")
    with SqlStore() as reopened:
        assert len(reopened.list_batches()) == 1
