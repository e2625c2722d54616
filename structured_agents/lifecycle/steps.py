"""The steps of a run, whoever drives them: the Celery workers or the embedded runner.

A run is a state machine whose state lives in the store between steps::

    start ─▶ model turn ─▶ tool calls ─▶ apply tools ─┬─▶ model turn ...
                 │                                     └─▶ finish
                 └──(no calls)──────────────────────────▶ finish

Each step loads the run (:meth:`Store.load_runs`), acts only when the stored state is where
the step expects it, and commits the new state with the step's events and turn row in one
compare-and-set (:meth:`Store.commit_state`), so a duplicated step changes nothing. A step
returns the run as stored after its commit, or None when there was nothing to do (a duplicate,
or a run that moved on); the driver then sends or runs the step the state needs next
(:meth:`RunLifecycle.next_step`). Decoding is the driver's: the workers batch model turns on
the ``llm`` queue, the embedded runner through its batching engine. Retries are the driver's
too: the workers count attempts of each step, the embedded runner fails a run on the first
error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

from structured_agents.errors import ToolError
from structured_agents.kernel import Completion, GenerationRequest, RunState
from structured_agents.lifecycle.agents import BatchAgent
from structured_agents.lifecycle.outcome import outcome_of, store_outcome, turn_record
from structured_agents.observer.events import KernelEnd, ToolCallEvent, ToolResultEvent
from structured_agents.status import FinalStatus
from structured_agents.store import Store, StoredRun, ToolCallRecord
from structured_agents.types import JsonDict, ToolCall, ToolResult

__all__ = ["ModelTurn", "NextStep", "RunLifecycle", "next_step", "state_of"]

NextStep = Literal["model", "tools", "finish"]
"""What a stored state needs next: a model turn, its tool calls, or the finish."""


def state_of(run: StoredRun) -> RunState | None:
    """The run's state under its current claim, decoded from what the store keeps (the kernel's
    ``RunState.to_dict()``); None when the claim has none yet. Each call decodes anew, so a
    step's changes to it reach the store only through its commit."""
    data = run.state
    return RunState.from_dict(data) if data is not None else None


def _recorded(state: RunState | None, rows: Mapping[str, ToolCallRecord]) -> bool:
    """Whether ``state`` waits on tool calls that ``rows`` all record."""
    return state is not None and state.phase == "tools" and all(c.id in rows for c in state.pending_calls)


def next_step(state: RunState) -> NextStep | None:
    """The step ``state`` needs next (None while a model turn is being decoded)."""
    if state.phase == "model":
        return "model"
    if state.phase == "tools":
        return "tools"
    if state.phase == "done":
        return "finish"
    return None


@dataclass(slots=True)
class ModelTurn:
    """A model turn being decoded: the run, its state past ``ModelRequest``, the request."""

    run: StoredRun
    agent: BatchAgent
    state: RunState
    request: GenerationRequest
    events: list[JsonDict]
    """The turn's events so far (``ModelRequest``), committed with the turn."""


