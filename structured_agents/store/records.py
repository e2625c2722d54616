"""What the store returns: frozen, detached records (safe to pass between threads), plain
dataclasses that import nothing of SQL (:mod:`~structured_agents.store.rows` makes them
from rows).

Timestamps are timezone-aware UTC on both dialects.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from structured_agents.jobs.spec import JobSpec
from structured_agents.status import RunStatus
from structured_agents.types import JsonDict

__all__ = [
    "BatchCounts",
    "BatchRecord",
    "EnqueueResult",
    "EventRecord",
    "ResultRecord",
    "Run",
    "StoredRun",
    "ToolCallRecord",
    "TurnRecord",
]


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


@dataclass(frozen=True, slots=True)
class Run:
    """One job and the state of its latest execution; ``id`` is the stable job id (the run's
    one record: :class:`StoredRun` is this record with what a step needs besides)."""

    id: str
    batch_id: str
    kind: str
    target_path: str
    qualname: str
    source_hash: str
    status: str
    """``runs.status``: steps act only on ``running`` runs."""
    attempts: int
    """``runs.attempts``: the epoch a (re)start gives the run's state."""
    error: str | None
    created_at: datetime
    started_at: datetime | None
    """When the current claim of the run began."""
    finished_at: datetime | None
    inputs: dict[str, Any]

    @property
    def job(self) -> JobSpec:
        """The run's job, as discovery or the client gave it."""
        return JobSpec(
            job_id=self.id,
            kind=self.kind,
            path=self.target_path,
            qualname=self.qualname,
            source_hash=self.source_hash,
            inputs=dict(self.inputs),
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


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One stored observer event; ``to_dict`` gives back the observer's dict shape."""

    id: int
    run_id: str
    turn: int
    type: str
    ts: datetime
    payload: dict[str, Any]

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


@dataclass(frozen=True, slots=True)
class StoredRun(Run):
    """A :class:`Run` as a step sees it: also its batch's bundle and root, and its state under
    the current claim."""

    options: dict[str, Any]
    """The batch's options (``bundle``: the bundle directory)."""
    root_path: str
    """The batch's codebase root: the runs' workspace."""
    epoch: int
    """Epoch of the stored state row (-1 when there is none), for the compare-and-set."""
    version: int
    """Version of the stored state row, for the compare-and-set."""
    state: JsonDict | None
    """The state of the run's current claim, as the kernel's ``RunState.to_dict()`` wrote it
    (the lifecycle decodes it: the store keeps no kernel type); None when this claim has none
    yet (a state stored under an earlier claim is not the run's state)."""

    @classmethod
    def of(
        cls,
        run: Run,
        *,
        options: dict[str, Any],
        root_path: str,
        epoch: int,
        version: int,
        state: JsonDict | None,
    ) -> StoredRun:
        """``run`` with what a step needs besides (both stores build their step records so)."""
        row = {field.name: getattr(run, field.name) for field in fields(Run)}
        return cls(**row, options=options, root_path=root_path, epoch=epoch, version=version, state=state)
