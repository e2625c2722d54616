"""The figures of one batch that the HTML report (``sa report``) draws, read through the store.

Every method reads one batch and returns frozen records (:mod:`.report_records`), never rows,
so the report package needs no SQLAlchemy. Where a reporting view fits, the query reads the view
(``run_summary``, ``failures``; see ``migrations/versions/0002_views.py``) as a typed table
construct, so timestamps come back as datetimes on both dialects; ``tool_stats`` spans every
batch, so its per-batch twin is a query here with the same columns. The engine's turns are read
from the ``model_response`` events (their timestamps are when the engine answered, and every
attempt of a retried run is there), their numbers extracted from the JSON payload in SQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import DateTime, Float, Integer, String, Text, cast, column, distinct, func, select, table
from sqlalchemy.sql.expression import TableClause

from structured_agents.store.database import Database
from structured_agents.store.models import EventRow, JsonType, ResultRow, RunRow, ToolCallRow
from structured_agents.store.records import ResultRecord
from structured_agents.store.report_records import (
    BatchSetupRecord,
    EngineTurnRecord,
    FailureRecord,
    RunSummaryRecord,
    ToolStatsRecord,
)
from structured_agents.store.rows import result_record, utc, utc_or_none

__all__ = ["ReportQueries"]

_TIME = DateTime(timezone=True)
_RUN_SUMMARY: TableClause = table(
    "run_summary",
    *(column(name, String) for name in ("run_id", "batch_id", "target_path", "qualname", "status")),
    column("attempts", Integer),
    *(column(name, _TIME) for name in ("started_at", "finished_at")),
    column("duration_s", Float),
    *(column(name, Integer) for name in ("turns", "prompt_tokens", "completion_tokens")),
    column("model_latency_s", Float),
    *(column(name, Integer) for name in ("tool_calls", "tool_errors")),
    column("result_status", String),
    column("result_flags", JsonType),
)
_FAILURES: TableClause = table(
    "failures",
    *(column(name, String) for name in ("run_id", "batch_id", "target_path", "qualname")),
    column("attempts", Integer),
    column("error", Text),
    column("finished_at", _TIME),
    column("turns", Integer),
    column("last_event", String),
)


class ReportQueries(Database):
    """Per-batch reads for the report (mixed into :class:`~structured_agents.store.SqlStore`)."""

    def run_summaries(self, batch_id: str) -> list[RunSummaryRecord]:
        """Every run of the batch from ``run_summary``, in the order they finished (unfinished last)."""
        view = _RUN_SUMMARY.c
        query = (
            select(*(c for c in _RUN_SUMMARY.c if c.name != "batch_id"))
            .where(view.batch_id == batch_id)
            .order_by(view.finished_at.is_(None), view.finished_at, view.run_id)
        )
        with self._read(f"read run summaries of batch {batch_id}") as session:
            return [
                RunSummaryRecord(
                    run_id=row.run_id,
                    target_path=row.target_path,
                    qualname=row.qualname,
                    status=row.status,
                    attempts=row.attempts,
                    started_at=utc_or_none(row.started_at),
                    finished_at=utc_or_none(row.finished_at),
                    duration_s=row.duration_s,
                    turns=row.turns,
                    prompt_tokens=row.prompt_tokens,
                    completion_tokens=row.completion_tokens,
                    model_latency_s=float(row.model_latency_s),
                    tool_calls=row.tool_calls,
                    tool_errors=row.tool_errors,
                    result_status=row.result_status,
                    result_flags=tuple(row.result_flags or ()),
                )
                for row in session.execute(query)
            ]

    def engine_turns(self, batch_id: str) -> list[EngineTurnRecord]:
        """The engine's answers to the batch's runs, every attempt, in time order."""
        payload = EventRow.payload
        query = (
            select(
                EventRow.ts,
                payload["batch_size"].as_integer(),
                payload["latency_s"].as_float(),
                payload[("usage", "completion_tokens")].as_integer(),
                payload["finish_reason"].as_string(),
            )
            .join(RunRow, RunRow.id == EventRow.run_id)
            .where(RunRow.batch_id == batch_id, EventRow.type == "model_response")
            .order_by(EventRow.ts, EventRow.id)
        )
        with self._read(f"read engine turns of batch {batch_id}") as session:
            return [
                EngineTurnRecord(utc(ts), size or 1, latency or 0.0, tokens or 0, reason)
                for ts, size, latency, tokens, reason in session.execute(query)
            ]

    def batch_tool_stats(self, batch_id: str) -> list[ToolStatsRecord]:
        """Calls, errors and durations per tool over the batch's runs, most called first."""
        errors = func.sum(cast(ToolCallRow.is_error, Integer))
        query = (
            select(
                ToolCallRow.name,
                func.count(),
                errors,
                func.avg(ToolCallRow.duration_s),
                func.max(ToolCallRow.duration_s),
                func.count(distinct(ToolCallRow.run_id)),
            )
            .join(RunRow, RunRow.id == ToolCallRow.run_id)
            .where(RunRow.batch_id == batch_id)
            .group_by(ToolCallRow.name)
            .order_by(func.count().desc(), ToolCallRow.name)
        )
        with self._read(f"read tool stats of batch {batch_id}") as session:
            return [
                ToolStatsRecord(name, calls, int(errs), int(errs) / calls, float(avg), float(top), runs)
                for name, calls, errs, avg, top, runs in session.execute(query)
            ]

    def batch_failures(self, batch_id: str) -> list[FailureRecord]:
        """The batch's failed runs from the ``failures`` view, last finished first."""
        view = _FAILURES.c
        query = (
            select(*(c for c in _FAILURES.c if c.name != "batch_id"))
            .where(view.batch_id == batch_id)
            .order_by(view.finished_at.desc(), view.run_id)
        )
        with self._read(f"read failures of batch {batch_id}") as session:
            return [
                FailureRecord(
                    row.run_id,
                    row.target_path,
                    row.qualname,
                    row.attempts,
                    row.error or "",
                    utc_or_none(row.finished_at),
                    row.turns,
                    row.last_event,
                )
                for row in session.execute(query)
            ]

    def batch_setup(self, batch_id: str) -> BatchSetupRecord:
        """Plugin, tools and turn limit of the batch's first run, and the grammar kinds its turns used."""
        start = (
            select(EventRow.payload)
            .join(RunRow, RunRow.id == EventRow.run_id)
            .where(RunRow.batch_id == batch_id, EventRow.type == "kernel_start")
            .order_by(EventRow.id)
            .limit(1)
        )
        grammar = EventRow.payload["grammar"].as_string()
        grammars = (
            select(grammar)
            .distinct()
            .join(RunRow, RunRow.id == EventRow.run_id)
            .where(RunRow.batch_id == batch_id, EventRow.type == "model_request", grammar.is_not(None))
        )
        model = (
            select(EventRow.payload["model"].as_string())
            .join(RunRow, RunRow.id == EventRow.run_id)
            .where(RunRow.batch_id == batch_id, EventRow.type == "model_response")
            .order_by(EventRow.id)
            .limit(1)
        )
        with self._read(f"read the setup of batch {batch_id}") as session:
            first: dict[str, Any] = session.scalars(start).first() or {}
            kinds = sorted(str(kind) for kind in session.scalars(grammars))
            decoded_by = session.scalars(model).first()
        return BatchSetupRecord.of(first, kinds, decoded_by)

    def result_counts(self, batch_id: str) -> dict[str, int]:
        """The batch's results counted by status."""
        query = (
            select(ResultRow.status, func.count())
            .join(RunRow, RunRow.id == ResultRow.run_id)
            .where(RunRow.batch_id == batch_id)
            .group_by(ResultRow.status)
        )
        with self._read(f"count results of batch {batch_id}") as session:
            return {status: count for status, count in session.execute(query)}

    def result_sample(self, batch_id: str, limit: int) -> list[ResultRecord]:
        """Up to ``limit`` results of the batch that change something, spread over its files:
        the first of each file (by path), then the second of each, and so on."""
        rank = func.row_number().over(partition_by=ResultRow.target_path, order_by=ResultRow.run_id)
        ranked = (
            select(ResultRow.id, rank.label("rank"))
            .join(RunRow, RunRow.id == ResultRow.run_id)
            .where(RunRow.batch_id == batch_id, ResultRow.diff != "")
            .subquery()
        )
        query = (
            select(ResultRow)
            .join(ranked, ranked.c.id == ResultRow.id)
            .order_by(ranked.c.rank, ResultRow.target_path, ResultRow.run_id)
            .limit(limit)
        )
        with self._read(f"read a sample of the results of batch {batch_id}") as session:
            return [result_record(row) for row in session.scalars(query)]
