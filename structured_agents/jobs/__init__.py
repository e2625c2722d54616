"""Jobs: the unit of work, walking a codebase (respecting ``.gitignore``) to find them, and
checking the jobs a client gives (:mod:`~structured_agents.jobs.inputs`).

Each :class:`JobSpec` has a stable id (see :mod:`~structured_agents.jobs.ids`), so an unchanged
target is recognised when the codebase is discovered again. What a job is for depends on its
task (:mod:`structured_agents.tasks`), which does the discovering.
"""

from __future__ import annotations

from structured_agents.jobs.errors import DiscoveryError, JobInputError
from structured_agents.jobs.ids import job_id, source_hash
from structured_agents.jobs.inputs import JobInput, parse_jobs, read_jobs_file
from structured_agents.jobs.source import SourceFile, read_source, split_lines
from structured_agents.jobs.spec import JobSpec
from structured_agents.jobs.walk import ALWAYS_SKIPPED, iter_source_files

__all__ = [
    "ALWAYS_SKIPPED",
    "DiscoveryError",
    "JobInput",
    "JobInputError",
    "JobSpec",
    "SourceFile",
    "iter_source_files",
    "job_id",
    "parse_jobs",
    "read_jobs_file",
    "read_source",
    "source_hash",
    "split_lines",
]
