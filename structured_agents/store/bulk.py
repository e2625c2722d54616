"""Bulk insert of new runs: PostgreSQL's ``COPY``, multi-row ``INSERT`` elsewhere.

Enqueueing ten thousand jobs is one statement per 500 rows through SQLAlchemy's executemany,
most of it spent binding parameters row by row. On PostgreSQL the rows go instead through
psycopg 3's ``COPY ... FROM STDIN`` into a temporary table (dropped at commit), then one
``INSERT ... SELECT ... ON CONFLICT (id) DO NOTHING RETURNING id``: about five times faster
for the same rows, and the same result, the ids of the runs that were new.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Text, column, literal, null, select, table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from structured_agents.jobs.spec import JobSpec
from structured_agents.store.errors import StoreError
from structured_agents.store.models import JsonType, RunRow

__all__ = ["CHUNK", "insert_new_runs"]

CHUNK = 500
"""Ids per ``IN (...)`` list and rows per multi-row ``INSERT`` (well under SQLite's variable limit)."""
_STAGED = "staged_runs"
_COLUMNS = ("id", "kind", "target_path", "qualname", "source_hash")


def insert_new_runs(session: Session, batch_id: str, jobs: Sequence[JobSpec], now: datetime) -> set[str]:
    """Insert a queued run of ``batch_id`` for each job (ids unique) whose id is not taken yet;
    returns the ids inserted."""
    if not jobs:
        return set()
    inputs = [_json(job) for job in jobs]  # a job whose inputs are not JSON is named before anything is sent
    if session.get_bind().dialect.name == "postgresql":
        return _copy_runs(session, batch_id, jobs, inputs, now)
    inserted: set[str] = set()
    for start in range(0, len(jobs), CHUNK):
        rows = [_values(job, batch_id, now) for job in jobs[start : start + CHUNK]]
        stmt = sqlite.insert(RunRow).on_conflict_do_nothing(index_elements=["id"]).returning(RunRow.id)
        inserted.update(session.scalars(stmt, rows))
    return inserted


def _copy_runs(
    session: Session, batch_id: str, jobs: Sequence[JobSpec], inputs: Sequence[str], now: datetime
) -> set[str]:
    driver: Any = session.connection().connection.driver_connection  # psycopg 3, in this transaction
    with driver.cursor() as cursor:
        columns = ", ".join(f"{name} text" for name in _COLUMNS)
        cursor.execute(f"CREATE TEMPORARY TABLE {_STAGED} ({columns}, inputs jsonb) ON COMMIT DROP")
        with cursor.copy(f"COPY {_STAGED} FROM STDIN") as copy:
            for job, text in zip(jobs, inputs, strict=True):
                copy.write_row((job.job_id, job.kind, job.path, job.qualname, job.source_hash, text))
    staged = table(_STAGED, *(column(name, Text) for name in _COLUMNS), column("inputs", JsonType))
    rows = select(
        staged.c.id,
        literal(batch_id),
        staged.c.kind,
        staged.c.target_path,
        staged.c.qualname,
        staged.c.source_hash,
        literal("queued"),
        literal(0),
        null(),
        literal(now, RunRow.created_at.type),
        null(),
        null(),
        staged.c.inputs,
    )
    names = ["id", "batch_id", "kind", "target_path", "qualname", "source_hash", "status", "attempts"]
    names += ["error", "created_at", "started_at", "finished_at", "inputs"]
    stmt = postgresql.insert(RunRow).from_select(names, rows).on_conflict_do_nothing(index_elements=["id"])
    return set(session.scalars(stmt.returning(RunRow.id)))


def _json(job: JobSpec) -> str:
    try:
        return json.dumps(job.inputs)
    except (TypeError, ValueError) as exc:
        where = f"job {job.job_id} ({job.path} {job.qualname})"
        raise StoreError(f"{where}: inputs are not JSON: {exc}") from None


def _values(job: JobSpec, batch_id: str, now: datetime) -> dict[str, Any]:
    return {
        "id": job.job_id,
        "batch_id": batch_id,
        "kind": job.kind,
        "target_path": job.path,
        "qualname": job.qualname,
        "source_hash": job.source_hash,
        "status": "queued",
        "attempts": 0,
        "error": None,
        "created_at": now,
        "started_at": None,
        "finished_at": None,
        "inputs": dict(job.inputs),
    }
