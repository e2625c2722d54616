"""A real batch for the report tests: the docstring_calls bundle over the sample project, scripted.

The embedded runner runs every job of ``tests/fixtures/sample_project`` with a grammar-checked
scripted engine. Jobs are given one of three roles by their place in job-id order, so the batch
has every shape a report shows: runs that submit at once (one turn), runs that submit an empty
description first (a failed ``submit_result`` call) and a good one next (two turns), and runs
that submit an empty description twice (two failed calls: the run fails). Only targets that
hand nothing back take the last two roles: the summary of one that returns a value must open
on ``Return``, so the grammar never lets it be empty.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from scripted_docstrings import summary

from structured_agents.bundles import Bundle
from structured_agents.engines import GenerationRequest, ScriptedEngine, by_run_id
from structured_agents.engines.scripted import Script
from structured_agents.runner import EmbeddedRunner
from structured_agents.store import Store
from structured_agents.types import ToolCall

__all__ = ["SAMPLE_PROJECT", "Filled", "ScriptedBatch", "run_scripted_batch", "submit"]

SAMPLE_PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"
EMPTY = [ToolCall("submit_result", {"description": ""})]


def submit(request: GenerationRequest) -> list[ToolCall]:
    """A good submission: its summary opens as the request's job asks."""
    return [ToolCall("submit_result", {"description": summary(request, "what the name says.", "Do ")})]


@dataclass(frozen=True, slots=True)
class ScriptedBatch:
    """What the scripted batch did, to check a report against."""

    batch_id: str
    submitting: frozenset[str]
    """Runs that submitted in their first turn."""
    retrying: frozenset[str]
    """Runs that submitted an empty description, then a good one."""
    failing: frozenset[str]
    """Runs that submitted an empty description twice and failed."""

    @property
    def runs(self) -> int:
        """Runs in the batch."""
        return len(self.submitting) + len(self.retrying) + len(self.failing)


Filled = tuple[Store, ScriptedBatch]
"""A store and the scripted batch it holds."""


def run_scripted_batch(bundle: Bundle, store: Store, workdir: Path, *, concurrency: int = 4) -> ScriptedBatch:
    """Copy the sample project under ``workdir`` and run the docstring_calls bundle over it."""
    root = workdir / "sample_project"
    shutil.copytree(SAMPLE_PROJECT, root)
    jobs = sorted(bundle.discover_jobs(root), key=lambda job: job.job_id)
    quiet = [job for job in jobs if not job.inputs.get("gives")]
    failing = frozenset(job.job_id for job in quiet[0::4])
    retrying = frozenset(job.job_id for job in quiet[1::3]) - failing
    scripts: dict[str, Script] = {job_id: [EMPTY, EMPTY] for job_id in failing}
    scripts |= {job_id: [EMPTY, submit] for job_id in retrying}

    def script(key: Hashable) -> Script:
        return scripts.get(str(key), [submit])

    engine = ScriptedEngine(script, plugin=bundle.plugin, key=by_run_id, validate_grammar=True)
    runner = EmbeddedRunner(bundle, engine, store, concurrency=concurrency, batch_wait_s=0.05)
    summary = asyncio.run(runner.run(root, jobs))
    submitting = frozenset(job.job_id for job in jobs) - failing - retrying
    return ScriptedBatch(summary.batch_id, submitting, retrying, failing)
