"""What happened inside runs: turns, tool calls, observer events, results, and the report views.

Turn and tool-call writes are idempotent (``INSERT ... ON CONFLICT DO NOTHING`` on
``(run_id, turn)`` and ``call_id``): a step that a queue redelivers records nothing twice.
A result is upserted on ``run_id``; events are appended.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import insert, select, text, update
from sqlalchemy.orm import Session

from structured_agents.status import ResultStatus
from structured_agents.store.checks import check_result_status, code_of, event_time
from structured_agents.store.database import Database
from structured_agents.store.errors import StoreError
from structured_agents.store.models import BatchRow, EventRow, ResultRow, RunRow, ToolCallRow, TurnRow, utcnow
from structured_agents.store.names import EVENT_KEYS, SHARED_SUMMARY, VIEWS
from structured_agents.store.records import EventRecord, ResultRecord, ToolCallRecord, TurnRecord
from structured_agents.store.rows import event_record, result_record, tool_call_record, turn_record

__all__ = ["RunLog", "event_row_values"]


def event_row_values(event: Mapping[str, Any]) -> dict[str, Any]:
    """Column values of an observer event dict (``type``, ``run_id``, ``turn``, ``timestamp`` + payload)."""
    if not event.get("type") or not event.get("run_id"):
        raise StoreError(f"an event needs a 'type' and a 'run_id', got keys {sorted(event)}")
    return {
        "run_id": str(event["run_id"]),
        "turn": int(event.get("turn") or 0),
        "type": str(event["type"]),
        "ts": event_time(event.get("timestamp")),
        "payload": {key: value for key, value in event.items() if key not in EVENT_KEYS},
    }


class RunLog(Database):
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
        values = {
            "run_id": run_id,
            "turn": turn,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "latency_s": latency_s,
            "batch_size": batch_size,
            "finish_reason": finish_reason,
            "raw_text": raw_text,
            "created_at": utcnow(),
        }
        stmt = self._insert(TurnRow).values(values).on_conflict_do_nothing(index_elements=["run_id", "turn"])
        with self._write(f"record turn {turn} of run {run_id}") as session:
            return session.scalars(stmt.returning(TurnRow.id)).first() is not None

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
        values = {
            "run_id": run_id,
            "turn": turn,
            "call_id": call_id,
            "name": name,
            "arguments": dict(arguments),
            "output": output,
            "is_error": is_error,
            "duration_s": duration_s,
            "ban": list(ban),
            "created_at": utcnow(),
        }
        stmt = self._insert(ToolCallRow).values(values).on_conflict_do_nothing(index_elements=["call_id"])
        with self._write(f"record tool call {call_id} of run {run_id}") as session:
            return session.scalars(stmt.returning(ToolCallRow.id)).first() is not None

    def record_event(self, event: Mapping[str, Any]) -> None:
        """Append one observer event (the dict of ``Event.to_dict()``)."""
        self.record_events([event])

    def record_events(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Append observer events in one transaction; returns how many."""
        rows = [event_row_values(event) for event in events]
        if not rows:
            return 0
        with self._write(f"record {len(rows)} events") as session:
            session.execute(insert(EventRow), rows)
        return len(rows)

    def events(self, run_id: str, *, after_id: int = 0, limit: int | None = None) -> list[EventRecord]:
        """Events of a run in the order they were recorded; ``after_id`` tails a live run."""
        query = (
            select(EventRow)
            .where(EventRow.run_id == run_id, EventRow.id > after_id)
            .order_by(EventRow.id)
            .limit(limit)
        )
        with self._read(f"read events of run {run_id}") as session:
            return [event_record(row) for row in session.scalars(query)]

    def turns(self, run_id: str) -> list[TurnRecord]:
        """Turns of a run, in order."""
        query = select(TurnRow).where(TurnRow.run_id == run_id).order_by(TurnRow.turn)
        with self._read(f"read turns of run {run_id}") as session:
            return [turn_record(row) for row in session.scalars(query)]

    def tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """Tool calls of a run, in the order they were recorded."""
        query = select(ToolCallRow).where(ToolCallRow.run_id == run_id).order_by(ToolCallRow.id)
        with self._read(f"read tool calls of run {run_id}") as session:
            return [tool_call_record(row) for row in session.scalars(query)]

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
        """Store (or replace) the change the run proposes, as a unified diff, flagged with
        ``flags``. With ``unique_summary``, a result of another target of the batch with the
        same summary and other code (its job's ``source`` input) is a fault of both: each is
        flagged :data:`SHARED_SUMMARY` (the batch row is locked while they are compared, so two
        such results saved at once still see each other)."""
        check_result_status(status)
        now = utcnow()
        values: dict[str, Any] = {
            "target_path": target_path,
            "original_hash": original_hash,
            "diff": diff,
            "summary": summary,
            "status": status,
            "updated_at": now,
            "flags": list(dict.fromkeys(flags)),
        }
        with self._write(f"save result of run {run_id}") as session:
            if unique_summary and summary:
                shared = self._sharing(session, run_id, summary)
                if shared:
                    values["flags"] = [*values["flags"], SHARED_SUMMARY]
                for other, other_flags in shared:
                    if SHARED_SUMMARY not in other_flags:
                        session.execute(
                            update(ResultRow)
                            .where(ResultRow.run_id == other)
                            .values(flags=[*other_flags, SHARED_SUMMARY], updated_at=now)
                        )
            stmt = (
                self._insert(ResultRow)
                .values(run_id=run_id, created_at=now, **values)
                .on_conflict_do_update(index_elements=["run_id"], set_=values)
            )
            session.execute(stmt)

    @staticmethod
    def _sharing(session: Session, run_id: str, summary: str) -> list[tuple[str, list[str]]]:
        """The results of the run's batch (its row locked first) with ``summary`` whose job's
        code differs from the run's: ``(run_id, flags)``."""
        mine = session.execute(select(RunRow.batch_id, RunRow.inputs).where(RunRow.id == run_id)).first()
        if mine is None:
            return []
        batch_id, inputs = mine
        session.execute(select(BatchRow.id).where(BatchRow.id == batch_id).with_for_update(key_share=True))
        code = code_of(inputs)
        rows = session.execute(
            select(ResultRow.run_id, ResultRow.flags, RunRow.inputs)
            .join(RunRow, RunRow.id == ResultRow.run_id)
            .where(RunRow.batch_id == batch_id, ResultRow.summary == summary, ResultRow.run_id != run_id)
        )
        return [
            (other, list(flags or ())) for other, flags, other_inputs in rows if code_of(other_inputs) != code
        ]

    def results(self, batch_id: str, status: ResultStatus | None = None) -> list[ResultRecord]:
        """Results of a batch's runs, optionally of one status, ordered by file then run."""
        query = (
            select(ResultRow).join(RunRow, RunRow.id == ResultRow.run_id).where(RunRow.batch_id == batch_id)
        )
        if status is not None:
            query = query.where(ResultRow.status == status)
        query = query.order_by(ResultRow.target_path, ResultRow.run_id)
        with self._read(f"read results of batch {batch_id}") as session:
            return [result_record(row) for row in session.scalars(query)]

    def set_result_status(self, run_ids: Iterable[str], status: ResultStatus) -> int:
        """Mark results applied, rejected or stale (after ``patches.apply_patches``); returns how many."""
        check_result_status(status)
        ids = sorted(set(run_ids))
        stmt = (
            update(ResultRow)
            .where(ResultRow.run_id.in_(ids))
            .values(status=status, updated_at=utcnow())
            .returning(ResultRow.id)
        )
        with self._write(f"mark {len(ids)} results {status}") as session:
            return len(session.scalars(stmt).all())

    def view(self, name: str, *, batch_id: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows of a reporting view (``VIEWS``), optionally of one batch (all but ``tool_stats``)."""
        if name not in VIEWS:
            raise StoreError(f"unknown view {name!r}; views: {', '.join(VIEWS)}")
        if batch_id is not None and name == "tool_stats":
            raise StoreError("view 'tool_stats' spans every batch; call it without batch_id")
        where = " WHERE batch_id = :batch_id" if batch_id is not None else ""
        query = text(f"SELECT * FROM {name}{where} LIMIT :limit")
        with self._read(f"read view {name}") as session:
            result = session.execute(query, {"batch_id": batch_id, "limit": limit})
            return [dict(row) for row in result.mappings()]
