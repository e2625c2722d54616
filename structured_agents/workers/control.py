"""Control steps (``control`` queue): start runs, finish them, dispatch a batch, sweep, delay.

The steps themselves are the run lifecycle's (:class:`~structured_agents.lifecycle.RunLifecycle`);
these tasks load the run, count the attempt, call the step and send what comes next. The
``finish_run`` task finishes runs whose last turn ended without tool calls (and those the sweep
finds done); the tool-call step finishes the others on the spot. Cancelling a batch needs no
task: it is the lifecycle's (:func:`~structured_agents.lifecycle.cancel_batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from structured_agents.errors import StructuredAgentsError
from structured_agents.lifecycle import state_of
from structured_agents.store import StoredRun
from structured_agents.types import JsonDict
from structured_agents.workers.attempts import begin_many, on_failure, run_step
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
from structured_agents.workers.dispatch import (
    dispatch_batch,
    next_messages,
    queue_length,
    send,
    send_many,
    send_next,
    send_starts,
)
from structured_agents.workers.errors import is_transient
from structured_agents.workers.runtime import Runtime, runtime

__all__ = ["delayed", "dispatch", "finish_run", "start_run", "start_runs", "sweep"]


def _start(rt: Runtime, run_ids: Sequence[str]) -> dict[str, float]:
    """Start runs together: claim those queued, count their ``start`` attempts, build their
    first states, store them in one transaction, and send their first turns in one go.
    Returns, by run, the delay before a start whose attempt failed must be tried again (a
    state that cannot be built, or a run whose own write failed). Starting a run already
    started only makes sure its first turn is on its way. Lost connections raise."""
    runs = rt.store.load_runs(run_ids)
    if any(run.status == "queued" for run in runs.values()):
        rt.store.claim_runs(run.id for run in runs.values() if run.status == "queued")
        runs = rt.store.load_runs(run_ids)
    running = [runs[run_id] for run_id in dict.fromkeys(run_ids) if run_id in runs]
    running = [run for run in running if run.status == "running"]
    messages: list[tuple[str, tuple[Any, ...]]] = []
    for run in running:  # duplicates: make sure the first turn is on its way
        current = state_of(run)
        if current is not None and current.phase == "model" and current.turn == 0:
            messages += next_messages(run.epoch, current)
    fresh = [run for run in running if run.state is None]
    attempts = {run_id: n for (run_id, _), n in begin_many(rt, [(run, "start") for run in fresh]).items()}
    retry: dict[str, float] = {}
    built: list[tuple[StoredRun, JsonDict, list[JsonDict]]] = []
    for run in fresh:
        if run.id in attempts:
            try:
                state, events = rt.run(rt.lifecycle.first_state(run))
                built.append((run, state.to_dict(), events))
            except Exception as exc:
                _retry_later(rt, run, attempts[run.id], exc, retry)
    for started in _store_states(rt, built, attempts, retry):
        first = state_of(started) if started is not None else None
        if started is not None and first is not None:
            messages += next_messages(started.epoch, first)
    send_many(app, messages)
    return retry


def _store_states(
    rt: Runtime,
    built: list[tuple[StoredRun, JsonDict, list[JsonDict]]],
    attempts: dict[str, int],
    retry: dict[str, float],
) -> list[StoredRun | None]:
    """Store the built first states together; when that write fails for a reason of its own
    (not a lost connection), each run's is tried alone, so one run's trouble stays its own."""
    try:
        return rt.store.init_states(built)
    except StructuredAgentsError as exc:
        if is_transient(exc):
            raise
    stored: list[StoredRun | None] = []
    for run, state, events in built:
        try:
            stored.append(rt.store.init_state(run, state, events))
        except StructuredAgentsError as exc:
            if is_transient(exc):
                raise
            _retry_later(rt, run, attempts[run.id], exc, retry)
    return stored


def _retry_later(rt: Runtime, run: StoredRun, attempt: int, exc: Exception, retry: dict[str, float]) -> None:
    delay = on_failure(rt, run, "start", attempt, exc)
    if delay is not None:
        retry[run.id] = delay


@task(START_RUN, bind=True)
def start_run(self: Any, run_id: str) -> None:
    """Start one run (see :func:`_start`); lost connections and failed attempts retry the message."""
    rt = runtime()
    try:
        delay = _start(rt, [run_id]).get(run_id)
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
    """Start a chunk of runs together (see :func:`_start`); returns how many were tried. A run
    whose attempt failed gets its own ``start_run`` message after the backoff (every run of
    the chunk, at once, when a write for all of them failed), so one run's trouble never
    holds up the others; a lost connection retries the whole message (a run it started
    already is then only sent its first turn again)."""
    rt = runtime()
    try:
        retry = _start(rt, run_ids)
    except StructuredAgentsError as exc:
        if not is_transient(exc):  # some run's own trouble: each run its own message
            send_many(app, ((START_RUN, (run_id,)) for run_id in run_ids))
            return len(run_ids)
        backoff = rt.backoff(self.request.retries + 1)
        raise self.retry(exc=exc, countdown=backoff, max_retries=rt.settings.workers.max_attempts) from exc
    for run_id, delay in retry.items():
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
        state = state_of(run)
        if state is None:
            send(app, START_RUN, (run.id,))
        else:
            send_next(app, run.epoch, state)
            rt.store.touch_state(run.id)
    batches, waiting = rt.store.undispatched(older_than)
    for batch_id in batches:
        send(app, DISPATCH, (batch_id,))
    starts = send_starts(app, waiting) if waiting and queue_length(app, CONTROL_QUEUE) == 0 else 0
    return len(stale) + len(batches) + starts
