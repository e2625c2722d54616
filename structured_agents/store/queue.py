"""Batches and runs: enqueue jobs, claim them atomically, record how they ended.

Life of a run::

    queued ──claim──▶ running ──finish──▶ succeeded | failed | cancelled
      ▲                  │
      └─────requeue──────┘   (a retry; also failed ──requeue──▶ queued)

A claim is one ``UPDATE ... WHERE status = 'queued'`` (with ``FOR UPDATE SKIP LOCKED`` in
``claim_next`` on PostgreSQL), so two workers never both win the same run. Claiming clears
the turns, tool calls and result of an earlier attempt; the event log keeps every attempt.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.orm import Session

from structured_agents.jobs.spec import JobSpec
from structured_agents.status import BATCH_STATUSES, FINAL_STATUSES, BatchStatus, FinalStatus, RunStatus
from structured_agents.store.bulk import CHUNK, insert_new_runs
from structured_agents.store.database import Database
from structured_agents.store.errors import RecordNotFoundError, StoreError
from structured_agents.store.models import BatchRow, ResultRow, RunRow, ToolCallRow, TurnRow, utcnow
from structured_agents.store.records import BatchCounts, BatchRecord, EnqueueResult, Run
from structured_agents.store.rows import batch_record, run_record

__all__ = ["RunQueue"]


def _chunks(items: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class RunQueue(Database):
    """Batches and the queue of runs."""

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
        row = BatchRow(
            id=batch_id or uuid.uuid4().hex,
            bundle_name=bundle_name,
            bundle_version=bundle_version,
            root_path=root_path,
            status="queued",
            created_at=utcnow(),
            options=dict(options or {}),
        )
        with self._write(f"create batch {row.id}") as session:
            session.add(row)
            session.flush()
            return batch_record(row)

    def get_batch(self, batch_id: str) -> BatchRecord:
        """The batch ``batch_id``; :class:`RecordNotFoundError` if there is none."""
        with self._read(f"read batch {batch_id}") as session:
            return batch_record(self._batch_row(session, batch_id))

    def list_batches(self, limit: int = 50) -> list[BatchRecord]:
        """The newest batches first."""
        with self._read("list batches") as session:
            rows = session.scalars(select(BatchRow).order_by(BatchRow.created_at.desc()).limit(limit))
            return [batch_record(row) for row in rows]

    def set_batch_status(self, batch_id: str, status: BatchStatus) -> None:
        """Set the status of a batch."""
        if status not in BATCH_STATUSES:
            raise StoreError(f"batch status must be one of {BATCH_STATUSES}, got {status!r}")
        with self._write(f"set status of batch {batch_id}") as session:
            self._batch_row(session, batch_id).status = status

    def add_jobs(self, batch_id: str, jobs: Iterable[JobSpec]) -> EnqueueResult:
        """Queue ``jobs`` in the batch, in bulk; returns which were queued and which skipped.

        A job whose id is new is inserted. One that failed or was cancelled before is queued
        again and moves to this batch (attempts reset). One that succeeded, or is queued or
        running already, is skipped: its work is done or under way.
        """
        unique = list({job.job_id: job for job in jobs}.values())
        with self._write(f"add {len(unique)} jobs to batch {batch_id}") as session:
            self._batch_row(session, batch_id)
            queued = insert_new_runs(session, batch_id, unique, utcnow())
            taken = [job.job_id for job in unique if job.job_id not in queued]
            for chunk in _chunks(taken):
                requeue = (
                    update(RunRow)
                    .where(RunRow.id.in_(chunk), RunRow.status.in_(("failed", "cancelled")))
                    .values(batch_id=batch_id, status="queued", attempts=0, error=None)
                    .values(started_at=None, finished_at=None)
                    .returning(RunRow.id)
                )
                queued.update(session.scalars(requeue))
        return EnqueueResult(
            queued=tuple(job.job_id for job in unique if job.job_id in queued),
            skipped=tuple(job.job_id for job in unique if job.job_id not in queued),
        )

    def claim(self, run_id: str) -> Run | None:
        """Move the run from queued to running and count the attempt; None if it was not queued."""
        return next(iter(self._claim(RunRow.id == run_id, f"claim run {run_id}")), None)

    def claim_runs(self, run_ids: Iterable[str]) -> list[Run]:
        """:meth:`claim` every run of ``run_ids`` that is queued, in one transaction; those claimed."""
        ids = sorted(set(run_ids))
        return self._claim(RunRow.id.in_(ids), f"claim {len(ids)} runs") if ids else []

    def claim_next(self, batch_id: str | None = None) -> Run | None:
        """Claim the oldest queued run (of ``batch_id``, or of any batch); None when none is left."""
        candidate = select(RunRow.id).where(RunRow.status == "queued")
        if batch_id is not None:
            candidate = candidate.where(RunRow.batch_id == batch_id)
        candidate = (
            candidate.order_by(RunRow.created_at, RunRow.id).limit(1).with_for_update(skip_locked=True)
        )
        return next(iter(self._claim(RunRow.id == candidate.scalar_subquery(), "claim next run")), None)

    def finish(self, run_id: str, status: FinalStatus, error: str | None = None) -> bool:
        """End a running run as succeeded, failed or cancelled (a queued one may be cancelled).

        The run's batch becomes ``finished`` in the same transaction when this was its last
        queued or running run (a cancelled batch stays cancelled), so no reader sees every run
        ended under a batch still ``running``, and no crash leaves it so.

        Returns False, changing nothing, when the run is in no state to end that way (a
        redelivered message finishing it twice); :class:`RecordNotFoundError` if it does not exist.
        """
        if status not in FINAL_STATUSES:
            raise StoreError(f"finish status must be one of {FINAL_STATUSES}, got {status!r}")
        allowed = ("queued", "running") if status == "cancelled" else ("running",)
        ended = (
            update(RunRow)
            .where(RunRow.id == run_id, RunRow.status.in_(allowed))
            .values(status=status, error=error, finished_at=utcnow())
            .returning(RunRow.batch_id)
        )
        with self._write(f"set run {run_id} {status}") as session:
            batch_id = session.scalar(select(RunRow.batch_id).where(RunRow.id == run_id))
            if batch_id is None:
                raise RecordNotFoundError(f"no run with id {run_id!r}")
            # The batch row is locked first (FOR NO KEY UPDATE: inserts of its runs go on), so
            # the last runs' finishes take turns and the later one sees the earlier one's end.
            batch = select(BatchRow.id).where(BatchRow.id == batch_id)
            session.execute(batch.with_for_update(key_share=True))
            if session.scalars(ended).first() is None:
                return False
            if not self._open(session, batch_id):
                session.execute(
                    update(BatchRow)
                    .where(BatchRow.id == batch_id, BatchRow.status.in_(("queued", "running")))
                    .values(status="finished")
                )
            return True

    def requeue(self, run_id: str, error: str | None = None) -> bool:
        """Put a running or failed run back in the queue (a retry); the attempt count is kept."""
        return self._transition(run_id, ("running", "failed"), status="queued", error=error, finished_at=None)

    def finish_if_idle(self, batch_id: str) -> bool:
        """Finish a queued or running batch none of whose runs is queued or running (every job
        it was given had been done before): a batch always ends. False when runs are open."""
        with self._write(f"finish idle batch {batch_id}") as session:
            batch = select(BatchRow.id).where(BatchRow.id == batch_id)
            session.execute(batch.with_for_update(key_share=True))
            if self._open(session, batch_id):
                return False
            stmt = (
                update(BatchRow)
                .where(BatchRow.id == batch_id, BatchRow.status.in_(("queued", "running")))
                .values(status="finished")
                .returning(BatchRow.id)
            )
            return session.scalars(stmt).first() is not None

    def discard_batch(self, batch_id: str) -> None:
        """Remove a batch that was never dispatched, with its runs (their rows cascade): an
        enqueue whose broker refused the dispatch leaves nothing behind, so it can be sent again."""
        with self._write(f"discard batch {batch_id}") as session:
            session.delete(self._batch_row(session, batch_id))

    def cancel_batch(self, batch_id: str) -> int:
        """Cancel every queued run of the batch and mark the batch cancelled; returns how many."""
        with self._write(f"cancel batch {batch_id}") as session:
            self._batch_row(session, batch_id).status = "cancelled"
            stmt = (
                update(RunRow)
                .where(RunRow.batch_id == batch_id, RunRow.status == "queued")
                .values(status="cancelled", finished_at=utcnow())
                .returning(RunRow.id)
            )
            return len(session.scalars(stmt).all())

    def get_run(self, run_id: str) -> Run:
        """The run ``run_id``; :class:`RecordNotFoundError` if there is none."""
        with self._read(f"read run {run_id}") as session:
            row = session.get(RunRow, run_id)
            if row is None:
                raise RecordNotFoundError(f"no run with id {run_id!r}")
            return run_record(row)

    def ids_starting(self, prefix: str, limit: int = 2) -> tuple[list[str], list[str]]:
        """Up to ``limit`` batch ids and run ids starting with ``prefix``, each in id order
        (``%`` and ``_`` in it are matched as themselves)."""
        with self._read(f"find ids starting {prefix[:80]!r}") as session:
            batches = session.scalars(
                select(BatchRow.id)
                .where(BatchRow.id.startswith(prefix, autoescape=True))
                .order_by(BatchRow.id)
                .limit(limit)
            )
            runs = session.scalars(
                select(RunRow.id).where(RunRow.id.startswith(prefix, autoescape=True)).limit(limit)
            )
            return list(batches), list(runs)

    def list_runs(
        self, batch_id: str, status: RunStatus | None = None, *, limit: int | None = None, offset: int = 0
    ) -> list[Run]:
        """Runs of a batch, optionally of one status, oldest first."""
        query = select(RunRow).where(RunRow.batch_id == batch_id)
        if status is not None:
            query = query.where(RunRow.status == status)
        query = query.order_by(RunRow.created_at, RunRow.id).offset(offset).limit(limit)
        with self._read(f"list runs of batch {batch_id}") as session:
            return [run_record(row) for row in session.scalars(query)]

    def run_ids(self, batch_id: str, status: RunStatus) -> list[str]:
        """Ids of the batch's runs in ``status``, oldest first (no row is loaded)."""
        query = select(RunRow.id).where(RunRow.batch_id == batch_id, RunRow.status == status)
        with self._read(f"list {status} run ids of batch {batch_id}") as session:
            return list(session.scalars(query.order_by(RunRow.created_at, RunRow.id)))

    def status_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """How many runs, and how many batches, are in each status (the metrics' gauges)."""
        runs = select(RunRow.status, func.count()).group_by(RunRow.status)
        batches = select(BatchRow.status, func.count()).group_by(BatchRow.status)
        with self._read("count runs and batches by status") as session:
            return (
                {str(status): int(n) for status, n in session.execute(runs)},
                {str(status): int(n) for status, n in session.execute(batches)},
            )

    def batch_counts(self, batch_id: str) -> BatchCounts:
        """How many runs of the batch are in each status."""
        query = select(RunRow.status, func.count()).where(RunRow.batch_id == batch_id).group_by(RunRow.status)
        with self._read(f"count runs of batch {batch_id}") as session:
            self._batch_row(session, batch_id)
            counts = {cast(RunStatus, status): int(n) for status, n in session.execute(query)}
            return BatchCounts(batch_id=batch_id, by_status=counts)

    def _claim(self, which: ColumnElement[bool], action: str) -> list[Run]:
        stmt = (
            update(RunRow)
            .where(which, RunRow.status == "queued")
            .values(
                status="running",
                attempts=RunRow.attempts + 1,
                started_at=utcnow(),
                finished_at=None,
                error=None,
            )
            .returning(RunRow)
            .execution_options(synchronize_session=False)
        )
        with self._write(action) as session:
            rows = session.scalars(stmt).all()
            ids = [row.id for row in rows]
            if ids:
                for table in (TurnRow, ToolCallRow, ResultRow):
                    session.execute(delete(table).where(table.run_id.in_(ids)))
            return [run_record(row) for row in rows]

    def _transition(self, run_id: str, allowed: tuple[str, ...], **values: Any) -> bool:
        stmt = update(RunRow).where(RunRow.id == run_id, RunRow.status.in_(allowed)).values(**values)
        with self._write(f"set run {run_id} {values['status']}") as session:
            if session.scalars(stmt.returning(RunRow.id)).first() is not None:
                return True
            if session.get(RunRow, run_id) is None:
                raise RecordNotFoundError(f"no run with id {run_id!r}")
            return False

    @staticmethod
    def _open(session: Session, batch_id: str) -> bool:
        """Whether a run of the batch is still queued or running (one index lookup)."""
        query = select(RunRow.id).where(RunRow.batch_id == batch_id, RunRow.status.in_(("queued", "running")))
        return session.scalars(query.limit(1)).first() is not None

    @staticmethod
    def _batch_row(session: Session, batch_id: str) -> BatchRow:
        row = session.get(BatchRow, batch_id)
        if row is None:
            raise RecordNotFoundError(f"no batch with id {batch_id!r}")
        return row
