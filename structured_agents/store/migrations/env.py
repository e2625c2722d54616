"""Alembic environment of the structured-agents store.

Run through :func:`structured_agents.store.migrate.upgrade`, which hands over an open
connection in ``config.attributes["connection"]``; with the ``alembic`` command line the URL
comes from ``sqlalchemy.url`` (or ``-x url=...``). Offline mode (``--sql``) prints the DDL.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from structured_agents.store.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: pass -x url=... or set sqlalchemy.url")
    return url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """Emit the migration SQL for the configured URL without connecting."""
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate through the given connection, or one opened on the configured URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(_url())
    try:
        with engine.connect() as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
