"""Enqueue: a batch checked and stored by the lifecycle, then dispatched to the workers.

The lifecycle checks the jobs before anything is written (:func:`~structured_agents.lifecycle.prepare_batch`:
the task's options, and every job's inputs against the bundle's templates) and stores the
batch with its jobs (:func:`~structured_agents.lifecycle.open_batch`: ``COPY`` on PostgreSQL);
then one ``dispatch`` message sends their starts (in chunks, see
:func:`~structured_agents.workers.dispatch.dispatch_batch`). When the dispatch fails, the batch
is discarded, so a retry of the same enqueue skips nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import Celery
from kombu.utils.url import maybe_sanitize_url

from structured_agents.bundles import load_bundle
from structured_agents.jobs import JobInputError, JobSpec
from structured_agents.lifecycle import open_batch, prepare_batch
from structured_agents.store import Store, StoreError
from structured_agents.workers.constants import DISPATCH
from structured_agents.workers.dispatch import send
from structured_agents.workers.errors import BrokerError

__all__ = ["Enqueued", "enqueue"]


@dataclass(frozen=True, slots=True)
class Enqueued:
    """What an enqueue did."""

    batch_id: str
    queued: int
    """Jobs queued in the batch (new, or failed before and queued again)."""
    skipped: int
    """Jobs already succeeded, queued or running (left alone)."""


def enqueue(
    store: Store,
    app: Celery,
    bundle: str | Path,
    root: Path,
    jobs: list[JobSpec] | None = None,
    *,
    task_options: Mapping[str, Any] | None = None,
) -> Enqueued:
    """Create a batch of ``bundle`` (a path or a name) over ``root``: ``jobs``, or those its task
    discovers under ``root``. ``task_options`` (the lint task's ``check``...) are stored with
    the batch; only the operator's command line gives them, never a network caller."""
    loaded = load_bundle(bundle)
    try:
        prepared = prepare_batch(loaded, root, jobs, task_options=task_options)
    finally:
        loaded.close()
    if not prepared.jobs:
        raise JobInputError(f"no jobs to enqueue under {root}")
    opened = open_batch(store, prepared)
    try:
        send(app, DISPATCH, (opened.batch.id,))
    except BaseException as exc:  # the broker refused: leave nothing a retry would skip
        with contextlib.suppress(StoreError):
            store.discard_batch(opened.batch.id)
        if isinstance(exc, BrokerError):
            where = maybe_sanitize_url(str(app.conf.broker_url))
            raise BrokerError(f"{exc} (is the broker at {where} running? SA_REDIS_URL names it)") from exc
        raise
    return Enqueued(opened.batch.id, len(opened.added.queued), len(opened.added.skipped))
