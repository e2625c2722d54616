"""Lint jobs: one per file with ruff findings, honouring .gitignore and the project's ruff config."""

from __future__ import annotations

from pathlib import Path

import pytest

from structured_agents.jobs import DiscoveryError, job_id
from structured_agents.tasks.lint import LINT_KIND, MODULE_QUALNAME, discover_lint_jobs


def test_one_job_per_file_with_findings(sample_project: Path) -> None:
    (sample_project / "scratch.py").write_text("import json\n")  # ignored by .gitignore: no job
    jobs = discover_lint_jobs(sample_project)
    assert [job.path for job in jobs] == ["lint_me.py"]
    (job,) = jobs
    source = (sample_project / "lint_me.py").read_text()
    assert (job.kind, job.qualname, job.inputs["source"]) == (LINT_KIND, MODULE_QUALNAME, source)
    assert job.job_id == job_id(LINT_KIND, "lint_me.py", MODULE_QUALNAME, source)
    findings = job.inputs["findings"]
    assert [(f["code"], f["line"]) for f in findings] == [("F401", 3), ("E711", 10)]
    assert findings[0]["fixable"] and "os" in findings[0]["message"]
    assert discover_lint_jobs(sample_project)[0].job_id == job.job_id


def test_fixing_a_file_removes_its_job(sample_project: Path) -> None:
    path = sample_project / "lint_me.py"
    path.write_text(path.read_text().replace("import os\n", "").replace("== None", "is None"))
    assert discover_lint_jobs(sample_project) == []


def test_ruff_failure_is_a_discovery_error(sample_project: Path) -> None:
    (sample_project / "ruff.toml").write_text("[lint]\nselect = [\n")
    with pytest.raises(DiscoveryError, match="ruff failed"):
        discover_lint_jobs(sample_project)
