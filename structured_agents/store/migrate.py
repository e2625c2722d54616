"""Programmatic Alembic: bring a database to the newest schema revision.

:class:`~structured_agents.store.Store` calls :func:`upgrade_engine` when it opens, so an
embedded SQLite file or an empty PostgreSQL database is ready without a separate step.
Concurrent upgrades of one PostgreSQL database are serialised with an advisory lock.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from structured_agents.store.connection import WRITE_OPTION, make_engine, normalize_url
from structured_agents.store.converting import converting
from structured_agents.store.errors import StoreError

__all__ = [
    "MIGRATIONS_DIR",
    "alembic_config",
    "current_revision",
    "head_revision",
    "upgrade",
    "upgrade_engine",
]

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_LOCK_KEY = 0x5A_5354_4F52  # pg_advisory_xact_lock key held while migrating ("SA STOR")


def alembic_config() -> Config:
    """An Alembic config pointing at the packaged migrations (no ``alembic.ini`` needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    """The newest revision shipped with the package."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise StoreError(f"no migration revisions found in {MIGRATIONS_DIR}")
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None when it was never migrated)."""
    with converting("read schema revision"), engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade_engine(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision`` (no-op when already there)."""
    config = alembic_config()
    writer = engine.execution_options(**{WRITE_OPTION: True})
    with converting(f"migrate database to {revision}"), writer.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def upgrade(url: str, revision: str = "head") -> None:
    """Create or migrate the database at ``url`` to ``revision``."""
    engine = make_engine(normalize_url(url))
    try:
        upgrade_engine(engine, revision)
    finally:
        engine.dispose()
