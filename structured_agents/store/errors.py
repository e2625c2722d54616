"""Errors of the store, and the seam where SQLAlchemy and Alembic errors are converted.

::

    StructuredAgentsError
    └── StoreError                  a database operation failed (connect, migrate, query, write)
        └── RecordNotFoundError     a batch, run or result id the store does not hold

Nothing below :mod:`structured_agents.store` sees a ``sqlalchemy.exc`` error: every public
method of :class:`~structured_agents.store.Store` runs inside :func:`converting`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic.util import CommandError
from sqlalchemy.exc import SQLAlchemyError

from structured_agents.errors import StructuredAgentsError

__all__ = ["RecordNotFoundError", "StoreError", "converting"]


class StoreError(StructuredAgentsError):
    """A database operation failed; the message says which operation and why."""


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
        raise StoreError(f"{action} failed: {type(exc).__name__}: {detail}") from exc
