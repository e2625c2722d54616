"""Tool-call steps (``tools`` queue): one task per call of a turn, fanned out by the model turn.

The fan-in is a counter in the database rather than a Celery chord: each call task records its
``tool_calls`` row (unique on ``call_id``, so a redelivered call is not run or recorded twice)
and then reads the turn's rows; the task that sees every pending call recorded applies the
turn (:func:`~structured_agents.workers.tasks_control.next_turn`). Each task reads after its
own commit, so the last one to commit always sees all of them; when two both see all, the compare-and-set lets
one apply the turn and the other do nothing. A chord
would need a result backend (the workers have none: history is in the database) and keeps its
counter in Redis, where a redelivered header task counts twice and a Redis restart loses it.
"""

from __future__ import annotations

import time
from typing import Any

from structured_agents.errors import ToolError
from structured_agents.workers.celery_app import SETTINGS, task
from structured_agents.workers.constants import TOOL_CALL
from structured_agents.workers.lifecycle import run_step
from structured_agents.workers.runtime import runtime
from structured_agents.workers.state import StoredRun
from structured_agents.workers.tasks_control import finish, next_turn

__all__ = ["call_tool"]


def _call(run: StoredRun, turn: int, call_id: str) -> None:
    rt = runtime()
    state = run.current_state
    if state is not None and state.done and state.turn == turn:
        finish(run, state)  # the turn was applied and ended the run, but the finish failed
        return
    if state is None or state.phase != "tools" or state.turn != turn:
        return
    call = next((call for call in state.pending_calls if call.id == call_id), None)
    if call is None:
        return
    rows = rt.states.tool_calls(run.run_id, turn)
    if call_id not in rows:
        agent = rt.agents.get(str(run.options["bundle"]))
        started = time.perf_counter()
        result = rt.run(agent.kernel.tools.execute(call, state.context()))
        duration = time.perf_counter() - started
        recorded = rt.store.record_tool_call(
            run.run_id,
            turn,
            call.id,
            call.name,
            call.arguments,
            result.output,
            is_error=result.is_error,
            duration_s=duration,
        )
        rows = rt.states.tool_calls(run.run_id, turn)
        if not recorded and call_id not in rows:
            raise ToolError(
                f"tool call id {call_id!r} of run {run.run_id} is already recorded for another run"
            )
    if all(pending.id in rows for pending in state.pending_calls):
        next_turn(run, state, rows)


@task(TOOL_CALL, bind=True, time_limit=SETTINGS.workers.tool_time_limit_s)
def call_tool(self: Any, run_id: str, epoch: int, turn: int, call_id: str) -> None:
    """Run one tool call of turn ``turn`` and record it; the last of the turn applies the turn."""
    run_step(self, run_id, epoch, ("tool", turn, call_id), lambda run: _call(run, turn, call_id))
