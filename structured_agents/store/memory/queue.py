"""Batches and runs in memory: enqueue jobs, claim them, record how they ended (the memory
twin of :mod:`structured_agents.store.queue`).

Queued runs wait in two heaps of ``(created_at, run id)``, one over every batch and one per
batch, that :meth:`MemoryQueue.claim_next` pops; a claim moves the run from queued to running
or returns None (False for a finish or a requeue) when it lost the race. Claiming forgets the
turns, tool calls and result of an earlier attempt; the event log keeps every attempt.
"""

from __future__ import annotations

import heapq
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any, cast

from structured_agents.jobs.spec import JobSpec
from structured_agents.status import BATCH_STATUSES, FINAL_STATUSES, BatchStatus, FinalStatus, RunStatus
from structured_agents.store.errors import StoreError
from structured_agents.store.memory.database import MemoryDatabase
from structured_agents.store.memory.tables import (
    OPEN,
    BatchRow,
    RunRow,
    batch_record,
    dump,
    job_inputs,
    now,
    run_record,
)
from structured_agents.store.records import BatchCounts, BatchRecord, EnqueueResult, Run

__all__ = ["MemoryQueue"]


class MemoryQueue(MemoryDatabase):
    """Batches and the run queue."""

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
        encoded = dump(dict(options or {}), action)
        with self._lock:
            if batch_id in self._batches:
                raise StoreError(f"{action} failed: a batch with id {batch_id!r} exists")
            batch = BatchRow(
                batch_id,
                bundle_name,
                bundle_version,
                root_path,
                "queued",
                now(),
                encoded,
                next(self._batch_seq),
            )
            self._batches[batch_id] = batch
            self._batch_runs[batch_id] = set()
            self._counts[batch_id] = Counter()
            self._batch_queues[batch_id] = []
            return batch_record(batch)

    def get_batch(self, batch_id: str) -> BatchRecord:
        """The batch ``batch_id``; :class:`RecordNotFoundError` if there is none."""
        with self._lock:
            return batch_record(self._batch(batch_id))

    def list_batches(self, limit: int = 50) -> list[BatchRecord]:
        """The newest batches first."""
        with self._lock:
            batches = sorted(self._batches.values(), key=lambda b: (b.created_at, b.seq), reverse=True)
            return [batch_record(batch) for batch in batches[: max(limit, 0)]]

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
            finished_at = now()
            queued = [run for run in self._runs_of(batch_id) if run.status == "queued"]
            for run in queued:
                self._set_status(run, "cancelled")
                run.finished_at = finished_at
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
            if batch is None or batch.status not in OPEN:
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
            inputs = [job_inputs(job) for job in unique]  # every job checked before one is added
            created_at = now()
            queued: set[str] = set()
            for job, encoded in zip(unique, inputs, strict=True):
                run = self._runs.get(job.job_id)
                if run is None:
                    run = RunRow(
                        job.job_id,
                        batch_id,
                        job.kind,
                        job.path,
                        job.qualname,
                        job.source_hash,
                        "queued",
                        0,
                        None,
                        created_at,
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
        allowed = OPEN if status == "cancelled" else ("running",)
        with self._lock:
            run = self._run(run_id)
            if run.status not in allowed:
                return False
            self._set_status(run, status)
            run.error, run.finished_at = error, now()
            batch = self._batches[run.batch_id]
            if not self._open(batch.id) and batch.status in OPEN:
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
            return run_record(self._run(run_id))

    def ids_starting(self, prefix: str, limit: int = 2) -> tuple[list[str], list[str]]:
        """Up to ``limit`` batch ids and run ids starting with ``prefix``, each in id order."""
        with self._lock:
            batches = sorted(key for key in self._batches if key.startswith(prefix))[:limit]
            runs = sorted(key for key in self._runs if key.startswith(prefix))[:limit]
            return batches, runs

    def list_runs(
        self, batch_id: str, status: RunStatus | None = None, *, limit: int | None = None, offset: int = 0
    ) -> list[Run]:
        """Runs of a batch, optionally of one status, oldest first."""
        with self._lock:
            runs = self._sorted(run for run in self._runs_of(batch_id) if status in (None, run.status))
            start = max(offset, 0)
            end = None if limit is None else start + max(limit, 0)
            return [run_record(run) for run in runs[start:end]]

    def run_ids(self, batch_id: str, status: RunStatus) -> list[str]:
        """Ids of the batch's runs in ``status``, oldest first."""
        with self._lock:
            return [run.id for run in self._sorted(r for r in self._runs_of(batch_id) if r.status == status)]

    # Helpers; every one is called with the lock held.

    def _open(self, batch_id: str) -> bool:
        counts = self._counts.get(batch_id, Counter())
        return any(counts[status] for status in OPEN)

    def _push(self, run: RunRow) -> None:
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

    def _set_status(self, run: RunRow, status: str) -> None:
        counts = self._counts[run.batch_id]
        counts[run.status] -= 1
        counts[status] += 1
        run.status = status
        if status == "queued":
            self._push(run)

    def _move(self, run: RunRow, batch_id: str) -> None:
        self._batch_runs[run.batch_id].discard(run.id)
        self._counts[run.batch_id][run.status] -= 1
        run.batch_id = batch_id
        self._batch_runs[batch_id].add(run.id)
        self._counts[batch_id][run.status] += 1

    def _claim(self, run_ids: Iterable[str]) -> list[Run]:
        claimed_at = now()
        claimed = []
        for run_id in run_ids:
            run = self._runs.get(run_id)
            if run is None or run.status != "queued":
                continue
            self._set_status(run, "running")
            run.attempts += 1
            run.started_at, run.finished_at, run.error = claimed_at, None, None
            self._forget_attempt(run_id)
            claimed.append(run_record(run))
        return claimed
