"""The tables of the memory store under one lock: what :mod:`.queue`, :mod:`.runlog`,
:mod:`.steps` and :mod:`.report` share, as :class:`~structured_agents.store.database.Database`
is for the SQL store.

Every method of the store takes the lock (a ``threading.RLock``) and changes nothing until it
has checked all it would refuse, so a method is one transaction; the helpers here are called
with the lock held.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Self

from structured_agents.store.errors import RecordNotFoundError, StoreError
from structured_agents.store.memory.tables import (
    BatchRow,
    EventRow,
    ResultRow,
    RunRow,
    RunStateRow,
    StepAttemptRow,
    ToolCallRow,
    TurnRow,
    now,
)
from structured_agents.store.records import TurnRecord

__all__ = ["MemoryDatabase"]


class MemoryDatabase:
    """The tables (dicts and lists of rows), their lock, and the store's url and lifetime."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._batches: dict[str, BatchRow] = {}
        self._runs: dict[str, RunRow] = {}
        self._batch_runs: dict[str, set[str]] = {}
        self._counts: dict[str, Counter[str]] = {}
        """Runs of each batch by status."""
        self._queue: list[tuple[datetime, str]] = []
        """A heap of ``(created_at, run id)`` of queued runs; an entry whose run is no longer
        queued is dropped when it reaches the top."""
        self._batch_queues: dict[str, list[tuple[datetime, str]]] = {}
        self._turns: dict[str, dict[int, TurnRow]] = {}
        self._tool_calls: dict[str, list[ToolCallRow]] = {}
        self._call_ids: set[str] = set()
        self._results: dict[str, ResultRow] = {}
        self._events: dict[str, list[EventRow]] = {}
        """Events by run id (any run id: events have no foreign key), in id order."""
        self._states: dict[str, RunStateRow] = {}
        self._steps: dict[str, dict[str, StepAttemptRow]] = {}
        self._ids: defaultdict[str, Iterator[int]] = defaultdict(lambda: itertools.count(1))
        self._batch_seq = itertools.count()

    @property
    def url(self) -> str:
        """``memory://``."""
        return "memory://"

    @property
    def dialect(self) -> str:
        """``memory``."""
        return "memory"

    def close(self) -> None:
        """Nothing to release (the data stays until the store is dropped)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # Helpers; every one is called with the lock held.

    def _batch(self, batch_id: str) -> BatchRow:
        batch = self._batches.get(batch_id)
        if batch is None:
            raise RecordNotFoundError(f"no batch with id {batch_id!r}")
        return batch

    def _run(self, run_id: str) -> RunRow:
        run = self._runs.get(run_id)
        if run is None:
            raise RecordNotFoundError(f"no run with id {run_id!r}")
        return run

    def _require_run(self, run_id: str, action: str) -> RunRow:
        """The run a new row refers to; a plain :class:`StoreError` naming ``action`` when
        there is none (the SQL store's foreign key violation)."""
        run = self._runs.get(run_id)
        if run is None:
            raise StoreError(f"{action} failed: no run with id {run_id!r}")
        return run

    def _runs_of(self, batch_id: str) -> list[RunRow]:
        return [self._runs[run_id] for run_id in self._batch_runs.get(batch_id, ())]

    @staticmethod
    def _sorted(runs: Iterable[RunRow]) -> list[RunRow]:
        return sorted(runs, key=lambda run: (run.created_at, run.id))

    def _forget_attempt(self, run_id: str) -> None:
        """Drop the turns, tool calls and result of the run (a new claim, or the run removed)."""
        self._turns.pop(run_id, None)
        for call in self._tool_calls.pop(run_id, ()):
            self._call_ids.discard(call.call_id)
        self._results.pop(run_id, None)

    def _add_turn(self, record: TurnRecord, action: str) -> bool:
        turns = self._turns.get(record.run_id, {})
        if record.turn in turns:
            return False
        self._require_run(record.run_id, action)
        self._turns.setdefault(record.run_id, turns)[record.turn] = TurnRow(
            next(self._ids["turns"]), record, now()
        )
        return True

    def _add_events(self, events: Iterable[EventRow]) -> None:
        for event in events:
            event.id = next(self._ids["events"])
            self._events.setdefault(event.run_id, []).append(event)

    def _batch_results(self, batch_id: str) -> list[ResultRow]:
        """The results of the batch's runs, by file then run."""
        found = [
            self._results[run_id] for run_id in self._batch_runs.get(batch_id, ()) if run_id in self._results
        ]
        return sorted(found, key=lambda result: (result.target_path, result.run_id))
