"""Building blocks every task's ``outcome`` uses: the target as discovery read it, and what the
run submitted."""

from __future__ import annotations

from pathlib import Path

from structured_agents.jobs.ids import source_hash
from structured_agents.jobs.source import read_regular
from structured_agents.jobs.spec import JobSpec
from structured_agents.kernel.result import RunResult
from structured_agents.tasks.errors import TaskError

__all__ = ["read_target", "submission"]


def read_target(job: JobSpec, root: Path) -> str:
    """The job's target file's text, which must still be what discovery read (its hash)."""
    target = root / job.path
    try:
        data = read_regular(target)
    except OSError as exc:
        raise TaskError(f"cannot read {job.path}: {exc.strerror or exc}") from exc
    if source_hash(data) != job.source_hash:
        raise TaskError(f"{job.path} changed since the job was discovered; run again to redo it")
    return data.decode("utf-8")


def submission(result: RunResult) -> str:
    """The output of the run's termination tool; TaskError (ending with the last tool error)
    when the run ended any other way."""
    if result.termination != "termination_tool" or result.final_output is None:
        errors = [r for r in result.tool_results if r.is_error]
        last = f"; last tool error: {errors[-1].output[-300:]}" if errors else ""
        raise TaskError(f"the agent did not submit a result (the run ended by {result.termination}{last})")
    return result.final_output
