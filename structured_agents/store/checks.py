"""What both stores (SQL and memory) decide the same way about the values they are given: a
result status, an event's timestamp, and what tells two jobs' code apart."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from structured_agents.status import RESULT_STATUSES
from structured_agents.store.errors import StoreError

__all__ = ["check_result_status", "code_of", "event_time"]


def check_result_status(status: str) -> None:
    """Refuse a result status that is not one of :data:`RESULT_STATUSES`."""
    if status not in RESULT_STATUSES:
        raise StoreError(f"result status must be one of {RESULT_STATUSES}, got {status!r}")


def code_of(inputs: Mapping[str, Any] | None) -> str:
    """What tells two jobs' code apart: their ``source`` input, its indentation and blank lines
    ignored."""
    source = str((inputs or {}).get("source") or "")
    return "\n".join(line.strip() for line in source.splitlines() if line.strip())


def event_time(value: Any) -> datetime:
    """An event's ``timestamp`` (seconds, ISO text or a datetime; now when missing) as an aware
    UTC datetime."""
    if value is None:
        return datetime.now(UTC)
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        return event_time(datetime.fromisoformat(value))
    raise StoreError(f"event timestamp must be seconds, ISO text or a datetime, got {value!r}")
