"""Errors of the distributed runner, and the seam where broker errors are converted.

::

    StructuredAgentsError
    └── DistributedError            the distributed runner could not do something
        ├── BrokerError             a broker operation failed (Redis down, connection lost)
        └── StepFailedError         a step of a run used up its retry budget

Database errors arrive as :class:`~structured_agents.store.StoreError` (the store converts
SQLAlchemy's; a database that is down or a lost connection is a ``StoreUnavailableError``);
:func:`is_transient` tells the ones worth retrying from the others. Kombu, redis-py and Celery
errors are converted by :func:`converting_broker`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from celery.exceptions import CeleryError
from kombu.exceptions import KombuError
from redis.exceptions import RedisError

from structured_agents.errors import StructuredAgentsError
from structured_agents.store import StoreUnavailableError

__all__ = [
    "BrokerError",
    "DistributedError",
    "StepFailedError",
    "converting_broker",
    "is_transient",
]


class DistributedError(StructuredAgentsError):
    """The distributed runner could not do something; the message says what and why."""


class BrokerError(DistributedError):
    """A broker operation (publish, connect) failed; usually transient."""


class StepFailedError(DistributedError):
    """A step of a run failed on every attempt of its budget; the run is marked failed."""


_TRANSIENT = (BrokerError, StoreUnavailableError, ConnectionError, TimeoutError)


@contextmanager
def converting_broker(action: str) -> Iterator[None]:
    """Re-raise Kombu, redis-py, Celery and socket errors raised inside as :class:`BrokerError`."""
    try:
        yield
    except (KombuError, RedisError, CeleryError, OSError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BrokerError(f"{action} failed: {type(exc).__name__}: {detail}") from exc


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) is a lost connection worth retrying."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, _TRANSIENT):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
