"""A finished run's outcome: the runner's result handler of the bundle's task, or its output.

Bundles with a task (``docstring``, ``lint``) go through the same handlers as the embedded
runner (:mod:`structured_agents.runner.tasks`): the output becomes a unified diff against the
file as discovery read it, stored as the run's result, and the handler decides whether the
job succeeded. Bundles without a task (jobs given explicitly) store the final output as the
result's summary, with an empty diff, and succeed when the run ended normally.
"""

from __future__ import annotations

from pathlib import Path

from structured_agents.kernel import RunResult
from structured_agents.kernel.state import RunState
from structured_agents.runner.tasks import HANDLERS, Outcome, run_handler
from structured_agents.store import Store
from structured_agents.workers.state import StoredRun

__all__ = ["outcome_of", "store_outcome"]


def outcome_of(store: Store, run: StoredRun, task: str | None, state: RunState) -> Outcome:
    """What the finished run ``run`` (its final ``state``) produced."""
    handler = HANDLERS.get(task or "")
    if handler is not None:
        result = RunResult.from_state(state)
        return run_handler(handler, store.get_run(run.run_id), result, Path(run.root_path))
    if state.termination in ("termination_tool", "no_tool_calls"):
        return Outcome(True, summary=state.final_output or "")
    return Outcome(False, error=f"the run ended by {state.termination} without a result")


def store_outcome(store: Store, run: StoredRun, outcome: Outcome) -> None:
    """Store the outcome's change, or the output of a run that changes no file, as its result."""
    change = outcome.change
    if change is not None and change.diff:
        store.save_result(
            run.run_id,
            target_path=change.target_path,
            original_hash=change.original_hash,
            diff=change.diff,
            summary=outcome.summary,
            status=outcome.result_status,
        )
    elif change is None and outcome.succeeded:
        store.save_result(
            run.run_id,
            target_path=run.target_path,
            original_hash=run.source_hash,
            diff="",
            summary=outcome.summary,
        )
