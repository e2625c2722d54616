"""What a lint job offers its agent, and the changes it decides, as edits of one text.

The text is the file after ruff's safe fixes (``ruff check --fix``): what ruff does alone is
done before the agent starts. Each finding ruff reports on it with a fix ruff will not apply
alone (``unsafe``, a safe one left over, or a candidate of
:mod:`~structured_agents.tasks.lint_rewrites` for a finding ruff has no fix for) is a
*candidate*: it has an id (1, 2... in line order) and shows that fix as a small diff the agent
accepts or rejects. A :class:`Change` is one such fix; changes are applied in order, and one
that overlaps an earlier one is left out (an edit identical to one already applied, such as
the same import added twice, is shared).

The agent decides one candidate a turn, in order (:func:`lint_tool_view`): each fix, then the
submission; a small model that may name any id at any turn decided one fix twice, the second
time the other way.

Positions follow ruff's JSON output: rows and columns from 1, columns in characters.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from structured_agents.jobs.source import split_lines
from structured_agents.types import ToolResult, ToolSchema

__all__ = [
    "MAX_CANDIDATES",
    "Change",
    "apply_changes",
    "apply_edits",
    "candidates",
    "decisions",
    "fix_change",
    "fix_edits",
    "fixes",
    "lint_tool_view",
]

MAX_CANDIDATES = 8
"""Fixes one job offers its agent (by line); the rest wait for a later run, and count as staying
for the idiom rules (:mod:`~structured_agents.tasks.lint_idioms`): lark 1.1.9's one ``%`` format
made an f-string among the thirty its job did not show was sent back as churn."""
_CONTEXT = 1
"""Lines shown above and below a finding."""
_DIFF_LINES = 8
"""Lines of a fix's diff shown to the agent."""

Edit = tuple[int, int, str]
"""Replace ``text[start:end]`` with the string."""
_FIX_TOOLS = ("accept_fix", "reject_fix")
"""The tools that decide a fix, by its ``id``."""


@dataclass(frozen=True, slots=True)
class Change:
    """One fix to apply."""

    label: str
    """What it is, for summaries: ``F841 line 6`` (the finding and its line)."""
    edits: tuple[Edit, ...]
    """Its edits of the text, by character offset."""


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for line in split_lines(text):
        starts.append(starts[-1] + len(line))
    return starts


def _offset(starts: list[int], text: str, location: Mapping[str, Any]) -> int:
    """The character offset of a ruff location (row and column from 1) in ``text``."""
    row, column = int(location.get("row", 1)), int(location.get("column", 1))
    if row > len(starts) - 1:
        return len(text)
    return min(starts[row - 1] + column - 1, starts[row], len(text))


