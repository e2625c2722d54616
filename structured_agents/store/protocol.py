"""The store seam: every read and write of batches, runs and their history goes through here.

It is six small roles (:class:`BatchStore`, :class:`QueueStore`, :class:`LogStore`,
:class:`ResultStore`, :class:`ReportStore`, :class:`StepStore`, each of a dozen methods at
most) and :class:`Store`, all of them together. The seam imports nothing of SQL: its records
are plain dataclasses (:mod:`~structured_agents.store.records`).

Callers (the run lifecycle, the embedded runner, the Celery steps, the API, the CLI, the
report) depend on :class:`Store` and get frozen records back, never rows. The seam holds what
they call; both stores also offer single-row forms the tests seed data with (``claim``,
``record_turn``, ``record_event``, ``begin_step``), which no driver uses; every SQL statement
lives behind it, in :class:`~structured_agents.store.sql.SqlStore` (PostgreSQL or SQLite).
Methods that can lose a race (claims, state commits, idempotent inserts) say so by returning
``None`` or ``False`` instead of raising, so a duplicated step can simply stop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, Self

from structured_agents.jobs.spec import JobSpec
from structured_agents.status import BatchStatus, FinalStatus, ResultStatus, RunStatus
from structured_agents.store.records import (
    BatchCounts,
    BatchRecord,
    EnqueueResult,
    EventRecord,
    ResultRecord,
    Run,
    StoredRun,
    ToolCallRecord,
    TurnRecord,
)
from structured_agents.store.report_records import (
    BatchSetupRecord,
    EngineTurnRecord,
    FailureRecord,
    RunSummaryRecord,
    ToolStatsRecord,
)
from structured_agents.types import JsonDict

__all__ = ["BatchStore", "LogStore", "QueueStore", "ReportStore", "ResultStore", "StepStore", "Store"]


class BatchStore(Protocol):
    """Batches: create, find, move and count them, and add their jobs."""

    def create_batch(
        self,
        bundle_name: str,
        bundle_version: str,
        root_path: str,
        options: dict[str, Any] | None = None,
        *,
        batch_id: str | None = None,
    ) -> BatchRecord:
        """Create a batch (one enqueue or run command)."""
        ...

    def get_batch(self, batch_id: str) -> BatchRecord:
        """The batch; ``RecordNotFoundError`` if there is none."""
        ...

    def list_batches(self, limit: int = 50) -> list[BatchRecord]:
        """The newest batches first."""
        ...

    def set_batch_status(self, batch_id: str, status: BatchStatus) -> None:
        """Set a batch's status."""
        ...

    def move_batch(self, batch_id: str, status: BatchStatus, *, only_from: tuple[BatchStatus, ...]) -> bool:
        """Set a batch's status if it is one of ``only_from``; False otherwise."""
        ...

    def cancel_batch(self, batch_id: str) -> int:
        """Cancel the batch and its queued runs; returns how many runs."""
        ...

    def discard_batch(self, batch_id: str) -> None:
        """Remove a batch never dispatched, with its runs."""
        ...

    def status_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Runs, and batches, by status."""
        ...

    def finish_if_idle(self, batch_id: str) -> bool:
        """Finish a batch none of whose runs is open; False when runs are open."""
        ...

    def batch_counts(self, batch_id: str) -> BatchCounts:
        """Runs of the batch by status."""
        ...

    def add_jobs(self, batch_id: str, jobs: Iterable[JobSpec]) -> EnqueueResult:
        """Queue jobs in the batch (new, or failed/cancelled before); the rest are skipped."""
        ...


class QueueStore(Protocol):
    """The run queue: claim runs, finish or requeue them, and list them."""

    def claim_runs(self, run_ids: Iterable[str]) -> list[Run]:
        """Move every queued run of ``run_ids`` to running, in one transaction; those moved."""
        ...

    def claim_next(self, batch_id: str | None = None) -> Run | None:
        """Claim the oldest queued run; None when none is left."""
        ...

    def finish(self, run_id: str, status: FinalStatus, error: str | None = None) -> bool:
        """End a run; False when it is in no state to end that way."""
        ...

    def requeue(self, run_id: str, error: str | None = None) -> bool:
        """Put a running or failed run back in the queue."""
        ...

    def get_run(self, run_id: str) -> Run:
        """The run; ``RecordNotFoundError`` if there is none."""
        ...

    def ids_starting(self, prefix: str, limit: int = 2) -> tuple[list[str], list[str]]:
        """Up to ``limit`` batch ids and up to ``limit`` run ids that start with ``prefix``, each
        in id order (what a person types of an id the CLI printed shortened)."""
        ...

    def list_runs(
        self, batch_id: str, status: RunStatus | None = None, *, limit: int | None = None, offset: int = 0
    ) -> list[Run]:
        """Runs of a batch, optionally of one status, oldest first."""
        ...

    def run_ids(self, batch_id: str, status: RunStatus) -> list[str]:
        """Ids of the batch's runs in ``status``, oldest first."""
        ...


