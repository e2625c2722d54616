"""Run states and step attempts in memory, and the sweep's reads (the memory twin of
:mod:`structured_agents.store.steps`).

A state is compare-and-set on its epoch and version: :meth:`MemorySteps.commit_state` writes
the state, turn and events of a step only if the stored state is still the one the step loaded,
and writes nothing otherwise. ``init_states`` replaces the state of the claim before (epoch - 1)
only, so a duplicate start of the same claim stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from structured_agents.store.errors import StoreError
from structured_agents.store.memory.database import MemoryDatabase
from structured_agents.store.memory.tables import (
    RunStateRow,
    StepAttemptRow,
    dump,
    event_row,
    now,
    stored_run,
)
from structured_agents.store.records import StoredRun, TurnRecord
from structured_agents.types import JsonDict

__all__ = ["MemorySteps"]


class MemorySteps(MemoryDatabase):
    """Run states and step attempts of runs driven step by step, and what the sweep looks for."""

    def load_runs(self, run_ids: Iterable[str]) -> dict[str, StoredRun]:
        """The runs ``run_ids`` that exist, with their states, by id."""
        with self._lock:
            found = sorted(set(run_ids) & self._runs.keys())
            return {run_id: self._stored_run(run_id) for run_id in found}

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
        started_at = now()
        rows = {
            run.id: RunStateRow(
                max(run.epoch, 0) + 1,
                run.started_at,
                state["phase"],
                state["turn"],
                0,
                dump(state, action),
                started_at,
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
            added = [event_row(e) for run, _, events in starts if run.id in stored for e in events]
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
        encoded = dump(state, action)
        with self._lock:
            row = self._states.get(run.id)
            if row is None or (row.epoch, row.version) != (run.epoch, run.version):
                return None
            if turn is not None and turn.turn in self._turns.get(run.id, {}):
                return None
            added = [event_row(event) for event in events]
            row.state, row.phase, row.turn, row.version, row.updated_at = (
                encoded,
                phase,
                number,
                run.version + 1,
                now(),
            )
            if turn is not None:
                self._add_turn(turn, action)
            self._add_events(added)
        return replace(run, version=run.version + 1, state=state)

    def touch_state(self, run_id: str) -> None:
        """Mark the state as moving (a sweep re-sent its step), without changing it."""
        with self._lock:
            if (row := self._states.get(run_id)) is not None:
                row.updated_at = now()

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
            begun_at = now()
            counted = {}
            for run_id, step in pairs:
                attempts = self._steps.setdefault(run_id, {})
                attempt = attempts.setdefault(step, StepAttemptRow(0, None, begun_at))
                attempt.attempts, attempt.updated_at = attempt.attempts + 1, begun_at
                counted[run_id, step] = attempt.attempts
            return counted

    def fail_step(self, run_id: str, step: str, error: str) -> None:
        """Record how the current attempt of ``step`` failed."""
        with self._lock:
            if (attempt := self._steps.get(run_id, {}).get(step)) is not None:
                attempt.last_error, attempt.updated_at = error, now()

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
        cutoff = now() - timedelta(seconds=older_than_s)
        with self._lock:
            stale = sorted(
                (run.started_at, run.id)
                for run in self._runs.values()
                if run.status == "running"
                and run.started_at is not None
                and run.started_at < cutoff
                and ((row := self._states.get(run.id)) is None or row.updated_at < cutoff)
            )
            return [self._stored_run(run_id) for _, run_id in stale[: max(limit, 0)]]

    def undispatched(self, older_than_s: float, limit: int = 1000) -> tuple[list[str], list[str]]:
        """Work that should have started ``older_than_s`` seconds ago: batches still ``queued``,
        and queued runs of running batches."""
        cutoff = now() - timedelta(seconds=older_than_s)
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

    def _stored_run(self, run_id: str) -> StoredRun:
        run = self._runs[run_id]
        return stored_run(run, self._batches[run.batch_id], self._states.get(run_id))
