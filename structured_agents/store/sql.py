"""The SQL store: the implementation of :class:`~structured_agents.store.protocol.Store` the
product runs on, over PostgreSQL (psycopg 3) or an embedded SQLite file (the tests have
:class:`~structured_agents.store.memory.MemoryStore` too).

::

    store = SqlStore("postgresql://user@host/db")     # or SqlStore() for the embedded SQLite file
    batch = store.create_batch("docstring", "1.0", "/src/project")
    store.add_jobs(batch.id, jobs)
    [run] = store.claim_runs([run_id])                  # a driver; [] if someone else has it
    store.record_events(event.to_dict() for event in events)
    store.save_result(run.id, target_path=..., original_hash=..., diff=...)
    store.finish(run.id, "succeeded")

Its statements live in four modules, one concern each, over one :class:`Database`
(connection, sessions, dialect): :mod:`.queue` (batches and the run queue), :mod:`.runlog`
(turns, tool calls, events, results, views), :mod:`.steps` (run states and step attempts
of runs driven step by step) and :mod:`.report` (one batch's figures for ``sa report``). It is
synchronous and thread-safe: every method runs in its own short session and transaction, and
SQLAlchemy and driver errors come out as :class:`~structured_agents.store.errors.StoreError`.
"""

from __future__ import annotations

from structured_agents.store.queue import RunQueue
from structured_agents.store.report import ReportQueries
from structured_agents.store.runlog import RunLog
from structured_agents.store.steps import RunSteps

__all__ = ["SqlStore"]


class SqlStore(RunQueue, RunLog, RunSteps, ReportQueries):
    """The store over a SQL database: ``SqlStore(url=None, *, migrate=True, echo=False)`` opens
    ``url`` (default: a SQLite file in the user data directory) and upgrades its schema to the
    newest migration."""
