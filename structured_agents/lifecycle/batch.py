"""What happens to a batch as a whole, the same under both drivers: cancelling it."""

from __future__ import annotations

from structured_agents.store import Store

__all__ = ["cancel_batch"]


def cancel_batch(store: Store, batch_id: str) -> int:
    """Cancel a batch: queued runs at once, running ones at their next step; returns how many.

    A running run's next step finds it finished and does nothing (a Celery step, or the
    embedded runner's), so nothing a cancel leaves behind is ever applied.
    """
    cancelled = store.cancel_batch(batch_id)
    for run in store.list_runs(batch_id, "running"):
        cancelled += store.finish(run.id, "cancelled", "cancelled with its batch")
    return cancelled
