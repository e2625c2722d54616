"""An in-memory :class:`~structured_agents.store.protocol.Store`: the same contract as
:class:`~structured_agents.store.sql.SqlStore`, kept in plain dicts and lists.

::

    with MemoryStore() as store:                  # url "memory://", dialect "memory"
        batch = store.create_batch("docstring", "1.0", "/src/project")
        store.add_jobs(batch.id, jobs)
        [run] = store.claim_runs([run_id])          # [] if someone else has it

Like httpx's ``MockTransport`` or dramatiq's ``StubBroker``, it is a real, small implementation
for tests where SQL is not what is under test, not a mock: the store tests run every behaviour
test of the seam on it as on SQLite and PostgreSQL. It reproduces what the SQL store's
statements do: claims that lose a race return None or False, run states are compare-and-set on
their epoch and version, ``init_states`` replaces the state of the claim before (epoch - 1)
only, ``add_jobs`` skips succeeded and queued/running jobs, a run's turns, tool calls and result
are forgotten when it is claimed again, ``discard_batch`` removes the batch's runs and what hangs
on them (events stay, as they have no foreign key), and rows that reference an unknown run are
refused with a :class:`~structured_agents.store.errors.StoreError` (the foreign keys).

Every method runs under one ``threading.RLock`` and changes nothing until it has checked all
it would refuse, so a method is one transaction. JSON columns (batch options, job inputs, tool
arguments, event payloads, run states) are kept as JSON text and decoded on each read: values
come back as they would from the database (tuples as lists; a value that is not JSON is
refused), and a caller that mutates a record's dict changes nothing stored. Timestamps are
timezone-aware UTC.

The four reporting views (``failures``, ``run_summary``, ``throughput_by_minute``,
``tool_stats``) are computed in Python with the columns of their SQL definitions
(``migrations/versions/0002_views.py`` and ``0005_result_flags.py``), as PostgreSQL returns
them: timestamps as datetimes (here aware UTC, ``minute`` included, where PostgreSQL gives a
naive UTC timestamp and SQLite text), ``result_flags`` as a list (SQLite gives JSON text).
Where SQL leaves an order unspecified (views, ``load_runs``, ``claim_runs``), this store uses a
fixed one. What it lacks is the SQL itself: there is no ``engine`` to run queries on.

Its methods live in four modules, one concern each, as the SQL store's do, over one
:class:`~.database.MemoryDatabase` (the lock and the tables, rows of :mod:`.tables`):
:mod:`.queue` (batches and the run queue), :mod:`.runlog` (turns, tool calls, events, results,
views), :mod:`.steps` (run states, step attempts and the sweep) and :mod:`.report` (one batch's
figures for ``sa report``); :mod:`.views` computes the views' rows that :mod:`.runlog` and
:mod:`.report` read. None of them imports SQLAlchemy or Alembic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from structured_agents.store.memory.queue import MemoryQueue
from structured_agents.store.memory.report import MemoryReport
from structured_agents.store.memory.runlog import MemoryRunLog
from structured_agents.store.memory.steps import MemorySteps

if TYPE_CHECKING:
    from structured_agents.store.protocol import Store

__all__ = ["MemoryStore"]


class MemoryStore(MemoryQueue, MemoryRunLog, MemorySteps, MemoryReport):
    """Every role of the store seam over Python dicts (see the package docstring)."""


if TYPE_CHECKING:
    _IS_A_STORE: Store = MemoryStore()  # mypy checks here that every role is implemented
