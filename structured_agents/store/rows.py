"""ORM rows into the frozen records callers get (:mod:`~structured_agents.store.records`).

Timestamps come out timezone-aware UTC on both dialects: SQLite gives naive values back, and
they are marked UTC here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from structured_agents.store.models import (
    BatchRow,
    EventRow,
    ResultRow,
    RunRow,
    RunStateRow,
    ToolCallRow,
    TurnRow,
)
from structured_agents.store.records import (
    BatchRecord,
    EventRecord,
    ResultRecord,
    Run,
    StoredRun,
    ToolCallRecord,
    TurnRecord,
)

__all__ = [
    "batch_record",
    "event_record",
    "result_record",
    "run_record",
    "stored_run",
    "tool_call_record",
    "turn_record",
    "utc",
    "utc_or_none",
]


def utc(value: datetime) -> datetime:
    """``value`` marked UTC when the database gave it back naive."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def utc_or_none(value: datetime | None) -> datetime | None:
    """:func:`utc`, None staying None."""
    return None if value is None else utc(value)


def batch_record(row: BatchRow) -> BatchRecord:
    """A detached copy of ``row``."""
    return BatchRecord(
        row.id,
        row.bundle_name,
        row.bundle_version,
        row.root_path,
        row.status,
        utc(row.created_at),
        dict(row.options),
    )


def run_record(row: RunRow) -> Run:
    """A detached copy of ``row``."""
    return Run(
        row.id,
        row.batch_id,
        row.kind,
        row.target_path,
        row.qualname,
        row.source_hash,
        row.status,
        row.attempts,
        row.error,
        utc(row.created_at),
        utc_or_none(row.started_at),
        utc_or_none(row.finished_at),
        dict(row.inputs),
    )


def turn_record(row: TurnRow) -> TurnRecord:
    """A detached copy of ``row``."""
    return TurnRecord(
        row.run_id,
        row.turn,
        row.prompt_tokens,
        row.completion_tokens,
        row.latency_s,
        row.batch_size,
        row.finish_reason,
        row.raw_text,
    )


def tool_call_record(row: ToolCallRow) -> ToolCallRecord:
    """A detached copy of ``row``."""
    return ToolCallRecord(
        row.run_id,
        row.turn,
        row.call_id,
        row.name,
        dict(row.arguments),
        row.output,
        row.is_error,
        row.duration_s,
        utc(row.created_at),
        tuple(row.ban or ()),
    )


def result_record(row: ResultRow) -> ResultRecord:
    """A detached copy of ``row``."""
    return ResultRecord(
        row.run_id,
        row.target_path,
        row.original_hash,
        row.diff,
        row.status,
        row.summary,
        utc(row.updated_at),
        tuple(row.flags or ()),
    )


def event_record(row: EventRow) -> EventRecord:
    """A detached copy of ``row``."""
    return EventRecord(row.id, row.run_id, row.turn, row.type, utc(row.ts), dict(row.payload))


def stored_run(run: RunRow, options: dict[str, Any], root: str, row: RunStateRow | None) -> StoredRun:
    """The run as a step sees it: its row, its batch's options and root, and its state row's
    state when that belongs to the run's current claim."""
    record = run_record(run)
    current = row is not None and row.claimed_at is not None and utc(row.claimed_at) == record.started_at
    return StoredRun.of(
        record,
        options=dict(options),
        root_path=root,
        epoch=row.epoch if row is not None else -1,
        version=row.version if row is not None else 0,
        state=dict(row.state) if current and row is not None else None,
    )
