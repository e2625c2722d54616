"""The report's tables: every row fits 100 columns, and the ``all`` row pools the packages."""

from __future__ import annotations

import io

from rich.console import Console

from structured_agents.evaluation import DocstringPackageResult, DocstringTargetResult, EvalReport
from structured_agents.evaluation.package_tests import TestsOutcome
from structured_agents.evaluation.params import ParameterCheck
from structured_agents.evaluation.results import LintPackageResult
from structured_agents.evaluation.tables import WIDTH, render_report


def _target(
    written: str | None,
    leaked: tuple[str, ...] = (),
    failure: str | None = None,
    flags: tuple[str, ...] = (),
    cut_off: int = 0,
) -> DocstringTargetResult:
    check = ParameterCheck(entries=2, entries_real=1, real=2, real_documented=1)
    return DocstringTargetResult(
        path="pkg/mod.py",
        qualname="f",
        kind="function",
        original="Do it.",
        written=written,
        failure=failure,
        error=failure,
        copy_refusals=int(failure == "copy refused"),
        duration_s=1.0,
        rouge_l=0.5 if written else None,
        leaked=leaked,
        parameters=check if written else None,
        original_parameters=ParameterCheck(entries=2, entries_real=2, real=2, real_documented=2),
        flags=flags,
        cut_off=cut_off,
    )


def _report(packages: tuple[DocstringPackageResult | LintPackageResult, ...], task: str) -> EvalReport:
    return EvalReport(
        task=task,
        bundle=f"{task} 1.0",
        bundle_path="bundles/x/bundle.yaml",
        engine="transformers (default model)",
        tool_version="ruff 0.0.0",
        limit=None,
        concurrency=8,
        engine_load_s=4.0,
        packages=packages,
        wall_s=60.0,
    )


def _render(report: EvalReport) -> str:
    console = Console(width=WIDTH, record=True, file=io.StringIO())
    console.print(render_report(report))
    return console.export_text()


def test_docstring_rows_fit_and_the_all_row_pools_every_target() -> None:
    one = DocstringPackageResult(
        "a-package-with-a-rather-long-name==2024.10.1",
        3,
        4,
        (
            _target("Do it."),
            _target("Push it.", ("push",), flags=("unknown-words: says push, found nowhere",), cut_off=1),
            _target(None, failure="copy refused"),
        ),
        30.0,
    )
    two = DocstringPackageResult(
        "b==1.0", 1, 1, (_target(None, failure="the agent did not submit a result"),), 10.0
    )

    text = _render(_report((one, two), "docstring"))

    assert max(len(line) for line in text.splitlines()) <= WIDTH
    [all_row] = [line for line in text.splitlines() if line.startswith("all ")]
    assert all_row.split() == [
        "all", "4/5", "50%", "25%", "50%", "2", "1", "1", "0.50", "50%", "50%", "50%/100%", "40", "10.0"
    ]  # fmt: skip
    assert "flagged for review, by reason: unknown-words ×1" in text
    assert "copy refused ×1" in text and "the agent did not submit a result ×1" in text
    assert "most leaked words: push ×1" in text


def test_lint_rows_show_findings_at_each_stage_and_the_tests() -> None:
    package = LintPackageResult(
        package="inflection==0.5.1",
        ruff_config="fixed",
        candidates=2,
        files=("inflection/__init__.py",),
        before=70,
        ruff_only=20,
        agent=19,
        same_as_ruff=0,
        jobs=(),
        tests_before=TestsOutcome("ran", passed=455),
        tests_ruff=TestsOutcome("ran", passed=455),
        tests_agent=TestsOutcome("ran", passed=450, failed=5),
        wall_s=100.0,
        target="Python 3.6+ (requires-python >=3.6 in setup.py; ruff: py37)",
        interpreter="python3.6",
        breaks_ruff=("inflection/__init__.py: Missing `from __future__ import annotations`",),
    )
    cannot = LintPackageResult(
        package="needs-more==1.0",
        ruff_config="own",
        candidates=1,
        files=("x.py",),
        before=1,
        ruff_only=1,
        agent=1,
        same_as_ruff=1,
        jobs=(),
        tests_before=TestsOutcome("cannot run", detail="pytest exit 4"),
        tests_ruff=None,
        tests_agent=None,
        wall_s=5.0,
    )

    text = _render(_report((package, cannot), "lint"))

    assert max(len(line) for line in text.splitlines()) <= WIDTH
    row = next(line for line in text.splitlines() if line.startswith("inflection"))
    cells = row.split()[1:12]
    assert cells == ["fixed", "3.6", "1/0", "1/2", "70", "20", "19", "0", "455/0", "455/0", "450/5"]
    words = " ".join(text.split())  # the line wraps
    assert "breaks the lowest supported Python (compiled: inflection==0.5.1 with python3.6): " in words
    assert "inflection==0.5.1 ruff: inflection/__init__.py: Missing" in words
    assert "cannot run" in next(line for line in text.splitlines() if line.startswith("needs-more"))
