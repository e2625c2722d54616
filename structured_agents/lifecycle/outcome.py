"""A finished run's outcome, and the rows that record what a run did: one place for both drivers.

A run of a bundle with a task (``docstring``, ``lint``) goes through the task's ``outcome``: its
output becomes a unified diff against the file as discovery read it, stored as the run's
result, and the task decides whether the job succeeded. A run of a bundle without a task (jobs
given explicitly) succeeds when it ended normally, and its final output is stored as the
result's summary with an empty diff, so it can be read in SQL like any other result.
"""

from __future__ import annotations

from pathlib import Path

from structured_agents.kernel import Completion, RunResult, RunState
from structured_agents.patches import PatchError
from structured_agents.store import Store, StoredRun, TurnRecord
from structured_agents.tasks import Outcome, TaskError, get_task

__all__ = ["outcome_of", "store_outcome", "turn_record"]


def outcome_of(task: str | None, run: StoredRun, state: RunState) -> Outcome:
    """What the finished run ``run`` (its final ``state``) produced, for its bundle's ``task``."""
    if task is not None:
        result = RunResult.from_state(state)
        try:
            return get_task(task).outcome(run.job, result, Path(run.root_path), run.options)
        except (TaskError, PatchError) as exc:
            return Outcome(False, error=str(exc))
    if state.termination in ("termination_tool", "no_tool_calls"):
        return Outcome(True, summary=state.final_output or "")
    return Outcome(False, error=f"the run ended by {state.termination} without a result")


def store_outcome(store: Store, run: StoredRun, outcome: Outcome) -> None:
    """Store the outcome's change, or the output of a run that changes no file, as its result."""
    change = outcome.change
    if change is not None and change.diff:
        store.save_result(
            run.id,
            target_path=change.target_path,
            original_hash=change.original_hash,
            diff=change.diff,
            summary=outcome.summary,
            status=outcome.result_status,
            flags=outcome.flags,
            unique_summary=outcome.unique_summary,
        )
    elif change is None and outcome.succeeded:
        store.save_result(
            run.id,
            target_path=run.target_path,
            original_hash=run.source_hash,
            diff="",
            summary=outcome.summary,
        )


def turn_record(run_id: str, turn: int, completion: Completion) -> TurnRecord:
    """The ``turns`` row of model turn ``turn`` of a run, decoded as ``completion``."""
    return TurnRecord(
        run_id=run_id,
        turn=turn,
        prompt_tokens=completion.usage.prompt_tokens,
        completion_tokens=completion.usage.completion_tokens,
        latency_s=completion.latency_s,
        batch_size=completion.batch_size,
        finish_reason=completion.finish_reason,
        raw_text=completion.text,
    )