def _edits(text: str, fix: Mapping[str, Any]) -> tuple[Edit, ...]:
    starts = _line_starts(text)
    return tuple(
        (
            _offset(starts, text, edit.get("location") or {}),
            _offset(starts, text, edit.get("end_location") or {}),
            str(edit.get("content") or ""),
        )
        for edit in fix.get("edits") or ()
    )


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with ``edits`` (by character offset, not overlapping) applied."""
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text


def _overlaps(edit: Edit, taken: Sequence[Edit]) -> bool:
    start, end, _ = edit
    return any((start < t_end and t_start < end) or start == t_start for t_start, t_end, _ in taken)


def apply_changes(text: str, changes: Sequence[Change]) -> tuple[str, list[Change], list[Change]]:
    """``text`` with ``changes`` applied in order; the changes applied, and those left out
    because an edit overlaps one of an earlier change (an identical edit is applied once)."""
    taken: list[Edit] = []
    applied: list[Change] = []
    overlapping: list[Change] = []
    for change in changes:
        new = [edit for edit in change.edits if edit not in taken]  # an identical edit is shared
        if any(_overlaps(edit, taken) for edit in new):
            overlapping.append(change)
            continue
        taken.extend(new)
        applied.append(change)
    return apply_edits(text, taken), applied, overlapping


def _diff(text: str, edits: Sequence[Edit]) -> str:
    """The lines the edits change, as ``-``/``+`` lines (at most :data:`_DIFF_LINES`)."""
    before, after = split_lines(text), split_lines(apply_edits(text, edits))
    lines = [
        line.rstrip("\r\n")
        for line in difflib.unified_diff(before, after, n=0, lineterm="")
        if line[:1] in "-+" and not line.startswith(("---", "+++"))
    ]
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES} more lines)"]
    return "\n".join(lines)


def _context(lines: list[str], line: int) -> str:
    first, last = max(1, line - _CONTEXT), min(len(lines), line + _CONTEXT)
    width = len(str(last))
    return "\n".join(
        f"{'>' if number == line else ' '} {number:>{width}} | {lines[number - 1].rstrip(chr(13) + chr(10))}"
        for number in range(first, last + 1)
    )


def fix_edits(text: str, raw: Mapping[str, Any]) -> tuple[Edit, ...]:
    """The edits of a finding's fix (ruff's ``safe`` or ``unsafe`` one; none when display-only)."""
    fix = raw.get("fix")
    usable = isinstance(fix, Mapping) and fix.get("applicability") in ("safe", "unsafe")
    return _edits(text, fix) if usable and isinstance(fix, Mapping) else ()


def fixes(text: str, diagnostics: Sequence[Mapping[str, Any]]) -> list[Change]:
    """Every fix of ``diagnostics`` (ruff's JSON findings on ``text``), as a change, in the
    order of their findings' lines (a fix several findings share, once); the fixes of one line
    keep their given order, so of two forms of one candidate (B904's ``from err`` and
    ``from None``) the preferred comes first and is the one kept where both hold."""
    found = []
    seen: set[tuple[Edit, ...]] = set()
    for raw in diagnostics:
        edits = fix_edits(text, raw)
        if edits and edits not in seen:  # findings sharing one fix (a file's star imports): one change
            seen.add(edits)
            line = int((raw.get("location") or {}).get("row", 1))
            found.append((line, Change(f"{raw.get('code') or 'syntax-error'} line {line}", edits)))
    return [change for _, change in sorted(found, key=lambda item: item[0])]


def candidates(text: str, diagnostics: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The candidates a job offers: the fixes of ``diagnostics`` (ruff-shaped findings on
    ``text``), at most :data:`MAX_CANDIDATES`, by line, each with its id, finding, context and
    diff."""
    lines = split_lines(text)
    found = []
    for raw in diagnostics:
        fix = raw.get("fix")
        edits = fix_edits(text, raw)
        diff = _diff(text, edits) if edits else ""
        if not diff or not isinstance(fix, Mapping):
            continue
        line = int((raw.get("location") or {}).get("row", 1))
        found.append(
            {
                "code": str(raw.get("code") or "syntax-error"),
                "message": str(raw.get("message", "")),
                "line": line,
                "context": _context(lines, line) if lines else "",
                "fix": {
                    "message": str(fix.get("message") or ""),
                    "edits": [list(edit) for edit in edits],
                    "diff": diff,
                },
            }
        )
    offered = sorted(found, key=lambda f: (f["line"], f["code"]))[:MAX_CANDIDATES]
    return [{"id": number, **finding} for number, finding in enumerate(offered, start=1)]


def fix_change(candidate: Mapping[str, Any]) -> Change | None:
    """The change of accepting ``candidate``'s fix (None when it has none)."""
    fix = candidate.get("fix")
    if not isinstance(fix, Mapping):
        return None
    edits = tuple((int(s), int(e), str(c)) for s, e, c in fix.get("edits") or ())
    return Change(f"{candidate.get('code')} line {candidate.get('line')}", edits) if edits else None


def decisions(results: Sequence[ToolResult]) -> dict[int, bool]:
    """What a run's successful tool results decided: each fix id -> accepted; the last
    decision about each counts. ValueError for a decision tool whose output is not JSON."""
    decided: dict[int, bool] = {}
    for result in results:
        if result.is_error or result.name not in _FIX_TOOLS:
            continue
        try:
            output = json.loads(result.output)
        except ValueError as exc:
            raise ValueError(f"{result.name} returned no JSON: {result.output[:200]!r}") from exc
        if "accepted" in output or "rejected" in output:
            decided[int(output.get("accepted", output.get("rejected")))] = "accepted" in output
    return decided


def _narrowed(tool: ToolSchema, value: int) -> ToolSchema | None:
    if "id" not in tool.properties:
        return None
    properties = {**tool.properties, "id": {**tool.properties["id"], "enum": [value]}}
    return dataclasses.replace(tool, parameters={**tool.parameters, "properties": properties})


def _pending(inputs: Mapping[str, Any], results: Sequence[ToolResult]) -> int | None:
    """The fix id a run decides next: the first not yet decided, or None."""
    decided = decisions(results)
    return next((i for i in inputs.get("fix_ids") or () if isinstance(i, int) and i not in decided), None)


def lint_tool_view(
    tools: Sequence[ToolSchema], inputs: Mapping[str, Any], results: Sequence[ToolResult] = ()
) -> list[ToolSchema]:
    """The tools as a lint job's run sees them at its next turn (``KernelConfig.tool_view``):
    the first fix not yet decided (``accept_fix``/``reject_fix``, its ``id`` an enum of that one
    id), else the other tools (``submit_result``): the grammar admits only those, so no run
    submits with a decision pending (the kernel still offers ``submit_result`` on a run's
    forced last turn, when its budget is spent)."""
    fix = _pending(inputs, results)
    seen = []
    for tool in tools:
        if tool.name in _FIX_TOOLS:
            narrowed = _narrowed(tool, fix) if fix is not None else None
        else:
            narrowed = tool if fix is None else None  # submit_result: once every decision is made
        if narrowed is not None:
            seen.append(narrowed)
    return seen
