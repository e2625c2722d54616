"""What the store returns: frozen, detached copies of rows (safe to pass between threads).

Timestamps are timezone-aware UTC on both dialects (SQLite gives naive values back; they are
marked UTC here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from structured_agents.status import RunStatus
from structured_agents.store.models import BatchRow, EventRow, ResultRow, RunRow, ToolCallRow, TurnRow

__all__ = [
    "BatchCounts",
    "BatchRecord",
    "EnqueueResult",
    "EventRecord",
    "ResultRecord",
    "RunRecord",
    "ToolCallRecord",
    "TurnRecord",
]


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _utc_or_none(value: datetime | None) -> datetime | None:
    return None if value is None else _utc(value)


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One enqueue/run command."""

    id: str
    bundle_name: str
    bundle_version: str
    root_path: str
    status: str
    created_at: datetime
    options: dict[str, Any]

    @classmethod
    def of(cls, row: BatchRow) -> BatchRecord:
        """Copy of an ORM row."""
        return cls(
            row.id,
            row.bundle_name,
            row.bundle_version,
            row.root_path,
            row.status,
            _utc(row.created_at),
            dict(row.options),
        )


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One job and the state of its latest execution; ``id`` is the stable job id."""

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
    inputs: dict[str, Any]

    @classmethod
    def of(cls, row: RunRow) -> RunRecord:
        """Copy of an ORM row."""
        return cls(
            row.id,
            row.batch_id,
            row.kind,
            row.target_path,
            row.qualname,
            row.source_hash,
            row.status,
            row.attempts,
            row.error,
            _utc(row.created_at),
            _utc_or_none(row.started_at),
            _utc_or_none(row.finished_at),
            dict(row.inputs),
        )


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One model turn of a run."""

    run_id: str
    turn: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    batch_size: int
    finish_reason: str | None
    raw_text: str

    @classmethod
    def of(cls, row: TurnRow) -> TurnRecord:
        """Copy of an ORM row."""
        return cls(
            row.run_id,
            row.turn,
            row.prompt_tokens,
            row.completion_tokens,
            row.latency_s,
            row.batch_size,
            row.finish_reason,
            row.raw_text,
        )


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a run and its output."""

    run_id: str
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str
    is_error: bool
    duration_s: float
    created_at: datetime
    """When the call was recorded (its end)."""
    ban: tuple[str, ...] = ()
    """Texts the tool banned from the run's next turns (``ToolResult.ban``)."""

    @classmethod
    def of(cls, row: ToolCallRow) -> ToolCallRecord:
        """Copy of an ORM row."""
        return cls(
            row.run_id,
            row.turn,
            row.call_id,
            row.name,
            dict(row.arguments),
            row.output,
            row.is_error,
            row.duration_s,
            _utc(row.created_at),
            tuple(row.ban or ()),
        )


@dataclass(frozen=True, slots=True)
class ResultRecord:
    """The change a run proposes; satisfies ``patches.ProposedPatch`` (run_id, target_path,
    original_hash, diff), so results go straight to ``patches.apply_patches``."""

    run_id: str
    target_path: str
    original_hash: str
    diff: str
    status: str
    summary: str
    updated_at: datetime
    flags: tuple[str, ...] = ()
    """Why the change needs review before it is applied (empty: a clean proposal)."""

    @property
    def flagged(self) -> bool:
        """Whether the change needs review (``sa apply`` leaves it unless asked)."""
        return bool(self.flags)

    @classmethod
    def of(cls, row: ResultRow) -> ResultRecord:
        """Copy of an ORM row."""
        return cls(
            row.run_id,
            row.target_path,
            row.original_hash,
            row.diff,
            row.status,
            row.summary,
            _utc(row.updated_at),
            tuple(row.flags or ()),
        )


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One stored observer event; ``to_dict`` gives back the observer's dict shape."""

    id: int
    run_id: str
    turn: int
    type: str
    ts: datetime
    payload: dict[str, Any]

    @classmethod
    def of(cls, row: EventRow) -> EventRecord:
        """Copy of an ORM row."""
        return cls(row.id, row.run_id, row.turn, row.type, _utc(row.ts), dict(row.payload))

    def to_dict(self) -> dict[str, Any]:
        """``{"type", "run_id", "turn", "timestamp", **payload}`` as the observer emitted it."""
        return {
            "type": self.type,
            "run_id": self.run_id,
            "turn": self.turn,
            "timestamp": self.ts.timestamp(),
            **self.payload,
        }


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """What :meth:`Store.add_jobs` did with each job id."""

    queued: tuple[str, ...]
    """Jobs now queued in the batch: new ones, and failed or cancelled ones queued again."""
    skipped: tuple[str, ...]
    """Jobs left alone: already succeeded, or queued/running in some batch."""


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """Runs of a batch by status."""

    batch_id: str
    by_status: dict[RunStatus, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Runs in the batch."""
        return sum(self.by_status.values())

    @property
    def done(self) -> bool:
        """Whether no run of the batch is queued or running."""
        return self.by_status.get("queued", 0) == 0 and self.by_status.get("running", 0) == 0

    def __getitem__(self, status: RunStatus) -> int:
        return self.by_status.get(status, 0)
