"""The ``lint`` task: for each file with ruff findings, the agent's line fixes plus ruff's own.

Discovery: one job per Python file with findings, carrying its source and findings.

A proposal is ``{"line": N, "old": TEXT, "new": TEXT}`` (an ``apply_fix`` result): replace the
first ``old`` on line ``N`` of the file as the job read it (1-based) with ``new``. A fix whose
``old`` was the line's whole text and whose ``new`` is empty deletes the line (an unused import
goes away instead of leaving a blank line). Several fixes of one line apply in order; a fix
whose ``old`` is no longer on its line is skipped and reported.

Outcome: the agent's fixes, then the fixes ruff itself calls safe (``ruff check --fix``: an
unused import...) on top. They are kept when the result parses and ruff then reports fewer
findings than with its own safe fixes alone (ruff reports nothing but the syntax error of a
file that does not parse, hence the parse check). Otherwise ruff's safe fixes alone are the
result, when they remove a finding; when they do not either, the proposal is kept as a
*rejected* result and the job fails.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structured_agents.jobs.ids import job_id
from structured_agents.jobs.source import read_source, split_lines
from structured_agents.jobs.spec import JobSpec
from structured_agents.jobs.walk import iter_source_files
from structured_agents.kernel.result import RunResult
from structured_agents.patches import file_change
from structured_agents.tasks.base import read_target, submission
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.protocol import Guidance, Outcome
from structured_agents.tasks.ruff import ruff_codes, ruff_findings, ruff_safe_fixes

__all__ = ["LINT_KIND", "MODULE_QUALNAME", "FixReport", "LintTask", "apply_line_fixes", "discover_lint_jobs"]

LINT_KIND = "lint"
MODULE_QUALNAME = "<module>"
"""The qualified name of whole-file jobs."""
_SAMPLE_FINDING = {
    "code": "F401",
    "message": "`os` imported but unused",
    "line": 1,
    "column": 8,
    "end_line": 1,
    "end_column": 10,
    "fixable": True,
}


def discover_lint_jobs(root: Path) -> list[JobSpec]:
    """One job per file with findings; the job's inputs hold the file's source and findings."""
    files = [path.as_posix() for path in iter_source_files(root)]
    jobs = []
    for path, findings in sorted(ruff_findings(root, files).items()):
        source = read_source(root / path)
        if source is None:
            continue
        jobs.append(
            JobSpec(
                job_id=job_id(LINT_KIND, path, MODULE_QUALNAME, source.text),
                kind=LINT_KIND,
                path=path,
                qualname=MODULE_QUALNAME,
                source_hash=source.hash,
                inputs={"path": path, "source": source.text, "findings": findings},
            )
        )
    return jobs


@dataclass(frozen=True, slots=True)
class FixReport:
    """What :func:`apply_line_fixes` did."""

    text: str
    """The fixed text."""
    applied: tuple[Mapping[str, Any], ...]
    """The fixes that changed the text, in order."""
    skipped: tuple[str, ...]
    """Why each other fix was left out."""


def _line_ending(line: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return ending
    return ""


def apply_line_fixes(original: str, fixes: Sequence[Mapping[str, Any]]) -> FixReport:
    """Apply ``fixes`` (see the module docstring) to ``original``."""
    lines: list[str | None] = list(split_lines(original))
    applied: list[Mapping[str, Any]] = []
    skipped: list[str] = []
    for fix in fixes:
        number, old, new = fix.get("line"), str(fix.get("old", "")), str(fix.get("new", ""))
        if not isinstance(number, int) or not 1 <= number <= len(lines) or not old:
            skipped.append(f"fix {dict(fix)}: no such line, or nothing to replace")
            continue
        line = lines[number - 1]
        if line is None or old not in line:
            skipped.append(f"line {number}: {old!r} is not on the line (any more)")
            continue
        ending = _line_ending(line)
        body = line[: len(line) - len(ending)]
        changed = body.replace(old, new, 1)
        lines[number - 1] = None if not changed.strip() and old.strip() == body.strip() else changed + ending
        applied.append(fix)
    return FixReport("".join(line for line in lines if line is not None), tuple(applied), tuple(skipped))


class LintTask:
    """The ``lint`` task (see the module docstring)."""

    name = LINT_KIND
    option_names: frozenset[str] = frozenset()

    def discover(self, root: Path, *, overwrite: bool = False) -> list[JobSpec]:
        """One job per file with findings (``overwrite`` changes nothing: findings are the work)."""
        return discover_lint_jobs(root)

    def sample_inputs(self) -> dict[str, Any]:
        """The inputs of a job for a file with one unused import."""
        return {"path": "pkg/module.py", "source": "import os\n", "findings": [dict(_SAMPLE_FINDING)]}

    def guidance(self, termination: str, fixed_texts: Sequence[str]) -> Guidance:
        """No steering: every job sees the tools as they are."""
        return Guidance()

    def outcome(self, job: JobSpec, result: RunResult, root: Path, options: Mapping[str, Any]) -> Outcome:
        """The agent's line fixes and ruff's safe fixes, kept if ruff then finds less."""
        submission(result)
        fixes = []
        for tool_result in result.tool_results:
            if tool_result.name == "apply_fix" and not tool_result.is_error:
                try:
                    fixes.append(json.loads(tool_result.output))
                except ValueError as exc:
                    raise TaskError(f"apply_fix returned no JSON: {tool_result.output[:200]!r}") from exc
        original = read_target(job, root)
        report = apply_line_fixes(original, fixes)
        path = job.path
        before = ruff_codes(root, path, original)
        by_ruff = ruff_safe_fixes(root, path, original)
        left_by_ruff = ruff_codes(root, path, by_ruff)
        if report.text == original:  # the agent changed nothing: ruff alone, already checked
            proposed, left = by_ruff, left_by_ruff
        else:
            proposed = ruff_safe_fixes(root, path, report.text)
            left = ruff_codes(root, path, proposed)
        problem = _lint_problem(original, report, proposed, left, left_by_ruff)
        if problem is None:  # the agent's fixes do better than ruff alone
            return Outcome(True, file_change(path, original, proposed), _lint_summary(before, left))
        if len(left_by_ruff) < len(before):  # ruff's own fixes alone, the agent's dropped
            summary = f"{_lint_summary(before, left_by_ruff)}; ruff's fixes only: the agent's {problem}"
            return Outcome(True, file_change(path, original, by_ruff), summary)
        if proposed == original:
            raise TaskError(f"nothing changes the file: the agent's {problem}")
        change = file_change(path, original, proposed)
        error = f"rejected: the agent's {problem}"
        return Outcome(False, change, _lint_summary(before, left), error=error, result_status="rejected")


def _lint_problem(
    original: str, report: FixReport, proposed: str, left: list[str], left_by_ruff: list[str]
) -> str | None:
    """Why the agent's fixes (``report``, then ruff's, giving ``proposed``) are not kept, or None."""
    if report.text == original:
        return f"fixes change nothing ({'; '.join(report.skipped) or 'none proposed'})"
    try:
        ast.parse(proposed)
    except (SyntaxError, ValueError) as exc:
        return f"fixes leave a file that is not valid Python ({exc})"
    if len(left) >= len(left_by_ruff):
        return f"fixes leave {len(left)} finding(s), ruff's own fixes alone {len(left_by_ruff)}"
    return None


def _lint_summary(before: list[str], after: list[str]) -> str:
    return f"ruff findings {len(before)} -> {len(after)} ({', '.join(after) or 'none left'})"
