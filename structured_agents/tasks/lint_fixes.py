"""What a lint job offers its agent, and the changes the agent makes, as edits of one text.

The text is the file after ruff's safe fixes (``ruff check --fix``): what ruff does alone is
done before the agent starts. Each finding ruff reports on it is a *candidate*: one with a fix
ruff will not apply alone (``unsafe``, or a safe one left over) has an id (1, 2... in line
order) and shows that fix as a small diff the agent accepts or rejects; one without a fix (id
None) names a line the agent may rewrite. A :class:`Change` is what the agent decided: an
accepted fix (ruff's own edits) or a rewritten line; changes are applied in order, and one
that overlaps an earlier one is left out.

Positions follow ruff's JSON output: rows and columns from 1, columns in characters.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from structured_agents.jobs.source import split_lines
from structured_agents.types import ToolSchema

__all__ = [
    "MAX_CANDIDATES",
    "Change",
    "apply_changes",
    "candidates",
    "fix_change",
    "line_change",
    "lint_tool_view",
]

MAX_CANDIDATES = 8
"""Findings one job offers (those with a fix first, then by line); the rest wait for a later run."""
_CONTEXT = 1
"""Lines shown above and below a finding."""
_DIFF_LINES = 8
"""Lines of a fix's diff shown to the agent."""

Edit = tuple[int, int, str]
"""Replace ``text[start:end]`` with the string."""
_CHOICES = {
    "accept_fix": ("id", "fix_ids"),
    "reject_fix": ("id", "fix_ids"),
    "replace_line": ("line", "edit_lines"),
}
"""Tool -> (its parameter, the job input listing the values it may take)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One change the agent made."""

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


def _apply(text: str, edits: Sequence[Edit]) -> str:
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text


def _overlaps(edit: Edit, taken: Sequence[Edit]) -> bool:
    start, end, _ = edit
    return any((start < t_end and t_start < end) or start == t_start for t_start, t_end, _ in taken)


def apply_changes(text: str, changes: Sequence[Change]) -> tuple[str, list[Change], list[Change]]:
    """``text`` with ``changes`` applied in order; the changes applied, and those left out
    because an edit overlaps one of an earlier change."""
    taken: list[Edit] = []
    applied: list[Change] = []
    overlapping: list[Change] = []
    for change in changes:
        if any(_overlaps(edit, taken) for edit in change.edits):
            overlapping.append(change)
            continue
        taken.extend(change.edits)
        applied.append(change)
    return _apply(text, taken), applied, overlapping


def _diff(text: str, edits: Sequence[Edit]) -> str:
    """The lines the edits change, as ``-``/``+`` lines (at most :data:`_DIFF_LINES`)."""
    before, after = split_lines(text), split_lines(_apply(text, edits))
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


def candidates(text: str, diagnostics: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The candidates of ``diagnostics`` (ruff's JSON findings on ``text``) a job offers."""
    lines = split_lines(text)
    found = []
    for raw in diagnostics:
        fix = raw.get("fix")
        usable = isinstance(fix, Mapping) and fix.get("applicability") in ("safe", "unsafe")
        edits = _edits(text, fix) if usable and isinstance(fix, Mapping) else ()
        diff = _diff(text, edits) if edits else ""
        line = int((raw.get("location") or {}).get("row", 1))
        finding: dict[str, Any] = {
            "code": str(raw.get("code") or "syntax-error"),
            "message": str(raw.get("message", "")),
            "line": line,
            "context": _context(lines, line) if lines else "",
            "fix": {"message": str(fix.get("message") or ""), "edits": [list(e) for e in edits], "diff": diff}
            if diff and isinstance(fix, Mapping)
            else None,
        }
        found.append(finding)
    found.sort(key=lambda f: (f["fix"] is None, f["line"], f["code"]))
    offered = sorted(found[:MAX_CANDIDATES], key=lambda f: (f["line"], f["code"]))
    fixes = iter(range(1, len(offered) + 1))
    return [{"id": next(fixes) if f["fix"] is not None else None, **f} for f in offered]


def fix_change(candidate: Mapping[str, Any]) -> Change | None:
    """The change of accepting ``candidate``'s fix (None when it has none)."""
    fix = candidate.get("fix")
    if not isinstance(fix, Mapping):
        return None
    edits = tuple((int(s), int(e), str(c)) for s, e, c in fix.get("edits") or ())
    return Change(f"{candidate.get('code')} line {candidate.get('line')}", edits) if edits else None


def line_change(text: str, number: int, new: str, code: str) -> Change | None:
    """The change of line ``number`` of ``text`` to ``new`` (keeping the line's indentation
    when ``new`` has none; empty: the line goes); None when there is no such line."""
    lines = split_lines(text)
    if not 1 <= number <= len(lines):
        return None
    starts = _line_starts(text)
    line = lines[number - 1]
    body = line.rstrip("\r\n")
    start = starts[number - 1]
    if not new.strip():
        return Change(f"{code} line {number}", ((start, start + len(line), ""),))
    indent = body[: len(body) - len(body.lstrip())]
    replacement = new if new[:1].isspace() else indent + new
    return Change(f"{code} line {number}", ((start, start + len(body), replacement.rstrip("\r\n")),))


def lint_tool_view(tools: Sequence[ToolSchema], inputs: Mapping[str, Any]) -> list[ToolSchema]:
    """The tools as a lint job's run sees them (``KernelConfig.tool_view``): ``accept_fix`` and
    ``reject_fix`` take one of the job's fix ids, ``replace_line`` one of its lines without a fix
    (each parameter's ``enum``, so the grammar admits only those); a tool with none to take is
    not offered."""
    seen = []
    for tool in tools:
        if tool.name not in _CHOICES:
            seen.append(tool)
            continue
        parameter, source = _CHOICES[tool.name]
        values = [v for v in inputs.get(source) or () if isinstance(v, int)]
        if not values or parameter not in tool.properties:
            continue
        properties = {**tool.properties, parameter: {**tool.properties[parameter], "enum": values}}
        seen.append(dataclasses.replace(tool, parameters={**tool.parameters, "properties": properties}))
    return seen
