"""Per-task result handlers: a finished run becomes a proposed change (a unified diff).

A handler reads the target file, refuses it when it changed since discovery (its hash is not
the job's), builds the new text from the run's output and returns an :class:`Outcome`. It never
writes the user's files: the diff is stored, and ``sa apply`` applies it later.

``docstring``
    The termination tool's output is ``{"docstring": TEXT}``; the docstring is set on the
    target with libcst, and the new module must differ from the old one only in docstrings.
``lint``
    Every successful ``apply_fix`` result is a line fix (see :mod:`.lint_fixes`); the fixed
    text must parse and is accepted only when ruff reports fewer findings than before (ruff
    reports nothing but the syntax error of a file that does not parse, hence the parse check).
    A proposal that fails either check is kept as a *rejected* result and the job fails.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from structured_agents.jobs.ids import source_hash
from structured_agents.kernel import RunResult
from structured_agents.patches import PatchError, ProposedChange, docstring_change, file_change
from structured_agents.runner.errors import TaskError
from structured_agents.runner.lint_fixes import apply_line_fixes, ruff_codes
from structured_agents.store import ResultStatus, RunRecord

__all__ = ["HANDLERS", "Outcome", "ResultHandler", "code_without_docstrings", "handler_for", "run_handler"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a finished run produced."""

    succeeded: bool
    """Whether the job succeeded."""
    change: ProposedChange | None = None
    """The proposed change, when there is one to store."""
    summary: str = ""
    """One line for ``sa diff`` and the store."""
    error: str | None = None
    """Why the job failed."""
    result_status: ResultStatus = "proposed"
    """How the change is stored: ``proposed``, or ``rejected`` when kept only to be looked at."""


ResultHandler = Callable[[RunRecord, RunResult, Path], Outcome]
"""``handler(run, result, root)``: raises :class:`TaskError` (or ``PatchError``) to fail the job."""


def _original(run: RunRecord, root: Path) -> str:
    """The target file's text, which must still be what discovery read."""
    target = root / run.target_path
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise TaskError(f"cannot read {run.target_path}: {exc.strerror or exc}") from exc
    if source_hash(data) != run.source_hash:
        raise TaskError(f"{run.target_path} changed since the job was discovered; run again to redo it")
    return data.decode("utf-8")


def _submitted(result: RunResult) -> str:
    if result.termination != "termination_tool" or result.final_output is None:
        raise TaskError(f"the agent did not submit a result (the run ended by {result.termination})")
    return result.final_output


def code_without_docstrings(text: str) -> str:
    """``ast.dump`` of a module with every module, class and function docstring removed."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def docstring_outcome(run: RunRecord, result: RunResult, root: Path) -> Outcome:
    """The docstring task: set the submitted docstring on the target."""
    try:
        docstring = json.loads(_submitted(result))["docstring"]
    except (ValueError, KeyError, TypeError) as exc:
        raise TaskError(f"the submission is not {{'docstring': TEXT}}: {exc}") from exc
    if not isinstance(docstring, str) or not docstring.strip():
        raise TaskError("the submitted docstring is empty")
    original = _original(run, root)
    line = run.inputs.get("def_line")
    change = docstring_change(
        run.target_path, original, run.qualname, docstring, line=line if isinstance(line, int) else None
    )
    if code_without_docstrings(change.new_text) != code_without_docstrings(original):
        raise TaskError("the change would alter code, not only the docstring")
    return Outcome(True, change, summary=docstring.strip().splitlines()[0][:200])


def lint_outcome(run: RunRecord, result: RunResult, root: Path) -> Outcome:
    """The lint task: apply the proposed line fixes and keep them if ruff finds less."""
    _submitted(result)
    fixes = []
    for tool_result in result.tool_results:
        if tool_result.name == "apply_fix" and not tool_result.is_error:
            try:
                fixes.append(json.loads(tool_result.output))
            except ValueError as exc:
                raise TaskError(f"apply_fix returned no JSON: {tool_result.output[:200]!r}") from exc
    if not fixes:
        raise TaskError("the agent proposed no fix")
    original = _original(run, root)
    report = apply_line_fixes(original, fixes)
    if report.text == original:
        raise TaskError(f"no proposed fix changes the file ({'; '.join(report.skipped) or 'no-op fixes'})")
    before, after = (
        ruff_codes(root, run.target_path, original),
        ruff_codes(root, run.target_path, report.text),
    )
    change = file_change(run.target_path, original, report.text)
    summary = f"ruff findings {len(before)} -> {len(after)} ({', '.join(after) or 'none left'})"
    error = None
    try:
        ast.parse(report.text)
    except (SyntaxError, ValueError) as exc:
        error = f"rejected: the fixed file is not valid Python ({exc})"
    if error is None and len(after) >= len(before):
        error = f"rejected: ruff reports {len(after)} finding(s) after the fixes, {len(before)} before"
    if error is not None:
        return Outcome(False, change, summary, error=error, result_status="rejected")
    return Outcome(True, change, summary)


HANDLERS: dict[str, ResultHandler] = {"docstring": docstring_outcome, "lint": lint_outcome}
"""Result handlers by task (``BundleManifest.task``)."""


def handler_for(task: str | None) -> ResultHandler:
    """The handler of ``task``; TaskError naming the known tasks."""
    handler = HANDLERS.get(task or "")
    if handler is None:
        raise TaskError(f"no result handler for task {task!r}; known tasks: {', '.join(sorted(HANDLERS))}")
    return handler


def run_handler(handler: ResultHandler, run: RunRecord, result: RunResult, root: Path) -> Outcome:
    """``handler(run, result, root)`` with its TaskError/PatchError as a failed outcome."""
    try:
        return handler(run, result, root)
    except (TaskError, PatchError) as exc:
        return Outcome(False, error=str(exc))
