"""An in-memory :class:`~structured_agents.store.protocol.Store`: the same contract as
:class:`~structured_agents.store.sql.SqlStore`, kept in plain dicts and lists.

::

    with MemoryStore() as store:                  # url "memory://", dialect "memory"
        batch = store.create_batch("docstring", "1.0", "/src/project")
        store.add_jobs(batch.id, jobs)
        run = store.claim(run_id)                   # None if someone else has it

Like httpx's ``MockTransport`` or dramatiq's ``StubBroker``, it is a real, small implementation
for tests where SQL is not what is under test, not a mock: the store tests run every behaviour
test of the seam on it as on SQLite and PostgreSQL. It reproduces what the SQL store's
statements do: claims that lose a race return None or False, run states are compare-and-set on
their epoch and version, ``init_states`` replaces the state of the claim before (epoch - 1)
only, ``add_jobs`` skips succeeded and queued/running jobs, a run's turns, tool calls and result
are forgotten when it is claimed again, ``discard_batch`` removes the batch's runs and what hangs
on them (events stay, as they have no foreign key), and rows that reference an unknown run are
refused with a :class:`~structured_agents.store.errors.StoreError` (the foreign keys).

Every method runs under one ``threading.RLock`` and changes nothing until it has checked all
it would refuse, so a method is one transaction. JSON columns (batch options, job inputs, tool
arguments, event payloads, run states) are kept as JSON text and decoded on each read: values
come back as they would from the database (tuples as lists; a value that is not JSON is
refused), and a caller that mutates a record's dict changes nothing stored. Timestamps are
timezone-aware UTC.

The four reporting views (``failures``, ``run_summary``, ``throughput_by_minute``,
``tool_stats``) are computed in Python with the columns of their SQL definitions
(``migrations/versions/0002_views.py`` and ``0005_result_flags.py``), as PostgreSQL returns
them: timestamps as datetimes (here aware UTC, ``minute`` included, where PostgreSQL gives a
naive UTC timestamp and SQLite text), ``result_flags`` as a list (SQLite gives JSON text).
Where SQL leaves an order unspecified (views, ``load_runs``, ``claim_runs``), this store uses a
fixed one. What it lacks is the SQL itself: there is no ``engine`` to run queries on.
"""

from __future__ import annotations

import heapq
import itertools
import json
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Self, cast

from structured_agents.jobs.spec import JobSpec
from structured_agents.status import (
    BATCH_STATUSES,
    FINAL_STATUSES,
    RESULT_STATUSES,
    BatchStatus,
    FinalStatus,
    ResultStatus,
    RunStatus,
)
from structured_agents.store.errors import RecordNotFoundError, StoreError
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

if TYPE_CHECKING:
    from structured_agents.store.protocol import Store

__all__ = ["SHARED_SUMMARY", "VIEWS", "MemoryStore"]

VIEWS = ("failures", "run_summary", "throughput_by_minute", "tool_stats")
"""The reporting views, as the SQL store names them (``store.runlog.VIEWS``)."""
SHARED_SUMMARY = "shared-summary: another target with other code got the same summary"
"""The flag of results that share a summary, as the SQL store writes it (``store.runlog``)."""
_EVENT_KEYS = ("type", "run_id", "turn", "timestamp")
_OPEN = ("queued", "running")
_NEVER = datetime.min.replace(tzinfo=UTC)
"""Stands in for a missing timestamp where rows are sorted (they are told apart by another key)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _dump(value: Any, action: str) -> str:
    """``value`` as JSON text; a value that is not JSON fails ``action`` as the database would."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{action} failed: {type(exc).__name__}: {exc}") from None


def _job_inputs(job: JobSpec) -> str:
    try:
        return json.dumps(job.inputs)
    except (TypeError, ValueError) as exc:
        where = f"job {job.job_id} ({job.path} {job.qualname})"
        raise StoreError(f"{where}: inputs are not JSON: {exc}") from None


def _code(inputs: Mapping[str, Any] | None) -> str:
    """What tells two jobs' code apart: their ``source`` input, its indentation and blank lines
    ignored."""
    source = str((inputs or {}).get("source") or "")
    return "\n".join(line.strip() for line in source.splitlines() if line.strip())


def _timestamp(value: Any) -> datetime:
    if value is None:
        return _now()
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        return _timestamp(datetime.fromisoformat(value))
    raise StoreError(f"event timestamp must be seconds, ISO text or a datetime, got {value!r}")


