"""The seam where SQLAlchemy, DB-API and Alembic errors become the store's own.

Nothing above :mod:`structured_agents.store` sees a ``sqlalchemy.exc`` error: every public
method of :class:`~structured_agents.store.SqlStore` runs inside :func:`converting` (its
sessions are opened in :mod:`~structured_agents.store.database`, its migrations run in
:mod:`~structured_agents.store.migrate`). The errors themselves
(:mod:`~structured_agents.store.errors`) import nothing of SQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic.util import CommandError
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError, SQLAlchemyError

from structured_agents.store.errors import StoreError, StoreUnavailableError

__all__ = ["converting"]


@contextmanager
def converting(action: str) -> Iterator[None]:
    """Re-raise SQLAlchemy, DB-API and Alembic errors raised inside as :class:`StoreError`.

    ``action`` names the operation (``"claim run abc"``) and starts the message; the original
    error is chained as ``__cause__``.
    """
    try:
        yield
    except (SQLAlchemyError, CommandError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        error = StoreUnavailableError if isinstance(exc, _UNAVAILABLE) else StoreError
        raise error(f"{action} failed: {type(exc).__name__}: {detail}") from exc


_UNAVAILABLE = (OperationalError, InterfaceError, DisconnectionError)
"""Driver errors of a database that is down or a connection that broke (psycopg and sqlite3
raise ``OperationalError`` for both, and for a locked SQLite file: all worth retrying)."""
