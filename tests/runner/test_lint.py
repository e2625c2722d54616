"""The lint bundle: the agent's line fixes plus ruff's safe ones, kept only when ruff then reports fewer
findings than with its own safe fixes alone."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from runner_helpers import SAMPLE_PROJECT, run_embedded, scripted

from structured_agents.bundles import Bundle
from structured_agents.engines import GenerationRequest
from structured_agents.patches import apply_patches
from structured_agents.store import Store
from structured_agents.tasks.lint import apply_line_fixes
from structured_agents.tasks.ruff import ruff_codes, ruff_safe_fixes
from structured_agents.types import ToolCall


def _call(name: str, **arguments: object) -> Callable[[GenerationRequest], list[ToolCall]]:
    def turn(_request: GenerationRequest) -> list[ToolCall]:
        return [ToolCall(name, dict(arguments))]

    return turn


def _ruff(root: Path, path: str) -> list[str]:
    command = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", path]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    return [line for line in done.stdout.splitlines() if line.startswith(path)]


def test_fixes_that_do_no_better_than_ruff_are_dropped_for_ruffs_own(
    lint_bundle: Bundle, store: Store, project: Path
) -> None:
    engine = scripted(
        lint_bundle,
        _call("apply_fix", line=1, old="Code with", replacement="Code that has"),
        _call("submit_result"),
    )

    summary = run_embedded(lint_bundle, engine, store, project)

    [run] = store.list_runs(summary.batch_id)
    assert run.status == "succeeded"
    [result] = store.results(summary.batch_id)
    assert result.summary == (
        "ruff findings 2 -> 1 (E711); ruff's fixes only: "
        "the agent's fixes leave 1 finding(s), ruff's own fixes alone 1"
    )
    assert "-import os\n" in result.diff and "Code that has" not in result.diff


def test_fixes_remove_the_real_findings(lint_bundle: Bundle, store: Store, project: Path) -> None:
    assert len(_ruff(project, "lint_me.py")) == 2
    engine = scripted(
        lint_bundle,
        _call("apply_fix", line=3, old="import os", replacement=""),
        _call("apply_fix", line=10, old="== None", replacement="is None"),
        _call("submit_result"),
    )

    summary = run_embedded(lint_bundle, engine, store, project)

    assert (summary.discovered, summary.succeeded) == (1, 1)
    assert not filecmp.dircmp(SAMPLE_PROJECT, project).diff_files
    [result] = store.results(summary.batch_id)
    assert result.status == "proposed" and result.summary == "ruff findings 2 -> 0 (none left)"
    assert "-import os\n" in result.diff and "+    if email is None:\n" in result.diff
    assert apply_patches(project, [result]).run_ids("applied") == [result.run_id]
    assert _ruff(project, "lint_me.py") == []


def test_a_fix_that_breaks_the_file_is_rejected_and_the_job_fails(
    lint_bundle: Bundle, store: Store, project: Path
) -> None:
    target = project / "lint_me.py"
    target.write_text(target.read_text().replace("import os\n", ""))  # left: E711, no safe fix
    engine = scripted(
        lint_bundle,
        _call("apply_fix", line=9, old="email == None", replacement=""),
        _call("submit_result"),
    )

    summary = run_embedded(lint_bundle, engine, store, project)

    assert summary.failed == 1
    [run] = store.list_runs(summary.batch_id)
    assert run.error is not None
    assert run.error.startswith("rejected: the agent's fixes leave a file that is not valid Python")
    [result] = store.results(summary.batch_id)
    assert result.status == "rejected"
    assert "import os" not in target.read_text() and "email == None" in target.read_text()


def test_a_fix_of_text_not_on_the_line_is_refused_by_the_tool(
    lint_bundle: Bundle, store: Store, project: Path
) -> None:
    engine = scripted(
        lint_bundle,
        _call("apply_fix", line=4, old="import os", replacement=""),
        _call("apply_fix", line=3, old="import os", replacement=""),
        _call("submit_result"),
    )

    summary = run_embedded(lint_bundle, engine, store, project)

    assert summary.succeeded == 1
    [run] = store.list_runs(summary.batch_id)
    refused = store.tool_calls(run.id)[0]
    assert refused.is_error and "line 4 is 'import sys', which does not contain 'import os'" in refused.output
    assert store.results(summary.batch_id)[0].summary.startswith(
        "ruff findings 2 -> 1 (E711); ruff's fixes only"
    )


@pytest.mark.parametrize(
    ("fixes", "expected", "skipped"),
    [
        ([{"line": 1, "old": "import os", "new": ""}], "x = 1\n", 0),
        ([{"line": 2, "old": "1", "new": "2"}], "import os\nx = 2\n", 0),
        ([{"line": 2, "old": "x", "new": "y"}, {"line": 2, "old": "1", "new": "3"}], "import os\ny = 3\n", 0),
        ([{"line": 2, "old": "z", "new": "y"}, {"line": 9, "old": "x", "new": "y"}], "import os\nx = 1\n", 2),
        ([{"line": 1, "old": "os", "new": ""}], "import \nx = 1\n", 0),
    ],
)
def test_line_fixes(fixes: list[dict[str, object]], expected: str, skipped: int) -> None:
    report = apply_line_fixes("import os\nx = 1\n", fixes)

    assert report.text == expected
    assert len(report.skipped) == skipped


def test_ruff_safe_fixes_apply_only_what_ruff_calls_safe(project: Path) -> None:
    text = (project / "lint_me.py").read_text()

    fixed = ruff_safe_fixes(project, "lint_me.py", text)

    assert "import os\n" not in fixed and "email == None" in fixed  # F401 is safe, E711 is not
    assert ruff_codes(project, "lint_me.py", fixed) == ["E711"]
    assert ruff_safe_fixes(project, "lint_me.py", fixed) == fixed
    assert (project / "lint_me.py").read_text() == text  # nothing written


def test_ruff_reads_the_text_with_the_codebase_config(project: Path) -> None:
    text = (project / "lint_me.py").read_text()

    assert ruff_codes(project, "lint_me.py", text) == ["E711", "F401"]
    assert ruff_codes(project, "lint_me.py", text + "x = [\n") == ["invalid-syntax"]  # hides the rest
    long_line = "import os\nx = 'a long line, for a codebase that wants short ones'\n"
    assert ruff_codes(project, "lint_me.py", long_line) == ["F401"]
    (project / "ruff.toml").write_text('line-length = 20\n[lint]\nselect = ["F", "E501"]\n')
    assert ruff_codes(project, "lint_me.py", long_line) == ["E501", "F401"]