class LogStore(Protocol):
    """What happened inside runs: tool calls and events as they are recorded, and read back."""

    def record_tool_call(
        self,
        run_id: str,
        turn: int,
        call_id: str,
        name: str,
        arguments: Mapping[str, Any],
        output: str,
        *,
        is_error: bool = False,
        duration_s: float = 0.0,
        ban: Sequence[str] = (),
    ) -> bool:
        """Record one tool call and its output; False when ``call_id`` is already recorded."""
        ...

    def record_events(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Append observer events in one transaction; returns how many."""
        ...

    def events(self, run_id: str, *, after_id: int = 0, limit: int | None = None) -> list[EventRecord]:
        """Events of a run in the order they were recorded."""
        ...

    def turns(self, run_id: str) -> list[TurnRecord]:
        """Turns of a run, in order."""
        ...

    def tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """Tool calls of a run, in the order they were recorded."""
        ...

    def turn_tool_calls(self, run_id: str, turn: int) -> dict[str, ToolCallRecord]:
        """The recorded tool calls of one turn, by call id."""
        ...


class ResultStore(Protocol):
    """The changes runs propose, their review status, and the SQL views."""

    def save_result(
        self,
        run_id: str,
        *,
        target_path: str,
        original_hash: str,
        diff: str,
        summary: str = "",
        status: ResultStatus = "proposed",
        flags: Sequence[str] = (),
        unique_summary: bool = False,
    ) -> None:
        """Store (or replace) the change a run proposes, with the reasons it needs review
        (``flags``); ``unique_summary``: another target of the batch with the same summary and
        other code flags both."""
        ...

    def results(self, batch_id: str, status: ResultStatus | None = None) -> list[ResultRecord]:
        """Results of a batch's runs, ordered by file then run."""
        ...

    def set_result_status(self, run_ids: Iterable[str], status: ResultStatus) -> int:
        """Mark results applied, rejected or stale; returns how many."""
        ...

    def view(self, name: str, *, batch_id: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows of a reporting view."""
        ...


class ReportStore(Protocol):
    """One batch's figures, for the report."""

    def run_summaries(self, batch_id: str) -> list[RunSummaryRecord]:
        """Every run of the batch (the ``run_summary`` view), in the order they finished."""
        ...

    def engine_turns(self, batch_id: str) -> list[EngineTurnRecord]:
        """The engine's answers to the batch's runs, every attempt, in time order."""
        ...

    def batch_tool_stats(self, batch_id: str) -> list[ToolStatsRecord]:
        """Calls, errors and durations per tool over the batch's runs, most called first."""
        ...

    def batch_failures(self, batch_id: str) -> list[FailureRecord]:
        """The batch's failed runs (the ``failures`` view), last finished first."""
        ...

    def batch_setup(self, batch_id: str) -> BatchSetupRecord:
        """Plugin, tools and turn limit of the batch's runs, and the grammar kinds of their turns."""
        ...

    def result_counts(self, batch_id: str) -> dict[str, int]:
        """The batch's results counted by status."""
        ...

    def result_sample(self, batch_id: str, limit: int) -> list[ResultRecord]:
        """Up to ``limit`` results of the batch that change something, by file then run."""
        ...


class StepStore(Protocol):
    """Runs driven step by step: their states (compare-and-set), step attempts, and what the
    sweep finds stopped."""

    def load_runs(self, run_ids: Iterable[str]) -> dict[str, StoredRun]:
        """The runs that exist, with their stored states, by id."""
        ...

    def init_state(
        self, run: StoredRun, state: JsonDict, events: Sequence[Mapping[str, Any]]
    ) -> StoredRun | None:
        """Store the first state of the run's current claim; None when it already has one."""
        ...

    def init_states(
        self, starts: Sequence[tuple[StoredRun, JsonDict, Sequence[Mapping[str, Any]]]]
    ) -> list[StoredRun | None]:
        """``init_state`` for many runs in one transaction, in order."""
        ...

    def commit_state(
        self,
        run: StoredRun,
        state: JsonDict,
        events: Sequence[Mapping[str, Any]],
        *,
        turn: TurnRecord | None = None,
    ) -> StoredRun | None:
        """Compare-and-set the run's state (with its turn and events); None when a duplicate won."""
        ...

    def touch_state(self, run_id: str) -> None:
        """Mark the run's state as moving without changing it."""
        ...

    def begin_steps(self, steps: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """Count an attempt of each ``(run id, step)``, in one statement; the attempts so far."""
        ...

    def fail_step(self, run_id: str, step: str, error: str) -> None:
        """Record how the current attempt of a step failed."""
        ...

    def step_error(self, run_id: str, step: str) -> str | None:
        """The error the last failed attempt of a step recorded."""
        ...

    def clear_steps(self, run_id: str) -> None:
        """Forget the step attempts of a run that ended."""
        ...

    def stale_runs(self, older_than_s: float, limit: int = 1000) -> list[StoredRun]:
        """Running runs whose state has not moved for ``older_than_s`` seconds."""
        ...

    def undispatched(self, older_than_s: float, limit: int = 1000) -> tuple[list[str], list[str]]:
        """Batches still queued, and queued runs of running batches, older than ``older_than_s``."""
        ...


class Store(BatchStore, QueueStore, LogStore, ResultStore, ReportStore, StepStore, Protocol):
    """Every role together, as :class:`~structured_agents.store.sql.SqlStore` implements them
    (see the module docstring); a caller that needs one role can ask for that role alone."""

    """Batches, runs, their history and their step states (see the module docstring)."""

    @property
    def url(self) -> str:
        """Where the store is, password hidden."""
        ...

    @property
    def dialect(self) -> str:
        """``postgresql`` or ``sqlite``."""
        ...

    def close(self) -> None:
        """Release every connection."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...
