"""Lint jobs: one per file with ruff findings, honouring .gitignore and the project's ruff config;
each offers what ruff's safe fixes leave, with ruff's other fixes as diffs to accept or reject."""

from __future__ import annotations

from pathlib import Path

import pytest

from structured_agents.jobs import DiscoveryError, job_id
from structured_agents.tasks.check import CheckCommand
from structured_agents.tasks.lint import LINT_KIND, MODULE_QUALNAME, discover_lint_jobs
from structured_agents.tasks.lint_fixes import MAX_CANDIDATES
from structured_agents.tasks.ruff import ruff_safe_fixes

CLASSIC_RULES = '[lint]\nselect = ["E4", "E7", "E9", "F"]\n'


def test_one_job_per_file_with_findings(sample_project: Path) -> None:
    (sample_project / "scratch.py").write_text("import json\n")  # ignored by .gitignore: no job
    jobs = discover_lint_jobs(sample_project)
    assert [job.path for job in jobs] == ["lint_me.py"]
    (job,) = jobs
    original = (sample_project / "lint_me.py").read_text()
    fixed = original.replace("import os\n", "")  # F401: ruff's safe fix, done before the agent
    assert (job.kind, job.qualname, job.inputs["source"]) == (LINT_KIND, MODULE_QUALNAME, fixed)
    assert job.job_id == job_id(LINT_KIND, "lint_me.py", MODULE_QUALNAME, original)
    [finding] = job.inputs["findings"]
    assert (finding["id"], finding["code"], finding["line"]) == (1, "E711", 9)
    assert finding["context"].splitlines()[1] == ">  9 |     if email == None:"
    assert finding["fix"]["diff"] == "-    if email == None:\n+    if email is None:"
    [(start, end, content)] = finding["fix"]["edits"]
    assert (fixed[start:end], content) == ("email == None", "email is None")
    assert job.inputs["fix_ids"] == [1]
    assert discover_lint_jobs(sample_project)[0].job_id == job.job_id


def test_fixes_and_candidates_are_numbered_by_line_and_a_finding_with_neither_is_not_offered(
    tmp_path: Path,
) -> None:
    (tmp_path / "ruff.toml").write_text(CLASSIC_RULES)
    bare = "def run(jobs):\n    try:\n        jobs()\n    except:\n        pass\n"
    (tmp_path / "jobs.py").write_text(bare + "    done = 1\n    é = 'ü'; x = 2\n")

    [job] = discover_lint_jobs(tmp_path)

    found = [(f["id"], f["code"], f["line"]) for f in job.inputs["findings"]]
    assert found == [(1, "E722", 4), (2, "F841", 6), (3, "F841", 7), (4, "F841", 7)]  # E702: neither
    assert job.inputs["fix_ids"] == [1, 2, 3, 4]
    source = job.inputs["source"]
    edited = [source[s:e] for f in job.inputs["findings"] for s, e, _ in f["fix"]["edits"]]
    assert edited == ["", "    done = 1\n", "é = 'ü'; ", "x = 2"]  # columns count characters, not bytes


def test_with_a_check_command_the_agent_has_nothing_to_decide(tmp_path: Path) -> None:
    """The check decides every fix (see ``lint_verdict``): none is put to the model."""
    (tmp_path / "ruff.toml").write_text(CLASSIC_RULES)
    bare = "def run(jobs):\n    try:\n        jobs()\n    except:\n        pass\n"
    (tmp_path / "jobs.py").write_text(bare + "    done = 1\n")

    [job] = discover_lint_jobs(tmp_path, CheckCommand("true").to_options())

    assert (job.inputs["findings"], job.inputs["fix_ids"]) == ([], [])


def test_a_file_ruffs_safe_fixes_clean_is_a_job_with_nothing_to_decide(tmp_path: Path) -> None:
    (tmp_path / "ruff.toml").write_text(CLASSIC_RULES)
    (tmp_path / "imports.py").write_text("import os\nimport sys\n\nprint(sys.argv)\n")

    [job] = discover_lint_jobs(tmp_path)

    assert job.inputs["source"] == "import sys\n\nprint(sys.argv)\n"
    assert (job.inputs["findings"], job.inputs["fix_ids"]) == ([], [])


def test_a_job_offers_at_most_a_few_fixes_the_first_by_line(tmp_path: Path) -> None:
    (tmp_path / "ruff.toml").write_text(CLASSIC_RULES)
    bare = "".join("try:\n    pass\nexcept:\n    pass\n" for _ in range(MAX_CANDIDATES))
    (tmp_path / "many.py").write_text(bare + "def f(x):\n    return x == None\n")

    [job] = discover_lint_jobs(tmp_path)

    findings = job.inputs["findings"]
    assert len(findings) == MAX_CANDIDATES and {f["code"] for f in findings} == {"E722"}
    assert job.inputs["fix_ids"] == list(range(1, MAX_CANDIDATES + 1))


def test_fixing_a_file_removes_its_job(sample_project: Path) -> None:
    path = sample_project / "lint_me.py"
    path.write_text(path.read_text().replace("import os\n", "").replace("== None", "is None"))
    assert discover_lint_jobs(sample_project) == []


def test_discovery_writes_nothing(sample_project: Path) -> None:
    before = (sample_project / "lint_me.py").read_text()
    discover_lint_jobs(sample_project)
    assert (sample_project / "lint_me.py").read_text() == before
    assert ruff_safe_fixes(sample_project, "lint_me.py", before) != before


def test_ruff_failure_is_a_discovery_error(sample_project: Path) -> None:
    (sample_project / "ruff.toml").write_text("[lint]\nselect = [\n")
    with pytest.raises(DiscoveryError, match="ruff failed"):
        discover_lint_jobs(sample_project)
