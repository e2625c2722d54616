"""Per-task result handlers: a finished run becomes a proposed change (a unified diff).

A handler reads the target file, refuses it when it changed since discovery (its hash is not
the job's), builds the new text from the run's output and returns an :class:`Outcome`. It never
writes the user's files: the diff is stored, and ``sa apply`` applies it later.

``docstring``
    The termination tool's output is ``{"docstring": TEXT}``; the docstring is set on the
    target with libcst, and the new module must differ from the old one only in docstrings.
``lint``
    Every successful ``apply_fix`` result is a line fix (see :mod:`.lint_fixes`); the fixes
    ruff itself calls safe (``ruff check --fix``: an unused import...) go on top. The agent's
    fixes are kept when the result parses and ruff then reports fewer findings than with its own
    safe fixes alone (ruff reports nothing but the syntax error of a file that does not parse,
    hence the parse check). Otherwise ruff's safe fixes alone are the result, when they remove
    a finding; when they do not either, the proposal is kept as a *rejected* result and the job
    fails.
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
from structured_agents.runner.lint_fixes import FixReport, apply_line_fixes, ruff_codes, ruff_safe_fixes
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
        errors = [r for r in result.tool_results if r.is_error]
        last = f"; last tool error: {errors[-1].output[-300:]}" if errors else ""
        raise TaskError(f"the agent did not submit a result (the run ended by {result.termination}{last})")
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
    """The lint task: the agent's line fixes and ruff's safe fixes, kept if ruff then finds less."""
    _submitted(result)
    fixes = []
    for tool_result in result.tool_results:
        if tool_result.name == "apply_fix" and not tool_result.is_error:
            try:
                fixes.append(json.loads(tool_result.output))
            except ValueError as exc:
                raise TaskError(f"apply_fix returned no JSON: {tool_result.output[:200]!r}") from exc
    original = _original(run, root)
    report = apply_line_fixes(original, fixes)
    path = run.target_path
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
