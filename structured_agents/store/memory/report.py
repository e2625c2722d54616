"""The figures of one batch that the HTML report (``sa report``) draws, from memory (the memory
twin of :mod:`structured_agents.store.report`).

Every method reads one batch and returns frozen records (:mod:`~structured_agents.store.report_records`):
runs and failures as the ``run_summary`` and ``failures`` views (:mod:`.views`) give them, tool
figures as ``tool_stats`` over the batch's runs, and the engine's turns from the batch's
``model_response`` events, their numbers read from the JSON payload as SQL's ``->>`` would.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from structured_agents.store.memory.tables import NEVER, EventRow, ResultRow, result_record
from structured_agents.store.memory.views import MemoryViews
from structured_agents.store.records import ResultRecord
from structured_agents.store.report_records import (
    BatchSetupRecord,
    EngineTurnRecord,
    FailureRecord,
    RunSummaryRecord,
    ToolStatsRecord,
)

__all__ = ["MemoryReport"]


class MemoryReport(MemoryViews):
    """The report's reads of one batch."""

    def run_summaries(self, batch_id: str) -> list[RunSummaryRecord]:
        """Every run of the batch (``run_summary``), in the order they finished (unfinished last)."""
        with self._lock:
            rows = [self._summary(run) for run in self._runs_of(batch_id)]
        rows.sort(
            key=lambda row: (
                row["finished_at"] is None,
                row["finished_at"] or NEVER,
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
        rows.sort(key=lambda row: (row["finished_at"] is not None, row["finished_at"] or NEVER), reverse=True)
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
        return BatchSetupRecord.of(first, kinds, decoded_by)

    def result_counts(self, batch_id: str) -> dict[str, int]:
        """The batch's results counted by status."""
        with self._lock:
            return dict(Counter(result.status for result in self._batch_results(batch_id)))

    def result_sample(self, batch_id: str, limit: int) -> list[ResultRecord]:
        """Up to ``limit`` results of the batch that change something, spread over its files:
        the first of each file (by path), then the second of each, and so on."""
        with self._lock:
            ranked: list[tuple[int, str, str, ResultRow]] = []
            rank: Counter[str] = Counter()
            for result in self._batch_results(batch_id):  # by file, then run
                if result.diff != "":
                    rank[result.target_path] += 1
                    ranked.append((rank[result.target_path], result.target_path, result.run_id, result))
            ranked.sort(key=lambda item: item[:3])
            return [result_record(result) for *_, result in ranked[: max(limit, 0)]]

    def _batch_events(self, batch_id: str) -> list[EventRow]:
        return [
            event for run_id in self._batch_runs.get(batch_id, ()) for event in self._events.get(run_id, ())
        ]


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