class RunLifecycle:
    """The steps of runs over ``store``; ``agent_for`` gives the agent (bundle, kernel) of a run."""

    def __init__(self, store: Store, agent_for: Callable[[StoredRun], Awaitable[BatchAgent]]) -> None:
        self.store = store
        self.agent_for = agent_for

    async def start(self, run: StoredRun) -> StoredRun | None:
        """Store the first state of a claimed run (``KernelStart``, turn 0); None when a
        duplicate start stored one first."""
        state, events = await self.first_state(run)
        return self.store.init_state(run, state.to_dict(), events)

    async def first_state(self, run: StoredRun) -> tuple[RunState, list[JsonDict]]:
        """The first state of a claimed run (turn 0) and its events (``KernelStart``), not yet
        stored: :meth:`start` stores one, a driver starting many stores them together
        (:meth:`Store.init_states`)."""
        agent = await self.agent_for(run)
        agent.events.take(run.id)
        workspace = Path(run.root_path)
        messages = await agent.bundle.initial_messages(run.inputs, workspace)
        state = await agent.kernel.start(messages, run_id=run.id, workspace=workspace, inputs=run.inputs)
        return state, agent.events.take(run.id)

    async def model_turn(self, run: StoredRun, turn: int) -> ModelTurn | None:
        """Begin model turn ``turn`` of the run: its request (``ModelRequest``); None when the
        stored state is not waiting for that turn (a duplicate of a turn already applied)."""
        state = state_of(run)
        if run.status != "running" or state is None or state.phase != "model" or state.turn != turn - 1:
            return None
        agent = await self.agent_for(run)
        agent.events.take(run.id)
        request = await agent.kernel.build_request(state)
        return ModelTurn(run, agent, state, request, agent.events.take(run.id))

    async def apply_completion(self, turn: ModelTurn, completion: Completion) -> StoredRun | None:
        """Parse the decoded turn (the candidate the kernel keeps, when it has several) into the
        history and commit it with its ``turns`` row; None when a duplicate committed it first."""
        run_id = turn.run.id
        completion = turn.agent.kernel.select_candidate(turn.state, completion)
        await turn.agent.kernel.apply_completion(turn.state, completion)
        events = turn.events + turn.agent.events.take(run_id)
        row = turn_record(run_id, turn.state.turn, completion)
        return self.store.commit_state(turn.run, turn.state.to_dict(), events, turn=row)

    async def call_tool(self, run: StoredRun, call_id: str) -> dict[str, ToolCallRecord]:
        """Run one pending call of the run's current turn and record it, unless it is recorded
        already (a call runs at least once, and is recorded once); the turn's recorded calls."""
        state = state_of(run)
        if state is None or state.phase != "tools":
            return {}
        call = next((call for call in state.pending_calls if call.id == call_id), None)
        if call is None:
            return {}
        rows = self.store.turn_tool_calls(run.id, state.turn)
        if call_id in rows:
            return rows
        agent = await self.agent_for(run)
        started = time.perf_counter()
        result = await agent.kernel.tools.execute(call, state.context())
        recorded = self.store.record_tool_call(
            run.id,
            state.turn,
            call.id,
            call.name,
            call.arguments,
            result.output,
            is_error=result.is_error,
            duration_s=time.perf_counter() - started,
            ban=result.ban,
        )
        rows = self.store.turn_tool_calls(run.id, state.turn)
        if not recorded and call_id not in rows:
            raise ToolError(f"tool call id {call_id!r} of run {run.id} is already recorded for another run")
        return rows

    @staticmethod
    def tools_done(run: StoredRun, rows: Mapping[str, ToolCallRecord]) -> bool:
        """Whether every pending call of the run's current turn is recorded in ``rows``."""
        return _recorded(state_of(run), rows)

    async def apply_tools(self, run: StoredRun, rows: Mapping[str, ToolCallRecord]) -> StoredRun | None:
        """Apply a turn's recorded tool results (``TurnComplete``, and ``KernelEnd`` when the
        run ends), with the turn's ``tool_call``/``tool_result`` events in call order, in one
        compare-and-set commit; None when a duplicate applied the turn first."""
        state = state_of(run)
        if state is None or not _recorded(state, rows):
            return None
        agent = await self.agent_for(run)
        agent.events.take(run.id)
        calls = [rows[call.id] for call in state.pending_calls]
        results = [ToolResult(row.call_id, row.name, row.output, row.is_error, row.ban) for row in calls]
        await agent.kernel.apply_results(state, results)
        events = _tool_events(run.id, state.turn, calls) + agent.events.take(run.id)
        return self.store.commit_state(run, state.to_dict(), events)

    async def finish(self, run: StoredRun) -> FinalStatus | None:
        """Store a finished run's outcome and give it its final status (and its batch, when it
        was the last run); None when its state is not done."""
        state = state_of(run)
        if state is None or not state.done:
            return None
        if state.termination == "error":  # failed where it ended (fail); nothing to store
            self.close(run, "failed", state.error)
            return "failed"
        agent = await self.agent_for(run)
        # off the event loop: a task's outcome may take a while (lint runs ruff and the
        # batch's check command), and the embedded runner's other runs go on meanwhile
        outcome = await asyncio.to_thread(outcome_of, agent.bundle.manifest.task, run, state)
        store_outcome(self.store, run, outcome)
        status: FinalStatus = "succeeded" if outcome.succeeded else "failed"
        self.close(run, status, outcome.error)
        return status

    def fail(self, run: StoredRun, error: BaseException, *, events: Sequence[JsonDict] = ()) -> None:
        """End ``run`` as failed: ``events`` (what the failed step emitted), then
        ``KernelEnd(reason="error")``, in its log; status ``failed`` with the error."""
        message = f"{type(error).__name__}: {error}"
        state = state_of(run)
        if state is not None and not state.done:
            ended = state  # decoded for this step alone: nothing else holds it
            ended.phase, ended.termination, ended.error = "done", "error", message
            end = KernelEnd(
                run_id=run.id,
                turn=state.turn,
                reason="error",
                usage=state.usage,
                duration_s=time.time() - state.started_at,
                error=message,
            )
            self.store.commit_state(run, ended.to_dict(), [*events, end.to_dict()])
        elif events:
            self.store.record_events(events)
        self.close(run, "failed", message)

    def close(self, run: StoredRun, status: FinalStatus, error: str | None = None) -> None:
        """Give the run its final status (the store finishes its batch with its last run) and
        forget its step attempts."""
        if self.store.finish(run.id, status, error):
            self.store.clear_steps(run.id)


def _tool_events(run_id: str, turn: int, calls: list[ToolCallRecord]) -> list[JsonDict]:
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