def _as_int(value: Any) -> int | None:
    """A JSON value read as an integer (``->> ... AS INTEGER``), None when it is none."""
    if isinstance(value, bool | int | float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _as_text(value: Any) -> str | None:
    """A JSON value read as text (``->>``): strings as they are, other values as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _minute(value: datetime) -> datetime:
    return value.replace(second=0, microsecond=0)


@dataclass(slots=True)
class _Batch:
    id: str
    bundle_name: str
    bundle_version: str
    root_path: str
    status: str
    created_at: datetime
    options: str
    seq: int


@dataclass(slots=True)
class _Run:
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
class _Turn:
    id: int
    record: TurnRecord
    created_at: datetime


@dataclass(slots=True)
class _ToolCall:
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
class _Result:
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
class _Event:
    id: int
    run_id: str
    turn: int
    type: str
    ts: datetime
    payload: str


@dataclass(slots=True)
class _RunState:
    epoch: int
    claimed_at: datetime | None
    phase: str
    turn: int
    version: int
    state: str
    updated_at: datetime


@dataclass(slots=True)
class _StepAttempt:
    attempts: int
    last_error: str | None
    updated_at: datetime


class MemoryStore:
    """Every role of the store seam over Python dicts (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._batches: dict[str, _Batch] = {}
        self._runs: dict[str, _Run] = {}
        self._batch_runs: dict[str, set[str]] = {}
        self._counts: dict[str, Counter[str]] = {}
        """Runs of each batch by status."""
        self._queue: list[tuple[datetime, str]] = []
        """A heap of ``(created_at, run id)`` of queued runs; an entry whose run is no longer
        queued is dropped when it reaches the top."""
        self._batch_queues: dict[str, list[tuple[datetime, str]]] = {}
        self._turns: dict[str, dict[int, _Turn]] = {}
        self._tool_calls: dict[str, list[_ToolCall]] = {}
        self._call_ids: set[str] = set()
        self._results: dict[str, _Result] = {}
        self._events: dict[str, list[_Event]] = {}
        """Events by run id (any run id: events have no foreign key), in id order."""
        self._states: dict[str, _RunState] = {}
        self._steps: dict[str, dict[str, _StepAttempt]] = {}
        self._ids: defaultdict[str, Iterator[int]] = defaultdict(lambda: itertools.count(1))
        self._batch_seq = itertools.count()

    @property
    def url(self) -> str:
        """``memory://``."""
        return "memory://"

    @property
    def dialect(self) -> str:
        """``memory``."""
        return "memory"

    def close(self) -> None:
        """Nothing to release (the data stays until the store is dropped)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # Batches.

    def create_batch(
        self,
        bundle_name: str,
        bundle_version: str,
        root_path: str,
        options: dict[str, Any] | None = None,
        *,
        batch_id: str | None = None,
    ) -> BatchRecord:
        """Create a batch (one enqueue/run command); the id is a new UUID unless given."""
        batch_id = batch_id or uuid.uuid4().hex
        action = f"create batch {batch_id}"
        encoded = _dump(dict(options or {}), action)
        with self._lock:
            if batch_id in self._batches:
                raise StoreError(f"{action} failed: a batch with id {batch_id!r} exists")
            batch = _Batch(
                batch_id,
                bundle_name,
                bundle_version,
                root_path,
                "queued",
                _now(),
                encoded,
                next(self._batch_seq),
            )
            self._batches[batch_id] = batch
            self._batch_runs[batch_id] = set()
            self._counts[batch_id] = Counter()
            self._batch_queues[batch_id] = []
            return self._batch_record(batch)

    def get_batch(self, batch_id: str) -> BatchRecord:
        """The batch ``batch_id``; :class:`RecordNotFoundError` if there is none."""
        with self._lock:
            return self._batch_record(self._batch(batch_id))

    def list_batches(self, limit: int = 50) -> list[BatchRecord]:
        """The newest batches first."""
        with self._lock:
            batches = sorted(self._batches.values(), key=lambda b: (b.created_at, b.seq), reverse=True)
            return [self._batch_record(batch) for batch in batches[: max(limit, 0)]]

    def set_batch_status(self, batch_id: str, status: BatchStatus) -> None:
        """Set the status of a batch."""
        if status not in BATCH_STATUSES:
            raise StoreError(f"batch status must be one of {BATCH_STATUSES}, got {status!r}")
        with self._lock:
            self._batch(batch_id).status = status

    def move_batch(self, batch_id: str, status: BatchStatus, *, only_from: tuple[BatchStatus, ...]) -> bool:
        """Set a batch's status if it is one of ``only_from`` (a cancel is never overwritten)."""
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None or batch.status not in only_from:
                return False
            if status not in BATCH_STATUSES:
                raise StoreError(f"set status of batch {batch_id} failed: no batch status {status!r}")
            batch.status = status
            return True

    def cancel_batch(self, batch_id: str) -> int:
        """Cancel every queued run of the batch and mark the batch cancelled; returns how many."""
        with self._lock:
            self._batch(batch_id).status = "cancelled"
            now = _now()
            queued = [run for run in self._runs_of(batch_id) if run.status == "queued"]
            for run in queued:
                self._set_status(run, "cancelled")
                run.finished_at = now
            return len(queued)

    def discard_batch(self, batch_id: str) -> None:
        """Remove a batch that was never dispatched, with its runs and what hangs on them (their
        events stay: events have no foreign key)."""
        with self._lock:
            self._batch(batch_id)
            for run_id in self._batch_runs.pop(batch_id):
                del self._runs[run_id]
                self._forget_attempt(run_id)
                self._states.pop(run_id, None)
                self._steps.pop(run_id, None)
            del self._batches[batch_id], self._counts[batch_id], self._batch_queues[batch_id]

    def status_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """How many runs, and how many batches, are in each status (the metrics' gauges)."""
        with self._lock:
            runs: Counter[str] = Counter()
            for counts in self._counts.values():
                runs.update(counts)
            batches = Counter(batch.status for batch in self._batches.values())
            return {s: n for s, n in runs.items() if n}, dict(batches)

    def finish_if_idle(self, batch_id: str) -> bool:
        """Finish a queued or running batch none of whose runs is queued or running; False when
        runs are open (or the batch is in no state to finish)."""
        with self._lock:
            if self._open(batch_id):
                return False
            batch = self._batches.get(batch_id)
            if batch is None or batch.status not in _OPEN:
                return False
            batch.status = "finished"
            return True

    def batch_counts(self, batch_id: str) -> BatchCounts:
        """How many runs of the batch are in each status."""
        with self._lock:
            self._batch(batch_id)
            counts = {cast(RunStatus, status): n for status, n in self._counts[batch_id].items() if n}
            return BatchCounts(batch_id=batch_id, by_status=counts)

    def add_jobs(self, batch_id: str, jobs: Iterable[JobSpec]) -> EnqueueResult:
        """Queue ``jobs`` in the batch; returns which were queued and which skipped.

        A job whose id is new is added. One that failed or was cancelled before is queued
        again and moves to this batch (attempts reset; its other fields stay as first stored).
        One that succeeded, or is queued or running already, is skipped.
        """
        unique = list({job.job_id: job for job in jobs}.values())
        with self._lock:
            self._batch(batch_id)
            inputs = [_job_inputs(job) for job in unique]  # every job checked before one is added
            now = _now()
            queued: set[str] = set()
            for job, encoded in zip(unique, inputs, strict=True):
                run = self._runs.get(job.job_id)
                if run is None:
                    run = _Run(
                        job.job_id,
                        batch_id,
                        job.kind,
                        job.path,
                        job.qualname,
                        job.source_hash,
                        "queued",
                        0,
                        None,
                        now,
                        None,
                        None,
                        encoded,
                    )
                    self._runs[run.id] = run
                    self._batch_runs[batch_id].add(run.id)
                    self._counts[batch_id][run.status] += 1
                    self._push(run)
                elif run.status in ("failed", "cancelled"):
                    self._move(run, batch_id)
                    self._set_status(run, "queued")
                    run.attempts, run.error, run.started_at, run.finished_at = 0, None, None, None
                else:
                    continue
                queued.add(job.job_id)
        return EnqueueResult(
            queued=tuple(job.job_id for job in unique if job.job_id in queued),
            skipped=tuple(job.job_id for job in unique if job.job_id not in queued),
        )

    # The queue.

    def claim(self, run_id: str) -> Run | None:
        """Move the run from queued to running and count the attempt; None if it was not queued."""
        with self._lock:
            return next(iter(self._claim([run_id])), None)

    def claim_runs(self, run_ids: Iterable[str]) -> list[Run]:
        """:meth:`claim` every run of ``run_ids`` that is queued, at once; those claimed (by id)."""
        with self._lock:
            return self._claim(sorted(set(run_ids)))

    def claim_next(self, batch_id: str | None = None) -> Run | None:
        """Claim the oldest queued run (of ``batch_id``, or of any batch); None when none is left."""
        with self._lock:
            heap = self._queue if batch_id is None else self._batch_queues.get(batch_id, [])
            while heap:
                created_at, run_id = heapq.heappop(heap)
                run = self._runs.get(run_id)
                if (
                    run is not None
                    and run.status == "queued"
                    and run.created_at == created_at
                    and batch_id in (None, run.batch_id)
                ):
                    return self._claim([run_id])[0]
            return None

    def finish(self, run_id: str, status: FinalStatus, error: str | None = None) -> bool:
        """End a running run as succeeded, failed or cancelled (a queued one may be cancelled);
        its batch becomes ``finished`` at once when this was its last open run (a cancelled batch
        stays cancelled). False, changing nothing, when the run is in no state to end that way."""
        if status not in FINAL_STATUSES:
            raise StoreError(f"finish status must be one of {FINAL_STATUSES}, got {status!r}")
        allowed = _OPEN if status == "cancelled" else ("running",)
        with self._lock:
            run = self._run(run_id)
            if run.status not in allowed:
                return False
            self._set_status(run, status)
            run.error, run.finished_at = error, _now()
            batch = self._batches[run.batch_id]
            if not self._open(batch.id) and batch.status in _OPEN:
                batch.status = "finished"
            return True

    def requeue(self, run_id: str, error: str | None = None) -> bool:
        """Put a running or failed run back in the queue (a retry); the attempt count is kept."""
        with self._lock:
            run = self._run(run_id)
            if run.status not in ("running", "failed"):
                return False
            self._set_status(run, "queued")
            run.error, run.finished_at = error, None
            return True

    def get_run(self, run_id: str) -> Run:
        """The run ``run_id``; :class:`RecordNotFoundError` if there is none."""
        with self._lock:
            return self._run_record(self._run(run_id))

    def list_runs(
        self, batch_id: str, status: RunStatus | None = None, *, limit: int | None = None, offset: int = 0
    ) -> list[Run]:
        """Runs of a batch, optionally of one status, oldest first."""
        with self._lock:
            runs = self._sorted(run for run in self._runs_of(batch_id) if status in (None, run.status))
            start = max(offset, 0)
            end = None if limit is None else start + max(limit, 0)
            return [self._run_record(run) for run in runs[start:end]]

    def run_ids(self, batch_id: str, status: RunStatus) -> list[str]:
        """Ids of the batch's runs in ``status``, oldest first."""
        with self._lock:
            return [run.id for run in self._sorted(r for r in self._runs_of(batch_id) if r.status == status)]

    # What happened inside runs.

    def record_turn(
        self,
        run_id: str,
        turn: int,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        latency_s: float = 0.0,
        batch_size: int = 1,
        finish_reason: str | None = None,
        raw_text: str = "",
    ) -> bool:
        """Record one model turn; False (and no change) when (run_id, turn) is already recorded."""
        record = TurnRecord(
            run_id, turn, prompt_tokens, completion_tokens, latency_s, batch_size, finish_reason, raw_text
        )
        with self._lock:
            return self._add_turn(record, f"record turn {turn} of run {run_id}")

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
        """Record one tool call and its output; False (and no change) when ``call_id`` is known."""
        action = f"record tool call {call_id} of run {run_id}"
        encoded = _dump(dict(arguments), action)
        with self._lock:
            if call_id in self._call_ids:
                return False
            self._require_run(run_id, action)
            call = _ToolCall(
                next(self._ids["tool_calls"]),
                run_id,
                turn,
                call_id,
                name,
                encoded,
                output,
                is_error,
                duration_s,
                _now(),
                tuple(ban),
            )
            self._tool_calls.setdefault(run_id, []).append(call)
            self._call_ids.add(call_id)
            return True

    def record_event(self, event: Mapping[str, Any]) -> None:
        """Append one observer event (the dict of ``Event.to_dict()``)."""
        self.record_events([event])

    def record_events(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Append observer events at once; returns how many."""
        rows = [self._event_values(event) for event in events]
        with self._lock:
            self._add_events(rows)
        return len(rows)

    def events(self, run_id: str, *, after_id: int = 0, limit: int | None = None) -> list[EventRecord]:
        """Events of a run in the order they were recorded; ``after_id`` tails a live run."""
        with self._lock:
            found = [event for event in self._events.get(run_id, ()) if event.id > after_id]
            return [
                EventRecord(e.id, e.run_id, e.turn, e.type, e.ts, json.loads(e.payload))
                for e in found[: None if limit is None else max(limit, 0)]
            ]

    def turns(self, run_id: str) -> list[TurnRecord]:
        """Turns of a run, in order."""
        with self._lock:
            turns = self._turns.get(run_id, {})
            return [turns[number].record for number in sorted(turns)]

    def tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """Tool calls of a run, in the order they were recorded."""
        with self._lock:
            return [self._call_record(call) for call in self._tool_calls.get(run_id, ())]

    def turn_tool_calls(self, run_id: str, turn: int) -> dict[str, ToolCallRecord]:
        """The recorded tool calls of one turn, by call id."""
        with self._lock:
            return {
                call.call_id: self._call_record(call)
                for call in self._tool_calls.get(run_id, ())
                if call.turn == turn
            }

    # Results and views.

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
        """Store (or replace) the change the run proposes, flagged with ``flags``. With
        ``unique_summary``, a result of another target of the batch with the same summary and
        other code (its job's ``source`` input) is a fault of both: each is flagged
        :data:`SHARED_SUMMARY`."""
        _check_result_status(status)
        with self._lock:
            run = self._require_run(run_id, f"save result of run {run_id}")
            now = _now()
            own = list(dict.fromkeys(flags))
            if unique_summary and summary:
                code = _code(json.loads(run.inputs))
                shared = [
                    result
                    for other in self._runs_of(run.batch_id)
                    if other.id != run_id
                    and (result := self._results.get(other.id)) is not None
                    and result.summary == summary
                    and _code(json.loads(other.inputs)) != code
                ]
                if shared:
                    own.append(SHARED_SUMMARY)
                for result in shared:
                    if SHARED_SUMMARY not in result.flags:
                        result.flags, result.updated_at = (*result.flags, SHARED_SUMMARY), now
            stored = self._results.get(run_id)
            if stored is None:
                stored = _Result(next(self._ids["results"]), run_id, "", "", "", status, "", now, now, ())
                self._results[run_id] = stored
            stored.target_path, stored.original_hash, stored.diff = target_path, original_hash, diff
            stored.summary, stored.status, stored.updated_at, stored.flags = summary, status, now, tuple(own)

    def results(self, batch_id: str, status: ResultStatus | None = None) -> list[ResultRecord]:
        """Results of a batch's runs, optionally of one status, ordered by file then run."""
        with self._lock:
            return [
                self._result_record(result)
                for result in self._batch_results(batch_id)
                if status in (None, result.status)
            ]

    def set_result_status(self, run_ids: Iterable[str], status: ResultStatus) -> int:
        """Mark results applied, rejected or stale (after ``patches.apply_patches``); returns how many."""
        _check_result_status(status)
        with self._lock:
            now = _now()
            marked = [self._results[run_id] for run_id in set(run_ids) if run_id in self._results]
            for result in marked:
                result.status, result.updated_at = status, now
            return len(marked)

    def view(self, name: str, *, batch_id: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows of a reporting view (``VIEWS``), optionally of one batch (all but ``tool_stats``)."""
        if name not in VIEWS:
            raise StoreError(f"unknown view {name!r}; views: {', '.join(VIEWS)}")
        if batch_id is not None and name == "tool_stats":
            raise StoreError("view 'tool_stats' spans every batch; call it without batch_id")
        with self._lock:
            if name == "tool_stats":
                rows = [asdict(stats) for stats in self._tool_stats(self._runs)]
            elif name == "throughput_by_minute":
                rows = self._throughput(batch_id)
            else:
                runs = self._sorted(self._runs.values() if batch_id is None else self._runs_of(batch_id))
                if name == "run_summary":
                    rows = [self._summary(run) for run in runs]
                else:
                    rows = [self._failure(run) for run in runs if run.status == "failed"]
            return rows[: max(limit, 0)]

    # The report.

    def run_summaries(self, batch_id: str) -> list[RunSummaryRecord]:
        """Every run of the batch (``run_summary``), in the order they finished (unfinished last)."""
        with self._lock:
            rows = [self._summary(run) for run in self._runs_of(batch_id)]
        rows.sort(
            key=lambda row: (
                row["finished_at"] is None,
                row["finished_at"] or _NEVER,
                row["run_id"],
            )
        )
        return [
            RunSummaryRecord(
                run_id=row["run_id"],
                target_path=row["target_path"],
                qualname=row["qualname"],
                status=row["status"],
                attempts=row["attempts"],
                started_at=row["started_at"],
                finished_at=row["finished_at"],
                duration_s=row["duration_s"],
                turns=row["turns"],
                prompt_tokens=row["prompt_tokens"],
                completion_tokens=row["completion_tokens"],
                model_latency_s=float(row["model_latency_s"]),
                tool_calls=row["tool_calls"],
                tool_errors=row["tool_errors"],
                result_status=row["result_status"],
                result_flags=tuple(row["result_flags"] or ()),
            )
            for row in rows
        ]

    def engine_turns(self, batch_id: str) -> list[EngineTurnRecord]:
        """The engine's answers (``model_response`` events) to the batch's runs, every attempt,
        in time order."""
        with self._lock:
            answers = sorted(
                (event for event in self._batch_events(batch_id) if event.type == "model_response"),
                key=lambda event: (event.ts, event.id),
            )
        turns = []
        for event in answers:
            payload = json.loads(event.payload)
            usage = payload.get("usage")
            tokens = _as_int(usage.get("completion_tokens")) if isinstance(usage, dict) else None
            turns.append(
                EngineTurnRecord(
                    event.ts,
                    _as_int(payload.get("batch_size")) or 1,
                    _as_float(payload.get("latency_s")) or 0.0,
                    tokens or 0,
                    _as_text(payload.get("finish_reason")),
                )
            )
        return turns

    def batch_tool_stats(self, batch_id: str) -> list[ToolStatsRecord]:
        """Calls, errors and durations per tool over the batch's runs, most called first."""
        with self._lock:
            return self._tool_stats(self._batch_runs.get(batch_id, ()))

    def batch_failures(self, batch_id: str) -> list[FailureRecord]:
        """The batch's failed runs (``failures``), last finished first (an unfinished one last)."""
        with self._lock:
            rows = [self._failure(run) for run in self._runs_of(batch_id) if run.status == "failed"]
        rows.sort(key=lambda row: row["run_id"])
        rows.sort(
            key=lambda row: (row["finished_at"] is not None, row["finished_at"] or _NEVER), reverse=True
        )
        return [
            FailureRecord(
                row["run_id"],
                row["target_path"],
                row["qualname"],
                row["attempts"],
                row["error"] or "",
                row["finished_at"],
                row["turns"],
                row["last_event"],
            )
            for row in rows
        ]

    def batch_setup(self, batch_id: str) -> BatchSetupRecord:
        """Plugin, tools and turn limit of the batch's first run, and the grammar kinds its turns used."""
        with self._lock:
            events = sorted(self._batch_events(batch_id), key=lambda event: event.id)
        start = next((e for e in events if e.type == "kernel_start"), None)
        first: dict[str, Any] = json.loads(start.payload) if start is not None else {}
        grammars = {
            _as_text(json.loads(e.payload).get("grammar")) for e in events if e.type == "model_request"
        }
        kinds = sorted(str(kind) for kind in grammars if kind is not None)
        answer = next((e for e in events if e.type == "model_response"), None)
        decoded_by = _as_text(json.loads(answer.payload).get("model")) if answer is not None else None
        max_turns = first.get("max_turns")
        return BatchSetupRecord(
            plugin=first.get("plugin"),
            tools=tuple(str(tool) for tool in first.get("tools") or ()),
            max_turns=int(max_turns) if max_turns is not None else None,
            grammars=tuple(kinds),
            model=decoded_by or None,
        )

    def result_counts(self, batch_id: str) -> dict[str, int]:
        """The batch's results counted by status."""
        with self._lock:
            return dict(Counter(result.status for result in self._batch_results(batch_id)))

    def result_sample(self, batch_id: str, limit: int) -> list[ResultRecord]:
        """Up to ``limit`` results of the batch that change something, spread over its files:
        the first of each file (by path), then the second of each, and so on."""
        with self._lock:
            ranked: list[tuple[int, str, str, _Result]] = []
            rank: Counter[str] = Counter()
            for result in self._batch_results(batch_id):  # by file, then run
                if result.diff != "":
                    rank[result.target_path] += 1
                    ranked.append((rank[result.target_path], result.target_path, result.run_id, result))
            ranked.sort(key=lambda item: item[:3])
            return [self._result_record(result) for *_, result in ranked[: max(limit, 0)]]

    # Runs driven step by step.

    def load_runs(self, run_ids: Iterable[str]) -> dict[str, StoredRun]:
        """The runs ``run_ids`` that exist, with their states, by id."""
        with self._lock:
            return {
                run_id: self._stored_run(self._runs[run_id])
                for run_id in sorted(set(run_ids))
                if run_id in self._runs
            }

    def init_state(
        self, run: StoredRun, state: JsonDict, events: Sequence[Mapping[str, Any]]
    ) -> StoredRun | None:
        """Store the first state of the run's current claim, with its events: the run as stored
        now (next epoch), or None, writing nothing, when the claim already has a state."""
        return self.init_states([(run, state, events)])[0]

    def init_states(
        self, starts: Sequence[tuple[StoredRun, JsonDict, Sequence[Mapping[str, Any]]]]
    ) -> list[StoredRun | None]:
        """:meth:`init_state` for many runs at once: each run as stored now, or None for a
        duplicate. A new epoch replaces the state of the claim before it (epoch - 1); a state of
        this epoch stored already is a duplicate start's and stays."""
        if len({run.id for run, _, _ in starts}) != len(starts):
            raise StoreError("init_states got the same run twice")
        if not starts:
            return []
        action = f"start {len(starts)} runs"
        now = _now()
        rows = {
            run.id: _RunState(
                max(run.epoch, 0) + 1,
                run.started_at,
                state["phase"],
                state["turn"],
                0,
                _dump(state, action),
                now,
            )
            for run, state, _ in starts
        }
        with self._lock:
            for run, _, _ in starts:
                self._require_run(run.id, action)
            stored = {
                run_id
                for run_id, row in rows.items()
                if (old := self._states.get(run_id)) is None or old.epoch == row.epoch - 1
            }
            added = [self._event_values(e) for run, _, events in starts if run.id in stored for e in events]
            for run_id in stored:
                self._states[run_id] = rows[run_id]
            self._add_events(added)
        return [
            replace(run, epoch=max(run.epoch, 0) + 1, version=0, state=state) if run.id in stored else None
            for run, state, _ in starts
        ]

    def commit_state(
        self,
        run: StoredRun,
        state: JsonDict,
        events: Sequence[Mapping[str, Any]],
        *,
        turn: TurnRecord | None = None,
    ) -> StoredRun | None:
        """Write the state a step produced, with its turn and events, if the stored one is still
        ``run``'s (its epoch and version): the run as stored now, or None (nothing written)
        when a duplicate step got there first."""
        phase, number = state["phase"], state["turn"]
        if turn is not None and turn.run_id != run.id:
            raise StoreError(f"turn {turn.turn} of run {turn.run_id} cannot be committed with run {run.id}")
        action = f"commit run {run.id} turn {number}"
        encoded = _dump(state, action)
        with self._lock:
            row = self._states.get(run.id)
            if row is None or (row.epoch, row.version) != (run.epoch, run.version):
                return None
            if turn is not None and turn.turn in self._turns.get(run.id, {}):
                return None
            added = [self._event_values(event) for event in events]
            now = _now()
            row.state, row.phase, row.turn, row.version, row.updated_at = (
                encoded,
                phase,
                number,
                run.version + 1,
                now,
            )
            if turn is not None:
                self._add_turn(turn, action)
            self._add_events(added)
        return replace(run, version=run.version + 1, state=state)

    def touch_state(self, run_id: str) -> None:
        """Mark the state as moving (a sweep re-sent its step), without changing it."""
        with self._lock:
            if (row := self._states.get(run_id)) is not None:
                row.updated_at = _now()

    def begin_step(self, run_id: str, step: str) -> int:
        """Count one more attempt of ``step``; returns the attempts so far, this one included."""
        return self.begin_steps([(run_id, step)])[run_id, step]

    def begin_steps(self, steps: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """:meth:`begin_step` for many ``(run id, step)`` pairs at once: the attempts so far, by pair."""
        pairs = sorted(set(steps))
        if not pairs:
            return {}
        with self._lock:
            for run_id, _ in pairs:
                self._require_run(run_id, f"begin {len(pairs)} steps")
            now = _now()
            counted = {}
            for run_id, step in pairs:
                attempt = self._steps.setdefault(run_id, {}).setdefault(step, _StepAttempt(0, None, now))
                attempt.attempts, attempt.updated_at = attempt.attempts + 1, now
                counted[run_id, step] = attempt.attempts
            return counted

    def fail_step(self, run_id: str, step: str, error: str) -> None:
        """Record how the current attempt of ``step`` failed."""
        with self._lock:
            if (attempt := self._steps.get(run_id, {}).get(step)) is not None:
                attempt.last_error, attempt.updated_at = error, _now()

    def step_error(self, run_id: str, step: str) -> str | None:
        """The error the last failed attempt of ``step`` recorded."""
        with self._lock:
            attempt = self._steps.get(run_id, {}).get(step)
            return attempt.last_error if attempt is not None else None

    def clear_steps(self, run_id: str) -> None:
        """Forget the step attempts of a run that ended (a later re-run starts with a clean slate)."""
        with self._lock:
            self._steps.pop(run_id, None)

    def stale_runs(self, older_than_s: float, limit: int = 1000) -> list[StoredRun]:
        """Runs claimed ``older_than_s`` seconds ago or more whose state has not moved since,
        longest claimed first."""
        cutoff = _now() - timedelta(seconds=older_than_s)
        with self._lock:
            stale = sorted(
                (run.started_at, run.id)
                for run in self._runs.values()
                if run.status == "running"
                and run.started_at is not None
                and run.started_at < cutoff
                and ((row := self._states.get(run.id)) is None or row.updated_at < cutoff)
            )
            return [self._stored_run(self._runs[run_id]) for _, run_id in stale[: max(limit, 0)]]

    def undispatched(self, older_than_s: float, limit: int = 1000) -> tuple[list[str], list[str]]:
        """Work that should have started ``older_than_s`` seconds ago: batches still ``queued``,
        and queued runs of running batches."""
        cutoff = _now() - timedelta(seconds=older_than_s)
        with self._lock:
            batches = sorted(
                (b for b in self._batches.values() if b.status == "queued" and b.created_at < cutoff),
                key=lambda batch: (batch.created_at, batch.seq),
            )
            runs = self._sorted(
                run
                for run in self._runs.values()
                if run.status == "queued"
                and run.created_at < cutoff
                and self._batches[run.batch_id].status == "running"
            )
            return [b.id for b in batches[: max(limit, 0)]], [r.id for r in runs[: max(limit, 0)]]

    # Helpers; every one is called with the lock held.

    def _batch(self, batch_id: str) -> _Batch:
        batch = self._batches.get(batch_id)
        if batch is None:
            raise RecordNotFoundError(f"no batch with id {batch_id!r}")
        return batch

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise RecordNotFoundError(f"no run with id {run_id!r}")
        return run

    def _require_run(self, run_id: str, action: str) -> _Run:
        """The run a new row refers to; a plain :class:`StoreError` naming ``action`` when
        there is none (the SQL store's foreign key violation)."""
        run = self._runs.get(run_id)
        if run is None:
            raise StoreError(f"{action} failed: no run with id {run_id!r}")
        return run

    def _runs_of(self, batch_id: str) -> list[_Run]:
        return [self._runs[run_id] for run_id in self._batch_runs.get(batch_id, ())]

    @staticmethod
    def _sorted(runs: Iterable[_Run]) -> list[_Run]:
        return sorted(runs, key=lambda run: (run.created_at, run.id))

    def _open(self, batch_id: str) -> bool:
        counts = self._counts.get(batch_id, Counter())
        return any(counts[status] for status in _OPEN)

    def _push(self, run: _Run) -> None:
        """Put the (queued) run in the queues :meth:`claim_next` pops."""
        entry = (run.created_at, run.id)
        heapq.heappush(self._queue, entry)
        heapq.heappush(self._batch_queues[run.batch_id], entry)
        if len(self._queue) > 1024 + 2 * sum(counts["queued"] for counts in self._counts.values()):
            self._rebuild_queues()  # runs claimed by id leave entries behind: drop them

    def _rebuild_queues(self) -> None:
        self._queue = []
        self._batch_queues = {batch_id: [] for batch_id in self._batches}
        for run in self._runs.values():
            if run.status == "queued":
                self._queue.append((run.created_at, run.id))
                self._batch_queues[run.batch_id].append((run.created_at, run.id))
        for heap in (self._queue, *self._batch_queues.values()):
            heapq.heapify(heap)

    def _set_status(self, run: _Run, status: str) -> None:
        counts = self._counts[run.batch_id]
        counts[run.status] -= 1
        counts[status] += 1
        run.status = status
        if status == "queued":
            self._push(run)

    def _move(self, run: _Run, batch_id: str) -> None:
        self._batch_runs[run.batch_id].discard(run.id)
        self._counts[run.batch_id][run.status] -= 1
        run.batch_id = batch_id
        self._batch_runs[batch_id].add(run.id)
        self._counts[batch_id][run.status] += 1

    def _claim(self, run_ids: Iterable[str]) -> list[Run]:
        now = _now()
        claimed = []
        for run_id in run_ids:
            run = self._runs.get(run_id)
            if run is None or run.status != "queued":
                continue
            self._set_status(run, "running")
            run.attempts += 1
            run.started_at, run.finished_at, run.error = now, None, None
            self._forget_attempt(run_id)
            claimed.append(self._run_record(run))
        return claimed

    def _forget_attempt(self, run_id: str) -> None:
        """Drop the turns, tool calls and result of the run (a new claim, or the run removed)."""
        self._turns.pop(run_id, None)
        for call in self._tool_calls.pop(run_id, ()):
            self._call_ids.discard(call.call_id)
        self._results.pop(run_id, None)

    def _add_turn(self, record: TurnRecord, action: str) -> bool:
        turns = self._turns.get(record.run_id, {})
        if record.turn in turns:
            return False
        self._require_run(record.run_id, action)
        self._turns.setdefault(record.run_id, turns)[record.turn] = _Turn(
            next(self._ids["turns"]), record, _now()
        )
        return True

    @staticmethod
    def _event_values(event: Mapping[str, Any]) -> _Event:
        """An observer event dict as a row to append (its id given when it is appended)."""
        if not event.get("type") or not event.get("run_id"):
            raise StoreError(f"an event needs a 'type' and a 'run_id', got keys {sorted(event)}")
        payload = {key: value for key, value in event.items() if key not in _EVENT_KEYS}
        return _Event(
            0,
            str(event["run_id"]),
            int(event.get("turn") or 0),
            str(event["type"]),
            _timestamp(event.get("timestamp")),
            _dump(payload, f"record {event['type']} event of run {event['run_id']}"),
        )

    def _add_events(self, events: Iterable[_Event]) -> None:
        for event in events:
            event.id = next(self._ids["events"])
            self._events.setdefault(event.run_id, []).append(event)

    def _batch_events(self, batch_id: str) -> list[_Event]:
        return [
            event for run_id in self._batch_runs.get(batch_id, ()) for event in self._events.get(run_id, ())
        ]

    def _batch_results(self, batch_id: str) -> list[_Result]:
        """The results of the batch's runs, by file then run."""
        found = [
            self._results[run_id] for run_id in self._batch_runs.get(batch_id, ()) if run_id in self._results
        ]
        return sorted(found, key=lambda result: (result.target_path, result.run_id))

    def _summary(self, run: _Run) -> dict[str, Any]:
        """The ``run_summary`` row of the run."""
        turns = [turn.record for turn in self._turns.get(run.id, {}).values()]
        calls = self._tool_calls.get(run.id, [])
        result = self._results.get(run.id)
        duration = None
        if run.started_at is not None and run.finished_at is not None:
            duration = (run.finished_at - run.started_at).total_seconds()
        return {
            "run_id": run.id,
            "batch_id": run.batch_id,
            "kind": run.kind,
            "target_path": run.target_path,
            "qualname": run.qualname,
            "status": run.status,
            "attempts": run.attempts,
            "created_at": run.created_at,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "duration_s": duration,
            "turns": len(turns),
            "prompt_tokens": sum(turn.prompt_tokens for turn in turns),
            "completion_tokens": sum(turn.completion_tokens for turn in turns),
            "model_latency_s": float(sum(turn.latency_s for turn in turns)),
            "tool_calls": len(calls),
            "tool_errors": sum(1 for call in calls if call.is_error),
            "result_status": result.status if result is not None else None,
            "needs_review": None if result is None else int(bool(result.flags)),
            "result_flags": list(result.flags) if result is not None else None,
        }

    def _failure(self, run: _Run) -> dict[str, Any]:
        """The ``failures`` row of the (failed) run."""
        events = self._events.get(run.id)
        return {
            "run_id": run.id,
            "batch_id": run.batch_id,
            "kind": run.kind,
            "target_path": run.target_path,
            "qualname": run.qualname,
            "attempts": run.attempts,
            "error": run.error,
            "finished_at": run.finished_at,
            "turns": len(self._turns.get(run.id, {})),
            "last_event": events[-1].type if events else None,
        }

    def _tool_stats(self, run_ids: Iterable[str]) -> list[ToolStatsRecord]:
        """``tool_stats`` over the tool calls of ``run_ids``, most called first."""
        by_name: dict[str, list[_ToolCall]] = {}
        for run_id in run_ids:
            for call in self._tool_calls.get(run_id, ()):
                by_name.setdefault(call.name, []).append(call)
        stats = []
        for name, calls in by_name.items():
            errors = sum(1 for call in calls if call.is_error)
            durations = [call.duration_s for call in calls]
            stats.append(
                ToolStatsRecord(
                    name,
                    len(calls),
                    errors,
                    errors / len(calls),
                    sum(durations) / len(durations),
                    max(durations),
                    len({call.run_id for call in calls}),
                )
            )
        return sorted(stats, key=lambda stats: (-stats.calls, stats.name))

    def _throughput(self, batch_id: str | None) -> list[dict[str, Any]]:
        """``throughput_by_minute``: runs that ended and turns recorded, by minute and batch."""
        zero = dict.fromkeys(("runs_finished", "runs_succeeded", "runs_failed", "turns"), 0)
        zero |= {"prompt_tokens": 0, "completion_tokens": 0}
        rows: dict[tuple[datetime, str], dict[str, int]] = {}
        runs = self._runs.values() if batch_id is None else self._runs_of(batch_id)
        for run in runs:
            if run.finished_at is not None:
                row = rows.setdefault((_minute(run.finished_at), run.batch_id), dict(zero))
                row["runs_finished"] += 1
                row["runs_succeeded"] += run.status == "succeeded"
                row["runs_failed"] += run.status == "failed"
            for turn in self._turns.get(run.id, {}).values():
                row = rows.setdefault((_minute(turn.created_at), run.batch_id), dict(zero))
                row["turns"] += 1
                row["prompt_tokens"] += turn.record.prompt_tokens
                row["completion_tokens"] += turn.record.completion_tokens
        return [
            {"minute": minute, "batch_id": batch, **rows[minute, batch]} for minute, batch in sorted(rows)
        ]

    def _stored_run(self, run: _Run) -> StoredRun:
        """The run as a step sees it: its batch's options and root, and the state stored under
        its current claim (a state of an earlier claim is not the run's state)."""
        batch = self._batches[run.batch_id]
        row = self._states.get(run.id)
        current = row is not None and row.claimed_at is not None and row.claimed_at == run.started_at
        return StoredRun(
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
            options=json.loads(batch.options),
            root_path=batch.root_path,
            epoch=row.epoch if row is not None else -1,
            version=row.version if row is not None else 0,
            state=json.loads(row.state) if current and row is not None else None,
        )

    @staticmethod
    def _batch_record(batch: _Batch) -> BatchRecord:
        return BatchRecord(
            batch.id,
            batch.bundle_name,
            batch.bundle_version,
            batch.root_path,
            batch.status,
            batch.created_at,
            json.loads(batch.options),
        )

    @staticmethod
    def _run_record(run: _Run) -> Run:
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

    @staticmethod
    def _call_record(call: _ToolCall) -> ToolCallRecord:
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

    @staticmethod
    def _result_record(result: _Result) -> ResultRecord:
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


def _check_result_status(status: str) -> None:
    if status not in RESULT_STATUSES:
        raise StoreError(f"result status must be one of {RESULT_STATUSES}, got {status!r}")


if TYPE_CHECKING:
    _IS_A_STORE: Store = MemoryStore()  # mypy checks here that every role is implemented
