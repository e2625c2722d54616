"""Job discovery: walk a codebase (respecting ``.gitignore``) and turn its targets into jobs.

Each :class:`JobSpec` has a stable id (see :mod:`~structured_agents.jobs.ids`), so an unchanged
target is recognised when the codebase is discovered again.
"""

from __future__ import annotations

from structured_agents.jobs.docstrings import (
    DOCSTRING_KIND,
    DocstringTarget,
    discover_docstring_jobs,
    find_docstring_targets,
)
from structured_agents.jobs.errors import DiscoveryError
from structured_agents.jobs.ids import job_id, source_hash
from structured_agents.jobs.lint import LINT_KIND, MODULE_QUALNAME, discover_lint_jobs, ruff_findings
from structured_agents.jobs.source import SourceFile, read_source, split_lines
from structured_agents.jobs.spec import JobSpec
from structured_agents.jobs.walk import ALWAYS_SKIPPED, iter_source_files

__all__ = [
    "ALWAYS_SKIPPED",
    "DOCSTRING_KIND",
    "LINT_KIND",
    "MODULE_QUALNAME",
    "DiscoveryError",
    "DocstringTarget",
    "JobSpec",
    "SourceFile",
    "discover_docstring_jobs",
    "discover_lint_jobs",
    "find_docstring_targets",
    "iter_source_files",
    "job_id",
    "read_source",
    "ruff_findings",
    "source_hash",
    "split_lines",
]
