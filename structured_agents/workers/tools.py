"""Tool-call steps (``tools`` queue): one task per call of a turn, fanned out by the model turn.

The fan-in is a counter in the database rather than a Celery chord: each call task records its
``tool_calls`` row (unique on ``call_id``, so a redelivered call is not run or recorded twice)
and then reads the turn's rows; the task that sees every pending call recorded applies the
turn (:meth:`~structured_agents.lifecycle.RunLifecycle.apply_tools`). Each task reads after
its own commit, so the last one to commit always sees all of them; when two both see all, the
compare-and-set lets one apply the turn and the other do nothing. A chord would need a result
backend (the workers have none: history is in the database) and keeps its counter in Redis,
where a redelivered header task counts twice and a Redis restart loses it.
"""

from __future__ import annotations

from typing import Any

from structured_agents.lifecycle import state_of
from structured_agents.store import StoredRun
from structured_agents.workers.attempts import run_step
from structured_agents.workers.celery_app import SETTINGS, app, task
from structured_agents.workers.constants import TOOL_CALL
from structured_agents.workers.dispatch import send_next
from structured_agents.workers.runtime import runtime

__all__ = ["call_tool"]


def _call(run: StoredRun, turn: int, call_id: str) -> None:
    rt = runtime()
    lifecycle = rt.lifecycle
    state = state_of(run)
    if state is not None and state.done and state.turn == turn:
        rt.run(lifecycle.finish(run))  # the turn was applied and ended the run, but the finish failed
        return
    if state is None or state.phase != "tools" or state.turn != turn:
        return
    rows = rt.run(lifecycle.call_tool(run, call_id))
    if not lifecycle.tools_done(run, rows):
        return
    applied = rt.run(lifecycle.apply_tools(run, rows))
    after = state_of(applied) if applied is not None else None
    if applied is None or after is None:
        return  # a duplicate already applied the turn
    if after.done:
        rt.run(lifecycle.finish(applied))
    else:
        send_next(app, applied.epoch, after)


def _tool_of(run: StoredRun, call_id: str) -> str:
    """``tool NAME`` for the call's tool, so that a run failed on the call names it."""
    state = state_of(run)
    calls = state.pending_calls if state is not None else []
    return next((f"tool {call.name}" for call in calls if call.id == call_id), "")


@task(TOOL_CALL, bind=True, time_limit=SETTINGS.workers.tool_time_limit_s)
def call_tool(self: Any, run_id: str, epoch: int, turn: int, call_id: str) -> None:
    """Run one tool call of turn ``turn`` and record it; the last of the turn applies the turn."""
    run_step(
        self,
        run_id,
        epoch,
        ("tool", turn, call_id),
        lambda run: _call(run, turn, call_id),
        lambda run: _tool_of(run, call_id),
    )
