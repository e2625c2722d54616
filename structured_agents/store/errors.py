"""Errors of the store; they import nothing of SQL.

::

    StructuredAgentsError
    └── StoreError                  a database operation failed (connect, migrate, query, write)
        ├── StoreUnavailableError   the database could not be reached or the connection was
        │                           lost (worth retrying later)
        └── RecordNotFoundError     a batch, run or result id the store does not hold

Nothing above :mod:`structured_agents.store` sees a ``sqlalchemy.exc`` error: every public
method of :class:`~structured_agents.store.SqlStore` runs inside
:func:`~structured_agents.store.converting.converting`, which re-raises SQLAlchemy and Alembic
errors as these.
"""

from __future__ import annotations

from structured_agents.errors import StructuredAgentsError

__all__ = ["RecordNotFoundError", "StoreError", "StoreUnavailableError"]


class StoreError(StructuredAgentsError):
    """A database operation failed; the message says which operation and why."""


class StoreUnavailableError(StoreError):
    """The database could not be reached, or the connection was lost: retry later."""


class RecordNotFoundError(StoreError, LookupError):
    """The store holds no batch, run or result under the requested id."""
