"""The four reporting views computed in Python, with the columns of their SQL definitions
(``migrations/versions/0002_views.py`` and ``0005_result_flags.py``), as PostgreSQL returns them:
timestamps as datetimes (here aware UTC, ``minute`` included, where PostgreSQL gives a naive UTC
timestamp and SQLite text), ``result_flags`` as a list (SQLite gives JSON text). Where SQL leaves
an order unspecified, the rows come in a fixed one.

``view`` (:mod:`.runlog`) and the report (:mod:`.report`) read them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from structured_agents.store.memory.database import MemoryDatabase
from structured_agents.store.memory.tables import RunRow, ToolCallRow
from structured_agents.store.report_records import ToolStatsRecord

__all__ = ["MemoryViews"]


class MemoryViews(MemoryDatabase):
    """The rows of ``run_summary``, ``failures``, ``tool_stats`` and ``throughput_by_minute``;
    every method is called with the lock held."""

    def _summary(self, run: RunRow) -> dict[str, Any]:
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

    def _failure(self, run: RunRow) -> dict[str, Any]:
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
        by_name: dict[str, list[ToolCallRow]] = {}
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


def _minute(value: datetime) -> datetime:
    return value.replace(second=0, microsecond=0)
