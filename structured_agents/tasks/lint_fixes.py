"""What a lint job offers its agent, and the changes the agent makes, as edits of one text.

The text is the file after ruff's safe fixes (``ruff check --fix``): what ruff does alone is
done before the agent starts. Each finding ruff reports on it is a *candidate*: one with a fix
ruff will not apply alone (``unsafe``, or a safe one left over) has an id (1, 2... in line
order) and shows that fix as a small diff the agent accepts or rejects; one without a fix (id
None) names a line the agent may rewrite or skip. A :class:`Change` is what the agent
decided: an accepted fix (ruff's own edits) or a rewritten line; changes are applied in order,
and one that overlaps an earlier one is left out.

The agent decides one candidate a turn, in order (:func:`lint_tool_view`): each fix, then each
line, then the submission; a small model that may name any id at any turn decided one fix
twice, the second time the other way, and wrote one worked example's line over a ``return``.

Positions follow ruff's JSON output: rows and columns from 1, columns in characters.
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import json
import re
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from structured_agents.jobs.source import split_lines
from structured_agents.types import ToolResult, ToolSchema

__all__ = [
    "LINE_TRIES",
    "MAX_CANDIDATES",
    "Change",
    "apply_changes",
    "candidates",
    "decisions",
    "fix_change",
    "fixes",
    "line_change",
    "lint_tool_view",
]

MAX_CANDIDATES = 8
"""Findings one job offers (those with a fix first, then by line); the rest wait for a later run."""
_CONTEXT = 1
"""Lines shown above and below a finding."""
_DIFF_LINES = 8
"""Lines of a fix's diff shown to the agent."""
LINE_TRIES = 2
"""Refused rewrites of one line after which the run moves on to the next decision."""

Edit = tuple[int, int, str]
"""Replace ``text[start:end]`` with the string."""
_FIX_TOOLS = ("accept_fix", "reject_fix")
"""The tools that decide a fix, by its ``id``."""
_LINE_TOOLS = ("replace_line", "skip_line")
"""The tools that decide a line without a fix, by its ``line``."""
_FIRST_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LINE_TEXT = "[^<\n]*"
"""The rest of a rewritten line: one line, and no ``<`` (call markup cannot stand in it). A line
that holds a ``<`` (``n < 3``) gets ``[^\n]*``, which FunctionGemma's grammar reads as any string
(its call markers kept out): ``replace_line`` refuses more than one line."""
_QUOTED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")
"""A name a finding's message quotes (``Undefined name `reslt```): the fix may change it."""


@dataclass(frozen=True, slots=True)
class Change:
    """One change the agent made."""

    label: str
    """What it is, for summaries: ``F841 line 6`` (the finding and its line)."""
    edits: tuple[Edit, ...]
    """Its edits of the text, by character offset."""
    rewrite: bool = False
    """A line the agent wrote (not a fix of ruff's)."""


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


