"""The rows :class:`~structured_agents.store.memory.MemoryStore` keeps, and the records callers
get from them.

A row is a mutable dataclass, changed in place under the store's lock; what leaves the store is
a frozen record made from it (:mod:`~structured_agents.store.records`). JSON columns are kept as
JSON text (:func:`dump`) and decoded on each read, so values come back as they would from the
database and a caller that mutates a record's dict changes nothing stored. Timestamps are
timezone-aware UTC.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from structured_agents.jobs.spec import JobSpec
from structured_agents.store.checks import event_time
from structured_agents.store.errors import StoreError
from structured_agents.store.names import EVENT_KEYS
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
    "NEVER",
    "OPEN",
    "BatchRow",
    "EventRow",
    "ResultRow",
    "RunRow",
    "RunStateRow",
    "StepAttemptRow",
    "ToolCallRow",
    "TurnRow",
    "batch_record",
    "call_record",
    "dump",
    "event_record",
    "event_row",
    "job_inputs",
    "now",
    "result_record",
    "run_record",
    "stored_run",
]

OPEN = ("queued", "running")
"""The statuses of a run (or batch) that has not ended."""
NEVER = datetime.min.replace(tzinfo=UTC)
"""Stands in for a missing timestamp where rows are sorted (they are told apart by another key)."""


@dataclass(slots=True)
class BatchRow:
    id: str
    bundle_name: str
    bundle_version: str
    root_path: str
    status: str
    created_at: datetime
    options: str
    seq: int


@dataclass(slots=True)
class RunRow:
    id: str
    batch_id: str
    kind: str
    target_path: str
    qualname: str
    source_hash: str
    status: str
    attempts: int
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    inputs: str


@dataclass(slots=True)
class TurnRow:
    id: int
    record: TurnRecord
    created_at: datetime


@dataclass(slots=True)
class ToolCallRow:
    id: int
    run_id: str
    turn: int
    call_id: str
    name: str
    arguments: str
    output: str
    is_error: bool
    duration_s: float
    created_at: datetime
    ban: tuple[str, ...]


@dataclass(slots=True)
class ResultRow:
    id: int
    run_id: str
    target_path: str
    original_hash: str
    diff: str
    status: str
    summary: str
    created_at: datetime
    updated_at: datetime
    flags: tuple[str, ...]


@dataclass(slots=True)
class EventRow:
    id: int
    run_id: str
    turn: int
    type: str
    ts: datetime
    payload: str


@dataclass(slots=True)
class RunStateRow:
    epoch: int
    claimed_at: datetime | None
    phase: str
    turn: int
    version: int
    state: str
    updated_at: datetime


@dataclass(slots=True)
class StepAttemptRow:
    attempts: int
    last_error: str | None
    updated_at: datetime


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def dump(value: Any, action: str) -> str:
    """``value`` as JSON text; a value that is not JSON fails ``action`` as the database would."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{action} failed: {type(exc).__name__}: {exc}") from None


def job_inputs(job: JobSpec) -> str:
    """The job's inputs as JSON text; inputs that are not JSON fail naming the job."""
    try:
        return json.dumps(job.inputs)
    except (TypeError, ValueError) as exc:
        where = f"job {job.job_id} ({job.path} {job.qualname})"
        raise StoreError(f"{where}: inputs are not JSON: {exc}") from None


def event_row(event: Mapping[str, Any]) -> EventRow:
    """An observer event dict as a row to append (its id given when it is appended)."""
    if not event.get("type") or not event.get("run_id"):
        raise StoreError(f"an event needs a 'type' and a 'run_id', got keys {sorted(event)}")
    payload = {key: value for key, value in event.items() if key not in EVENT_KEYS}
    return EventRow(
        0,
        str(event["run_id"]),
        int(event.get("turn") or 0),
        str(event["type"]),
        event_time(event.get("timestamp")),
        dump(payload, f"record {event['type']} event of run {event['run_id']}"),
    )


def batch_record(batch: BatchRow) -> BatchRecord:
    return BatchRecord(
        batch.id,
        batch.bundle_name,
        batch.bundle_version,
        batch.root_path,
        batch.status,
        batch.created_at,
        json.loads(batch.options),
    )


def run_record(run: RunRow) -> Run:
    return Run(
        run.id,
        run.batch_id,
        run.kind,
        run.target_path,
        run.qualname,
        run.source_hash,
        run.status,
        run.attempts,
        run.error,
        run.created_at,
        run.started_at,
        run.finished_at,
        json.loads(run.inputs),
    )


def stored_run(run: RunRow, batch: BatchRow, row: RunStateRow | None) -> StoredRun:
    """The run as a step sees it: its batch's options and root, and the state ``row`` stores
    under its current claim (a state of an earlier claim is not the run's state)."""
    current = row is not None and row.claimed_at is not None and row.claimed_at == run.started_at
    return StoredRun.of(
        run_record(run),
        options=json.loads(batch.options),
        root_path=batch.root_path,
        epoch=row.epoch if row is not None else -1,
        version=row.version if row is not None else 0,
        state=json.loads(row.state) if current and row is not None else None,
    )


def call_record(call: ToolCallRow) -> ToolCallRecord:
    return ToolCallRecord(
        call.run_id,
        call.turn,
        call.call_id,
        call.name,
        json.loads(call.arguments),
        call.output,
        call.is_error,
        call.duration_s,
        call.created_at,
        call.ban,
    )


def result_record(result: ResultRow) -> ResultRecord:
    return ResultRecord(
        result.run_id,
        result.target_path,
        result.original_hash,
        result.diff,
        result.status,
        result.summary,
        result.updated_at,
        result.flags,
    )


def event_record(event: EventRow) -> EventRecord:
    return EventRecord(event.id, event.run_id, event.turn, event.type, event.ts, json.loads(event.payload))
