"""Run states and step attempts: what makes a run's steps idempotent, whoever drives them.

A run driven step by step (by the Celery workers or by the embedded runner) has its kernel
state stored between steps. Every step loads the runs it works on (:meth:`RunSteps.load_runs`),
checks that each stored state is where the step expects it, and writes the new state with
:meth:`RunSteps.commit_state`: one transaction that bumps the state's version only if it is
still the version the step loaded (compare-and-set), inserts the turn row (unique on
``(run_id, turn)``) and appends the step's events. A duplicate of the step loses the
compare-and-set, or the turn insert, and the whole transaction is rolled back: nothing is
recorded twice, events included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.orm import Session

from structured_agents.status import BatchStatus
from structured_agents.store.database import Database
from structured_agents.store.errors import StoreError
from structured_agents.store.models import (
    BatchRow,
    EventRow,
    RunRow,
    RunStateRow,
    StepAttemptRow,
    ToolCallRow,
    TurnRow,
    utcnow,
)
from structured_agents.store.records import StoredRun, ToolCallRecord, TurnRecord
from structured_agents.store.rows import stored_run, tool_call_record
from structured_agents.store.runlog import event_row_values
from structured_agents.types import JsonDict

__all__ = ["RunSteps"]


class _Conflict(Exception):
    """Rolls back a commit that a duplicate step already made."""


class RunSteps(Database):
    """Run states and step attempts."""

    def load_runs(self, run_ids: Iterable[str]) -> dict[str, StoredRun]:
        """The runs ``run_ids`` that exist, with their states, by id (one query)."""
        ids = sorted(set(run_ids))
        query = (
            select(RunRow, BatchRow.options, BatchRow.root_path, RunStateRow)
            .join(BatchRow, BatchRow.id == RunRow.batch_id)
            .outerjoin(RunStateRow, RunStateRow.run_id == RunRow.id)
            .where(RunRow.id.in_(ids))
        )
        with self._read(f"load {len(ids)} runs") as session:
            rows = session.execute(query)
            return {run.id: stored_run(run, options, root, row) for run, options, root, row in rows}

    def init_state(
        self, run: StoredRun, state: JsonDict, events: Sequence[Mapping[str, Any]]
    ) -> StoredRun | None:
        """Store the first state of the run's current claim, with its events.

        The state gets the next epoch; returns the run as stored now, or None, writing
        nothing, when the claim already has a state (a duplicate start).
        """
        return self.init_states([(run, state, events)])[0]

    def init_states(
        self, starts: Sequence[tuple[StoredRun, JsonDict, Sequence[Mapping[str, Any]]]]
    ) -> list[StoredRun | None]:
        """:meth:`init_state` for many runs in one transaction (one ``INSERT`` for the states,
        one for the events of those stored): each run as stored now, or None for a duplicate."""
        if len({run.id for run, _, _ in starts}) != len(starts):
            raise StoreError("init_states got the same run twice")
        if not starts:
            return []
        rows = []
        for run, state, _ in starts:
            values = {"run_id": run.id, "epoch": max(run.epoch, 0) + 1, "claimed_at": run.started_at}
            values |= {"phase": state["phase"], "turn": state["turn"], "version": 0}
            rows.append(values | {"state": state, "updated_at": utcnow()})
        insert_ = self._insert(RunStateRow).values(rows)
        # A new epoch replaces the state of the claim before it (epoch - 1; a run never started
        # has no row); a state of this epoch stored already is a duplicate start's and stays.
        stmt = insert_.on_conflict_do_update(
            index_elements=["run_id"],
            set_={key: insert_.excluded[key] for key in rows[0] if key != "run_id"},
            where=RunStateRow.epoch == insert_.excluded.epoch - 1,
        ).returning(RunStateRow.run_id)
        with self._write(f"start {len(starts)} runs") as session:
            stored = set(session.scalars(stmt))
            _add_events(session, [e for run, _, events in starts if run.id in stored for e in events])
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
        """Write the state a step produced, if the stored one is still ``run``'s: the run as
        stored now, or None (nothing written) when a duplicate step got there first."""
        stmt = (
            update(RunStateRow)
            .where(
                RunStateRow.run_id == run.id,
                RunStateRow.epoch == run.epoch,
                RunStateRow.version == run.version,
            )
            .values(
                state=state,
                phase=state["phase"],
                turn=state["turn"],
                version=run.version + 1,
                updated_at=utcnow(),
            )
            .returning(RunStateRow.run_id)
        )
        if turn is not None and turn.run_id != run.id:
            raise StoreError(f"turn {turn.turn} of run {turn.run_id} cannot be committed with run {run.id}")
        try:
            with self._write(f"commit run {run.id} turn {state['turn']}") as session:
                if session.scalars(stmt).first() is None:
                    raise _Conflict
                if turn is not None:
                    row = {**asdict(turn), "created_at": utcnow()}
                    added = self._insert(TurnRow).values(row).on_conflict_do_nothing()
                    if session.scalars(added.returning(TurnRow.id)).first() is None:
                        raise _Conflict
                _add_events(session, events)
        except _Conflict:
            return None
        return replace(run, version=run.version + 1, state=state)

    def touch_state(self, run_id: str) -> None:
        """Mark the state as moving (a sweep re-sent its step), without changing it."""
        stmt = update(RunStateRow).where(RunStateRow.run_id == run_id).values(updated_at=utcnow())
        with self._write(f"touch run {run_id}") as session:
            session.execute(stmt)

    def begin_step(self, run_id: str, step: str) -> int:
        """Count one more attempt of ``step``; returns the attempts so far, this one included."""
        return self.begin_steps([(run_id, step)])[run_id, step]

    def begin_steps(self, steps: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """:meth:`begin_step` for many ``(run id, step)`` pairs in one statement: the attempts
        so far, by pair."""
        pairs = sorted(set(steps))
        if not pairs:
            return {}
        now = utcnow()
        insert_ = self._insert(StepAttemptRow).values(
            [{"run_id": run_id, "step": step, "attempts": 1, "updated_at": now} for run_id, step in pairs]
        )
        stmt = insert_.on_conflict_do_update(
            index_elements=["run_id", "step"],
            set_={"attempts": StepAttemptRow.attempts + 1, "updated_at": now},
        ).returning(StepAttemptRow.run_id, StepAttemptRow.step, StepAttemptRow.attempts)
        with self._write(f"begin {len(pairs)} steps") as session:
            return {(run_id, step): int(attempts) for run_id, step, attempts in session.execute(stmt)}

    def fail_step(self, run_id: str, step: str, error: str) -> None:
        """Record how the current attempt of ``step`` failed."""
        stmt = (
            update(StepAttemptRow)
            .where(StepAttemptRow.run_id == run_id, StepAttemptRow.step == step)
            .values(last_error=error, updated_at=utcnow())
        )
        with self._write(f"record failure of step {step} of run {run_id}") as session:
            session.execute(stmt)

    def step_error(self, run_id: str, step: str) -> str | None:
        """The error the last failed attempt of ``step`` recorded."""
        query = select(StepAttemptRow.last_error).where(
            StepAttemptRow.run_id == run_id, StepAttemptRow.step == step
        )
        with self._read(f"read step {step} of run {run_id}") as session:
            return session.scalars(query).first()

    def clear_steps(self, run_id: str) -> None:
        """Forget the step attempts of a run that ended (a later re-run starts with a clean slate)."""
        with self._write(f"clear steps of run {run_id}") as session:
            session.execute(delete(StepAttemptRow).where(StepAttemptRow.run_id == run_id))

    def move_batch(self, batch_id: str, status: BatchStatus, *, only_from: tuple[BatchStatus, ...]) -> bool:
        """Set a batch's status if it is one of ``only_from`` (a cancel is never overwritten)."""
        stmt = (
            update(BatchRow)
            .where(BatchRow.id == batch_id, BatchRow.status.in_(only_from))
            .values(status=status)
            .returning(BatchRow.id)
        )
        with self._write(f"set status of batch {batch_id}") as session:
            return session.scalars(stmt).first() is not None

    def turn_tool_calls(self, run_id: str, turn: int) -> dict[str, ToolCallRecord]:
        """The recorded tool calls of one turn, by call id."""
        query = select(ToolCallRow).where(ToolCallRow.run_id == run_id, ToolCallRow.turn == turn)
        with self._read(f"read tool calls of run {run_id}") as session:
            return {row.call_id: tool_call_record(row) for row in session.scalars(query)}

    def stale_runs(self, older_than_s: float, limit: int = 1000) -> list[StoredRun]:
        """Runs claimed ``older_than_s`` seconds ago or more whose state has not moved since."""
        cutoff = utcnow() - timedelta(seconds=older_than_s)
        query = (
            select(RunRow.id)
            .outerjoin(RunStateRow, RunStateRow.run_id == RunRow.id)
            .where(RunRow.status == "running", RunRow.started_at < cutoff)
            .where(or_(RunStateRow.updated_at.is_(None), RunStateRow.updated_at < cutoff))
            .order_by(RunRow.started_at)
            .limit(limit)
        )
        with self._read("find stale runs") as session:
            ids = list(session.scalars(query))
        return list(self.load_runs(ids).values())

    def undispatched(self, older_than_s: float, limit: int = 1000) -> tuple[list[str], list[str]]:
        """Work that should have started ``older_than_s`` seconds ago: batches still ``queued``
        (their dispatch message lost?), and queued runs of running batches (their start lost?)."""
        cutoff = utcnow() - timedelta(seconds=older_than_s)
        batches = (
            select(BatchRow.id)
            .where(BatchRow.status == "queued", BatchRow.created_at < cutoff)
            .order_by(BatchRow.created_at)
            .limit(limit)
        )
        runs = (
            select(RunRow.id)
            .join(BatchRow, BatchRow.id == RunRow.batch_id)
            .where(RunRow.status == "queued", RunRow.created_at < cutoff, BatchRow.status == "running")
            .order_by(RunRow.created_at)
            .limit(limit)
        )
        with self._read("find undispatched work") as session:
            return list(session.scalars(batches)), list(session.scalars(runs))


def _add_events(session: Session, events: Sequence[Mapping[str, Any]]) -> None:
    if events:
        session.execute(insert(EventRow), [event_row_values(event) for event in events])
