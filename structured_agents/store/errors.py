"""Errors of the store, and the seam where SQLAlchemy and Alembic errors are converted.

::

    StructuredAgentsError
    └── StoreError                  a database operation failed (connect, migrate, query, write)
        ├── StoreUnavailableError   the database could not be reached or the connection was
        │                           lost (worth retrying later)
        └── RecordNotFoundError     a batch, run or result id the store does not hold

Nothing above :mod:`structured_agents.store` sees a ``sqlalchemy.exc`` error: every public
method of :class:`~structured_agents.store.SqlStore` runs inside :func:`converting`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic.util import CommandError
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError, SQLAlchemyError

from structured_agents.errors import StructuredAgentsError

__all__ = ["RecordNotFoundError", "StoreError", "StoreUnavailableError", "converting"]


class StoreError(StructuredAgentsError):
    """A database operation failed; the message says which operation and why."""


class StoreUnavailableError(StoreError):
    """The database could not be reached, or the connection was lost: retry later."""


class RecordNotFoundError(StoreError, LookupError):
    """The store holds no batch, run or result under the requested id."""


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
