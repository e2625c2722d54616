"""Control steps (``control`` queue): start a run, finish it, dispatch a batch, sweep, delay.

:func:`next_turn` ("next turn") and :func:`finish` are the lifecycle functions the other steps
call inline: the tool-call step that records the last call of a turn applies the turn with
:func:`next_turn`, which sends the next model turn or finishes the run on the spot; the
``finish_run`` task finishes runs whose last turn ended without tool calls (and those the sweep
finds done). :func:`cancel_batch` is called directly by the API and the CLI.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from structured_agents.errors import StructuredAgentsError
from structured_agents.kernel.state import RunState
from structured_agents.observer.events import ToolCallEvent, ToolResultEvent
from structured_agents.store import Store
from structured_agents.store.models import ToolCallRow
from structured_agents.types import JsonDict, ToolCall, ToolResult
from structured_agents.workers.celery_app import app, task
from structured_agents.workers.constants import CONTROL_QUEUE, DELAYED, DISPATCH, FINISH_RUN, START_RUN, SWEEP
from structured_agents.workers.dispatch import queue_length, send, send_next, send_starts
from structured_agents.workers.errors import is_transient
from structured_agents.workers.lifecycle import begin, close_run, on_failure, run_step
from structured_agents.workers.results import outcome_of, store_outcome
from structured_agents.workers.runtime import runtime
from structured_agents.workers.state import StoredRun

__all__ = [
    "cancel_batch",
    "delayed",
    "dispatch",
    "finish",
    "finish_run",
    "next_turn",
    "start_run",
    "sweep",
]


@task(START_RUN, bind=True)
def start_run(self: Any, run_id: str) -> None:
    """Claim a queued run, emit ``KernelStart``, store its first state, send its first turn."""
    rt = runtime()
    try:
        run = rt.states.load([run_id]).get(run_id)
        if run is not None and run.status == "queued":
            rt.store.claim(run_id)
            run = rt.states.load([run_id]).get(run_id)
        if run is None or run.status != "running":
            return
        current = run.current_state
        if current is not None:  # a duplicate start: make sure the first turn is on its way
            if current.phase == "model" and current.turn == 0:
                send_next(app, run.epoch, current)
            return
        attempt = begin(rt, run, "start")
    except StructuredAgentsError as exc:
        if not is_transient(exc):
            raise
        retries = rt.settings.workers.max_attempts
        raise self.retry(
            exc=exc, countdown=rt.backoff(self.request.retries + 1), max_retries=retries
        ) from exc
    if attempt is None:
        return
    try:
        agent = rt.agents.get(str(run.options["bundle"]))
        agent.drain()
        workspace = Path(run.root_path)
        messages = rt.run(agent.bundle.initial_messages(run.inputs, workspace))
        state = rt.run(
            agent.kernel.start(messages, run_id=run.run_id, workspace=workspace, inputs=run.inputs)
        )
        if rt.states.init_state(run, state, agent.drain()):
            send_next(app, max(run.epoch, 0) + 1, state)
    except Exception as exc:
        delay = on_failure(rt, run, "start", attempt, exc)
        if delay is not None:
            raise self.retry(exc=exc, countdown=delay, max_retries=None) from exc


def _tool_events(run_id: str, turn: int, calls: list[ToolCallRow]) -> list[JsonDict]:
    """The turn's ``tool_call`` events, then its ``tool_result`` events, in call order."""
    started = [
        ToolCallEvent(
            run_id=run_id,
            turn=turn,
            call=ToolCall(row.name, dict(row.arguments), row.call_id),
            timestamp=(row.created_at - timedelta(seconds=row.duration_s)).timestamp(),
        )
        for row in calls
    ]
    ended = [
        ToolResultEvent(
            run_id=run_id,
            turn=turn,
            call_id=row.call_id,
            name=row.name,
            output=row.output,
            is_error=row.is_error,
            duration_s=row.duration_s,
            timestamp=row.created_at.timestamp(),
        )
        for row in calls
    ]
    return [event.to_dict() for event in (*started, *ended)]


def next_turn(run: StoredRun, state: RunState, rows: Mapping[str, ToolCallRow]) -> None:
    """Apply a turn's recorded tool results, then send the next model turn or finish the run.

    Called by the tool-call step that finds every call of the turn recorded. It writes the
    turn's ``tool_call``/``tool_result`` events in call order, then the kernel's
    ``TurnComplete`` (and ``KernelEnd`` when the run ends), in one compare-and-set commit.
    """
    rt = runtime()
    agent = rt.agents.get(str(run.options["bundle"]))
    agent.drain()
    calls = [rows[call.id] for call in state.pending_calls]
    results = [ToolResult(row.call_id, row.name, row.output, row.is_error) for row in calls]
    rt.run(agent.kernel.apply_results(state, results))
    if not rt.states.commit(run, state, _tool_events(run.run_id, state.turn, calls) + agent.drain()):
        return  # a duplicate already applied the turn
    if state.done:
        finish(run, state)
    else:
        send_next(app, run.epoch, state)


def finish(run: StoredRun, state: RunState) -> None:
    """Store a finished run's outcome (the runner's result handlers) and give it its final status."""
    rt = runtime()
    if state.termination == "error":  # failed where it ended (fail_run); nothing to store
        close_run(rt, run, "failed", state.error)
        return
    task = rt.agents.get(str(run.options["bundle"])).bundle.manifest.task
    outcome = outcome_of(rt.store, run, task, state)
    store_outcome(rt.store, run, outcome)
    close_run(rt, run, "succeeded" if outcome.succeeded else "failed", outcome.error)


def _finish(run: StoredRun) -> None:
    state = run.current_state
    if state is not None and state.done:
        finish(run, state)


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
    """Send the start of every queued run of a batch; returns how many were sent."""
    rt = runtime()
    if not rt.states.move_batch(batch_id, "running", only_from=("queued",)):
        return 0  # cancelled before it was dispatched (or dispatched already)
    return send_starts(app, [run.id for run in rt.store.list_runs(batch_id, "queued")])


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
    stale = rt.states.stale(older_than)
    for run in stale:
        state = run.current_state
        if state is None:
            send(app, START_RUN, (run.run_id,))
        else:
            send_next(app, run.epoch, state)
            rt.states.touch(run)
    batches, waiting = rt.states.undispatched(older_than)
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
