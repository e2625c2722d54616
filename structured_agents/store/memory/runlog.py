"""What happened inside runs, in memory: turns, tool calls, observer events, results, and the
reporting views (the memory twin of :mod:`structured_agents.store.runlog`; the views' rows are
computed in :mod:`.views`).

Turn and tool-call writes are idempotent, on ``(run_id, turn)`` and ``call_id`` as the SQL
store's unique keys: a step that is redelivered records nothing twice. A result is replaced on
``run_id``; events are appended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from structured_agents.status import ResultStatus
from structured_agents.store.checks import check_result_status, code_of
from structured_agents.store.errors import StoreError
from structured_agents.store.memory.tables import (
    ResultRow,
    ToolCallRow,
    call_record,
    dump,
    event_record,
    event_row,
    now,
    result_record,
)
from structured_agents.store.memory.views import MemoryViews
from structured_agents.store.names import SHARED_SUMMARY, VIEWS
from structured_agents.store.records import EventRecord, ResultRecord, ToolCallRecord, TurnRecord

__all__ = ["MemoryRunLog"]


class MemoryRunLog(MemoryViews):
    """Turns, tool calls, events, results and views of runs."""

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
        encoded = dump(dict(arguments), action)
        with self._lock:
            if call_id in self._call_ids:
                return False
            self._require_run(run_id, action)
            call = ToolCallRow(
                next(self._ids["tool_calls"]),
                run_id,
                turn,
                call_id,
                name,
                encoded,
                output,
                is_error,
                duration_s,
                now(),
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
        rows = [event_row(event) for event in events]
        with self._lock:
            self._add_events(rows)
        return len(rows)

    def events(self, run_id: str, *, after_id: int = 0, limit: int | None = None) -> list[EventRecord]:
        """Events of a run in the order they were recorded; ``after_id`` tails a live run."""
        with self._lock:
            found = [event for event in self._events.get(run_id, ()) if event.id > after_id]
            return [event_record(event) for event in found[: None if limit is None else max(limit, 0)]]

    def turns(self, run_id: str) -> list[TurnRecord]:
        """Turns of a run, in order."""
        with self._lock:
            turns = self._turns.get(run_id, {})
            return [turns[number].record for number in sorted(turns)]

    def tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """Tool calls of a run, in the order they were recorded."""
        with self._lock:
            return [call_record(call) for call in self._tool_calls.get(run_id, ())]

    def turn_tool_calls(self, run_id: str, turn: int) -> dict[str, ToolCallRecord]:
        """The recorded tool calls of one turn, by call id."""
        with self._lock:
            calls = self._tool_calls.get(run_id, ())
            return {call.call_id: call_record(call) for call in calls if call.turn == turn}

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
        :data:`~structured_agents.store.names.SHARED_SUMMARY`."""
        check_result_status(status)
        with self._lock:
            run = self._require_run(run_id, f"save result of run {run_id}")
            saved_at = now()
            own = list(dict.fromkeys(flags))
            if unique_summary and summary:
                code = code_of(json.loads(run.inputs))
                shared = [
                    result
                    for other in self._runs_of(run.batch_id)
                    if other.id != run_id
                    and (result := self._results.get(other.id)) is not None
                    and result.summary == summary
                    and code_of(json.loads(other.inputs)) != code
                ]
                if shared:
                    own.append(SHARED_SUMMARY)
                for result in shared:
                    if SHARED_SUMMARY not in result.flags:
                        result.flags, result.updated_at = (*result.flags, SHARED_SUMMARY), saved_at
            stored = self._results.get(run_id)
            if stored is None:
                stored = ResultRow(
                    next(self._ids["results"]), run_id, "", "", "", status, "", saved_at, saved_at, ()
                )
                self._results[run_id] = stored
            stored.target_path, stored.original_hash, stored.diff = target_path, original_hash, diff
            stored.summary, stored.status, stored.updated_at = summary, status, saved_at
            stored.flags = tuple(own)

    def results(self, batch_id: str, status: ResultStatus | None = None) -> list[ResultRecord]:
        """Results of a batch's runs, optionally of one status, ordered by file then run."""
        with self._lock:
            return [
                result_record(result)
                for result in self._batch_results(batch_id)
                if status in (None, result.status)
            ]

    def set_result_status(self, run_ids: Iterable[str], status: ResultStatus) -> int:
        """Mark results applied, rejected or stale (after ``patches.apply_patches``); returns how many."""
        check_result_status(status)
        with self._lock:
            marked_at = now()
            marked = [self._results[run_id] for run_id in set(run_ids) if run_id in self._results]
            for result in marked:
                result.status, result.updated_at = status, marked_at
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
