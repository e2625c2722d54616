"""Run a bundle over a scratch copy through the embedded runner, then apply what it proposes.

The same path ``sa run`` and ``sa apply`` take: :class:`~structured_agents.runner.EmbeddedRunner`
with a fresh SQLite store next to the code, then :func:`~structured_agents.patches.apply_patches`
on the proposed results. What each job did comes back from the store: its run (status,
error, timing), its tool calls, and what became of its patch.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from structured_agents.bundles import Bundle
from structured_agents.engines import BatchingEngine
from structured_agents.evaluation.failures import COPY_REFUSED, failure_reason, is_copy_refusal
from structured_agents.jobs import JobSpec
from structured_agents.patches import apply_patches
from structured_agents.runner import EmbeddedRunner, RunSummary
from structured_agents.store import Run, SqlStore, ToolCallRecord

__all__ = ["AgentRun", "JobRecord", "run_agent"]


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job of an agent run, as the store and the patch application saw it."""

    run: Run
    """The run: target, status, error, timing."""
    tool_calls: tuple[ToolCallRecord, ...]
    """Its tool calls, in order."""
    patch_status: str | None
    """``applied``, ``stale``, ``invalid`` or ``conflict``; None when it proposed nothing."""
    patch_detail: str
    """Why a patch was not applied."""
    termination_tool: str
    """The bundle's termination tool (its refused calls are the copy refusals)."""
    result_summary: str = ""
    """The summary of its stored result (a lint job's: what was proposed, kept and failed);
    empty when it stored none."""
    flags: tuple[str, ...] = ()
    """Why its stored result needs review (the docstring verifier's findings); empty: clean."""
    cut_off: int = 0
    """Its model turns that ended on the token limit."""

    @property
    def duration_s(self) -> float | None:
        """Seconds from the run's start to its end."""
        if self.run.started_at is None or self.run.finished_at is None:
            return None
        return (self.run.finished_at - self.run.started_at).total_seconds()

    @property
    def copy_refusals(self) -> int:
        """Submissions refused as copies of the bundle's examples or tool descriptions."""
        return sum(
            call.name == self.termination_tool and call.is_error and is_copy_refusal(call.output)
            for call in self.tool_calls
        )

    @property
    def failure(self) -> str | None:
        """Why the job produced no applied change (None when it did)."""
        if self.run.status != "succeeded":
            submissions = [call for call in self.tool_calls if call.name == self.termination_tool]
            if submissions and submissions[-1].is_error and is_copy_refusal(submissions[-1].output):
                return COPY_REFUSED
            return failure_reason(self.run.error or f"run {self.run.status}")
        if self.patch_status is None:
            return "succeeded without a change"
        if self.patch_status != "applied":
            return f"patch {self.patch_status}"
        return None


@dataclass(frozen=True, slots=True)
class AgentRun:
    """What one agent run over a scratch copy did."""

    summary: RunSummary
    """The runner's summary (batch id, counts, tokens, elapsed time)."""
    jobs: tuple[JobRecord, ...]
    """Every job of the batch."""
    wall_s: float
    """Wall time of the run and the patch application."""


async def run_agent(
    bundle: Bundle,
    engine: BatchingEngine,
    root: Path,
    jobs: list[JobSpec],
    *,
    store_path: Path,
    concurrency: int,
    task_options: Mapping[str, object] | None = None,
) -> AgentRun:
    """Run ``jobs`` of ``bundle`` over ``root`` and apply the proposed patches to ``root``.

    ``engine`` is shared between runs and stays open; the store is a new SQLite file at
    ``store_path`` (outside ``root``); ``task_options`` are the batch's (the lint task's check).
    """
    started = time.monotonic()
    with SqlStore(f"sqlite:///{store_path}") as store:
        runner = EmbeddedRunner(bundle, engine, store, concurrency=concurrency)
        summary = await runner.run(root, jobs, task_options=task_options)
        results = store.results(summary.batch_id)
        report = apply_patches(root, [result for result in results if result.status == "proposed"])
        outcomes = {o.run_id: o for file in report.files for o in file.outcomes}
        stored = {result.run_id: result for result in results}
        records = tuple(
            JobRecord(
                run=run,
                tool_calls=tuple(store.tool_calls(run.id)),
                patch_status=outcomes[run.id].status if run.id in outcomes else None,
                patch_detail=outcomes[run.id].detail if run.id in outcomes else "",
                termination_tool=bundle.manifest.termination_tool,
                result_summary=stored[run.id].summary if run.id in stored else "",
                flags=stored[run.id].flags if run.id in stored else (),
                cut_off=sum(turn.finish_reason == "length" for turn in store.turns(run.id)),
            )
            for run in store.list_runs(summary.batch_id)
        )
    return AgentRun(summary, records, time.monotonic() - started)