def _code_names(text: str) -> dict[int, list[str]]:
    """The names each line's code uses (not its strings or comments), by line number; none
    when the text does not tokenize."""
    names: dict[int, list[str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NAME and token.string not in names.setdefault(token.start[0], []):
                names[token.start[0]].append(token.string)
    except (tokenize.TokenError, SyntaxError):
        return {}
    return names


def _fix_edits(text: str, raw: Mapping[str, Any]) -> tuple[Edit, ...]:
    """The edits of a finding's fix (ruff's ``safe`` or ``unsafe`` one; none when display-only)."""
    fix = raw.get("fix")
    usable = isinstance(fix, Mapping) and fix.get("applicability") in ("safe", "unsafe")
    return _edits(text, fix) if usable and isinstance(fix, Mapping) else ()


def fixes(text: str, diagnostics: Sequence[Mapping[str, Any]]) -> list[Change]:
    """Every fix of ``diagnostics`` (ruff's JSON findings on ``text``), as a change, in line order."""
    found = []
    for raw in diagnostics:
        edits = _fix_edits(text, raw)
        if edits:
            line = int((raw.get("location") or {}).get("row", 1))
            found.append(Change(f"{raw.get('code') or 'syntax-error'} line {line}", edits))
    return sorted(found, key=lambda change: min(start for start, _, _ in change.edits))


def candidates(
    text: str, diagnostics: Sequence[Mapping[str, Any]], *, with_fixes: bool = True
) -> list[dict[str, Any]]:
    """The candidates of ``diagnostics`` (ruff's JSON findings on ``text``) a job offers (only
    those without a fix unless ``with_fixes``); one without a fix carries the ``names`` its
    line's code uses that its message does not quote (what a rewrite of the line must keep)."""
    lines = split_lines(text)
    code_names = _code_names(text)
    found = []
    for raw in diagnostics:
        fix = raw.get("fix")
        edits = _fix_edits(text, raw)
        if edits and not with_fixes:
            continue
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
        if finding["fix"] is None:
            quoted = set(_QUOTED.findall(finding["message"]))
            finding["names"] = [name for name in code_names.get(line, []) if name not in quoted]
        found.append(finding)
    found.sort(key=lambda f: (f["fix"] is None, f["line"], f["code"]))
    offered = sorted(found[:MAX_CANDIDATES], key=lambda f: (f["line"], f["code"]))
    ids = iter(range(1, len(offered) + 1))
    return [{"id": next(ids) if f["fix"] is not None else None, **f} for f in offered]


def fix_change(candidate: Mapping[str, Any]) -> Change | None:
    """The change of accepting ``candidate``'s fix (None when it has none)."""
    fix = candidate.get("fix")
    if not isinstance(fix, Mapping):
        return None
    edits = tuple((int(s), int(e), str(c)) for s, e, c in fix.get("edits") or ())
    return Change(f"{candidate.get('code')} line {candidate.get('line')}", edits) if edits else None


def line_change(text: str, number: int, new: str, code: str) -> Change | None:
    """The change of line ``number`` of ``text`` to ``new`` (keeping the line's indentation
    when ``new`` has none); None when there is no such line."""
    lines = split_lines(text)
    if not 1 <= number <= len(lines):
        return None
    starts = _line_starts(text)
    body = lines[number - 1].rstrip("\r\n")
    start = starts[number - 1]
    indent = body[: len(body) - len(body.lstrip())]
    replacement = new if new[:1].isspace() else indent + new
    edit = (start, start + len(body), replacement.rstrip("\r\n"))
    return Change(f"{code} line {number}", (edit,), rewrite=True)


def decisions(results: Sequence[ToolResult]) -> tuple[dict[int, bool], dict[int, str | None]]:
    """What a run's successful tool results decided: each fix id -> accepted, each line -> its
    new text (None: skipped); the last decision about each counts. ValueError for a decision
    tool whose output is not JSON."""
    fixes: dict[int, bool] = {}
    lines: dict[int, str | None] = {}
    for result in results:
        if result.is_error or result.name not in (*_FIX_TOOLS, *_LINE_TOOLS):
            continue
        try:
            output = json.loads(result.output)
        except ValueError as exc:
            raise ValueError(f"{result.name} returned no JSON: {result.output[:200]!r}") from exc
        if "accepted" in output or "rejected" in output:
            fixes[int(output.get("accepted", output.get("rejected")))] = "accepted" in output
        elif "skipped" in output:
            lines[int(output["skipped"])] = None
        elif "line" in output:
            lines[int(output["line"])] = str(output.get("new", ""))
    return fixes, lines


def _new_line_pattern(source: str, number: int) -> str:
    """The ``pattern`` of line ``number``'s new text: one line that opens on the line's own
    first word when it has one (a ``return`` stays a ``return``), so no other line's fix can be
    written over it."""
    lines = split_lines(source)
    text = lines[number - 1].strip() if 1 <= number <= len(lines) else ""
    word = _FIRST_WORD.match(text)
    rest = "[^\n]*" if "<" in text else _LINE_TEXT
    return f"^{word.group(0) if word else ''}{rest}$"


def _narrowed(tool: ToolSchema, parameter: str, value: int, **extra: dict[str, Any]) -> ToolSchema | None:
    if parameter not in tool.properties:
        return None
    schema = {**tool.properties[parameter], "enum": [value]}
    properties = {**tool.properties, parameter: schema}
    for name, changes in extra.items():
        if name in properties:
            properties[name] = {**properties[name], **changes}
    return dataclasses.replace(tool, parameters={**tool.parameters, "properties": properties})


def _pending(inputs: Mapping[str, Any], results: Sequence[ToolResult]) -> tuple[int | None, int | None]:
    """The fix id or line a run decides next: the first fix not yet decided, else the first line
    not yet decided and not given up (:data:`LINE_TRIES` refused calls on it), else neither."""
    fix_ids = [i for i in inputs.get("fix_ids") or () if isinstance(i, int)]
    edit_lines = [n for n in inputs.get("edit_lines") or () if isinstance(n, int)]
    fixes: dict[int, bool] = {}
    lines: dict[int, str | None] = {}
    given_up: set[int] = set()

    def next_up() -> tuple[int | None, int | None]:
        fix = next((i for i in fix_ids if i not in fixes), None)
        line = next((n for n in edit_lines if n not in lines and n not in given_up), None)
        return fix, line if fix is None else None

    refused = 0
    for result in results:
        _, line = next_up()
        if result.is_error and result.name in _LINE_TOOLS and line is not None:
            refused += 1  # the grammar admits only the pending line: the refusal is about it
            if refused >= LINE_TRIES:
                given_up.add(line)
                refused = 0
            continue
        decided_fixes, decided_lines = decisions([result])
        if decided_fixes or decided_lines:
            refused = 0
        fixes.update(decided_fixes)
        lines.update(decided_lines)
    return next_up()


def lint_tool_view(
    tools: Sequence[ToolSchema], inputs: Mapping[str, Any], results: Sequence[ToolResult] = ()
) -> list[ToolSchema]:
    """The tools as a lint job's run sees them at its next turn (``KernelConfig.tool_view``):
    the first fix not yet decided (``accept_fix``/``reject_fix``, its ``id`` an enum of that one
    id), else the first line without a fix not yet decided (``replace_line``/``skip_line``, its
    ``line`` that one line, the new text a :func:`_new_line_pattern`), else the other tools
    (``submit_result``): the grammar admits only those, so no run submits with a decision
    pending (the kernel still offers ``submit_result`` on a run's forced last turn, when its
    budget is spent). A line whose rewrite the tool refused
    :data:`LINE_TRIES` times is left as it is: a small model told why, and that it repeats
    itself, still made the same refused call on every turn left."""
    fix, line = _pending(inputs, results)
    seen = []
    for tool in tools:
        narrowed: ToolSchema | None = tool
        if tool.name in _FIX_TOOLS:
            narrowed = _narrowed(tool, "id", fix) if fix is not None else None
        elif tool.name in _LINE_TOOLS:
            pattern = {"pattern": _new_line_pattern(str(inputs.get("source", "")), line)} if line else {}
            narrowed = _narrowed(tool, "line", line, new=pattern) if line is not None else None
        elif fix is not None or line is not None:
            narrowed = None  # submit_result: once every decision is made
        if narrowed is not None:
            seen.append(narrowed)
    return seen
