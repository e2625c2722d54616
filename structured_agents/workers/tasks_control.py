"""Control steps (``control`` queue): start runs, finish them, dispatch a batch, sweep, delay.

The steps themselves are the run lifecycle's (:class:`~structured_agents.lifecycle.RunLifecycle`);
these tasks load the run, count the attempt, call the step and send what comes next. The
``finish_run`` task finishes runs whose last turn ended without tool calls (and those the sweep
finds done); the tool-call step finishes the others on the spot. :func:`cancel_batch` is called
directly by the API and the CLI.
"""

from __future__ import annotations

from typing import Any

from structured_agents.errors import StructuredAgentsError
from structured_agents.store import Store, StoredRun
from structured_agents.workers.attempts import begin, on_failure, run_step
from structured_agents.workers.celery_app import app, task
from structured_agents.workers.constants import (
    CONTROL_QUEUE,
    DELAYED,
    DISPATCH,
    FINISH_RUN,
    START_RUN,
    START_RUNS,
    SWEEP,
)
from structured_agents.workers.dispatch import dispatch_batch, queue_length, send, send_next, send_starts
from structured_agents.workers.errors import is_transient
from structured_agents.workers.runtime import Runtime, runtime

__all__ = ["cancel_batch", "delayed", "dispatch", "finish_run", "start_run", "start_runs", "sweep"]


def _start(rt: Runtime, run_id: str) -> float | None:
    """Start one run: claim it if queued, emit ``KernelStart``, store its first state, send its
    first turn. Returns the delay before the start must be tried again (a failed attempt), else
    None. Starting a run already started only makes sure its first turn is on its way."""
    run = rt.store.load_runs([run_id]).get(run_id)
    if run is not None and run.status == "queued":
        rt.store.claim(run_id)
        run = rt.store.load_runs([run_id]).get(run_id)
    if run is None or run.status != "running":
        return None
    current = run.current_state
    if current is not None:  # a duplicate start: make sure the first turn is on its way
        if current.phase == "model" and current.turn == 0:
            send_next(app, run.epoch, current)
        return None
    attempt = begin(rt, run, "start")
    if attempt is None:
        return None
    try:
        started = rt.run(rt.lifecycle.start(run))
        if started is not None and started.state is not None:
            send_next(app, started.epoch, started.state)
    except Exception as exc:
        return on_failure(rt, run, "start", attempt, exc)
    return None


@task(START_RUN, bind=True)
def start_run(self: Any, run_id: str) -> None:
    """Start one run (see :func:`_start`); lost connections and failed attempts retry the message."""
    rt = runtime()
    try:
        delay = _start(rt, run_id)
    except StructuredAgentsError as exc:
        if not is_transient(exc):
            raise
        retries = rt.settings.workers.max_attempts
        raise self.retry(
            exc=exc, countdown=rt.backoff(self.request.retries + 1), max_retries=retries
        ) from exc
    if delay is not None:
        raise self.retry(countdown=delay, max_retries=None)


@task(START_RUNS, bind=True)
def start_runs(self: Any, run_ids: list[str]) -> int:
    """Start a chunk of runs one after the other (see :func:`_start`); returns how many were
    tried. A run whose attempt failed gets its own ``start_run`` message after the backoff (one
    that raised, at once), so one run's trouble never holds up the others; a lost connection
    retries the message with the runs not yet started."""
    rt = runtime()
    for done, run_id in enumerate(run_ids):
        try:
            delay = _start(rt, run_id)
        except StructuredAgentsError as exc:
            if not is_transient(exc):  # this run's own trouble: its own message, the others go on
                send(app, START_RUN, (run_id,))
                continue
            retries = rt.settings.workers.max_attempts
            countdown = rt.backoff(self.request.retries + 1)
            raise self.retry(
                args=(run_ids[done:],), exc=exc, countdown=countdown, max_retries=retries
            ) from exc
        if delay is not None:
            send(app, START_RUN, (run_id,), countdown=delay)
    return len(run_ids)


def _finish(run: StoredRun) -> None:
    rt = runtime()
    rt.run(rt.lifecycle.finish(run))


@task(FINISH_RUN, bind=True)
def finish_run(self: Any, run_id: str, epoch: int) -> None:
    """Store a finished run's result and give it its final status (and its batch, if last)."""
    run_step(self, run_id, epoch, ("finish",), _finish)


@task(DELAYED)
def delayed(name: str, args: list[Any]) -> None:
    """Send message ``name(*args)`` now that its countdown is over (see
    :func:`~structured_agents.workers.dispatch.send`)."""
    send(app, name, tuple(args))


@task(DISPATCH)
def dispatch(batch_id: str) -> int:
    """Send the starts of every queued run of a batch (see
    :func:`~structured_agents.workers.dispatch.dispatch_batch`); returns how many messages."""
    return dispatch_batch(runtime().store, app, batch_id)


@task(SWEEP)
def sweep() -> int:
    """Send again what a lost message left undone; returns how many messages were sent.

    * the next step of every running run whose state stopped moving;
    * the dispatch of every batch still queued a while after it was created;
    * the start of every queued run of a running batch, when no control message is waiting
      (while starts wait in the queue, a queued run is only waiting its turn).
    """
    rt = runtime()
    older_than = rt.settings.workers.stale_after_s
    stale = rt.store.stale_runs(older_than)
    for run in stale:
        state = run.current_state
        if state is None:
            send(app, START_RUN, (run.run_id,))
        else:
            send_next(app, run.epoch, state)
            rt.store.touch_state(run.run_id)
    batches, waiting = rt.store.undispatched(older_than)
    for batch_id in batches:
        send(app, DISPATCH, (batch_id,))
    starts = send_starts(app, waiting) if waiting and queue_length(app, CONTROL_QUEUE) == 0 else 0
    return len(stale) + len(batches) + starts


def cancel_batch(store: Store, batch_id: str) -> int:
    """Cancel a batch: queued runs at once, running ones at their next step; returns how many."""
    cancelled = store.cancel_batch(batch_id)
    for run in store.list_runs(batch_id, "running"):
        cancelled += store.finish(run.id, "cancelled", "cancelled with its batch")
    return cancelled
