"""The store: one object over the database that workers, the CLI and the monitor share.

::

    store = Store("postgresql://user@host/db")        # or Store() for the embedded SQLite file
    batch = store.create_batch("docstrings", "1.0", "/src/project")
    enqueued = store.add_jobs(batch.id, discover_docstring_jobs(root))
    run = store.claim(run_id)                           # a worker; None if someone else has it
    store.record_turn(run.id, 1, prompt_tokens=..., raw_text=...)
    store.record_events(event.to_dict() for event in events)
    store.save_result(run.id, target_path=..., original_hash=..., diff=...)
    store.finish(run.id, "succeeded")

The store is synchronous (queue workers are) and thread-safe: every method runs in its own
short session and transaction. Errors of SQLAlchemy and the database driver come out as
:class:`~structured_agents.store.errors.StoreError`.
"""

from __future__ import annotations

from structured_agents.store.runlog import RunLog

__all__ = ["Store"]


class Store(RunLog):
    """Repository over the structured-agents database (PostgreSQL or embedded SQLite).

    ``Store(url=None, *, migrate=True, echo=False)`` opens ``url`` (default: a SQLite file in
    the user data directory) and upgrades the schema to the newest migration. Methods:

    - batches: ``create_batch``, ``get_batch``, ``list_batches``, ``set_batch_status``,
      ``cancel_batch``, ``batch_counts``
    - runs: ``add_jobs``, ``claim``, ``claim_next``, ``finish``, ``requeue``, ``get_run``,
      ``list_runs``
    - inside runs: ``record_turn``, ``record_tool_call``, ``record_event(s)``, ``events``,
      ``turns``, ``tool_calls``
    - results: ``save_result``, ``results``, ``set_result_status``
    - reports: ``view(name)`` over the ``run_summary``, ``tool_stats``, ``failures`` and
      ``throughput_by_minute`` views
    """
