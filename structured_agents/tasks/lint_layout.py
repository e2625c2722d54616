"""A fix laid out the way ruff format would: wrapped where it would write a long line, and
formatted where the code around it already is.

Ruff's fixes do not wrap or re-indent: ``raise Error("...") from err`` or an f-string can end
past the project's line length (the verdict then drops the fix: ``made a line too long``), and
E731's ``def`` keeps the lambda's continuation lines at their old, deeper indent. So
:func:`laid_out` formats the statements a fix changes with ``ruff format --range``, at the
project's line length and in the file's own quote style, when

- the fix writes a line over that length; or
- those statements, before the fix, are already as ruff format would write them (the file
  follows black's style there), so the fix keeps to it::

    raise ValueError(
        "missing key %s in the mapping given" % key
    ) from None

Only the lines the fix changes are taken from the formatter (blank lines it would add or drop
around them are not). A fix the formatter cannot bring within the length, or whose text does
not format, is left as ruff wrote it.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from structured_agents.jobs.source import split_lines
from structured_agents.tasks.lint_fixes import apply_edits, fix_edits

__all__ = ["laid_out"]

_TIMEOUT_S = 30
_Span = tuple[int, int, int, int]
"""``text`` lines ``[i1, i2)`` replaced by the new lines ``[j1, j2)``."""


def _too_long(lines: list[str], width: int, known: set[str]) -> bool:
    return any(len(line.rstrip("\r\n")) > width and line.rstrip("\r\n") not in known for line in lines)


def _changed(before: list[str], after: list[str]) -> _Span | None:
    """The one span of lines that differs between ``before`` and ``after`` (first to last change)."""
    codes = [
        op
        for op in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if not codes:
        return None
    return codes[0][1], codes[-1][2], codes[0][3], codes[-1][4]


def _format_range(root: Path, path: str, lines: list[str], first: int, last: int, width: int) -> str | None:
    """``lines`` with their lines ``[first, last)`` formatted by ruff; None when it fails."""
    end = len(lines[last - 1].rstrip("\r\n")) + 1
    command = [sys.executable, "-m", "ruff", "format", "--no-cache", f"--range={first + 1}:1-{last}:{end}"]
    command += ["--line-length", str(width), "--config", "format.quote-style = 'preserve'"]
    command += ["--stdin-filename", str(root.resolve() / path), "-"]
    try:
        done = subprocess.run(
            command,
            cwd=root,
            input="".join(lines),
            capture_output=True,
            text=True,
            check=False,
            timeout=_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 and done.stdout else None


def _blank(lines: list[str]) -> bool:
    return all(not line.strip() for line in lines)


def _only_within(fixed: list[str], formatted: list[str], first: int, last: int) -> list[str] | None:
    """``fixed`` with the formatter's changes to its lines ``[first, last)`` taken, and its
    blank lines added or dropped elsewhere left out; None when it changed anything else."""
    result: list[str] = []
    matcher = difflib.SequenceMatcher(None, fixed, formatted, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            result += formatted[j1:j2]
        elif _blank([*fixed[i1:i2], *formatted[j1:j2]]) and not first < i1 <= i2 < last:
            result += fixed[i1:i2]  # blank lines at the edges: the formatter's spacing, not the fix
        elif first <= i1 and i2 <= last:
            result += formatted[j1:j2]
        else:
            return None
    return result


def _location(starts: list[int], offset: int) -> dict[str, int]:
    row = next(row for row in range(len(starts) - 1, 0, -1) if starts[row - 1] <= offset)
    return {"row": row, "column": offset - starts[row - 1] + 1}


def _formatted(
    root: Path, path: str, lines: list[str], first: int, last: int, width: int
) -> list[str] | None:
    """``lines`` with the formatter's layout of their lines ``[first, last)`` (see
    :func:`_only_within`); None when it cannot be had."""
    formatted = _format_range(root, path, lines, first, last, width)
    return _only_within(lines, split_lines(formatted), first, last) if formatted else None


def laid_out(
    root: Path, path: str, text: str, original: str, diagnostic: Mapping[str, Any], width: int
) -> dict[str, Any]:
    """``diagnostic`` (a ruff-shaped finding on ``text``, the file ``root/path``, with a fix),
    its fix laid out as ruff format would at ``width`` where it writes a line over ``width``
    that ``original`` does not have, or where the lines it changes are formatted already (see
    the module docstring); unchanged otherwise."""
    edits = fix_edits(text, diagnostic)
    if not edits:
        return dict(diagnostic)
    lines, fixed = split_lines(text), split_lines(apply_edits(text, edits))
    known = {line.rstrip("\r\n") for line in split_lines(original)}
    span = _changed(lines, fixed)
    if span is None or span[2] == span[3]:
        return dict(diagnostic)
    long = _too_long(fixed[span[2] : span[3]], width, known)
    if not long and (span[0] == span[1] or _formatted(root, path, lines, span[0], span[1], width) != lines):
        return dict(diagnostic)  # short, and the code around it is not in ruff format's style
    kept = _formatted(root, path, fixed, span[2], span[3], width)
    whole = _changed(lines, kept) if kept is not None and kept != fixed else None
    if kept is None or whole is None or _too_long(kept[whole[2] : whole[3]], width, known):
        return dict(diagnostic)
    i1, i2, j1, j2 = whole
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    fix = dict(diagnostic["fix"])
    how = "wrapped" if long else "laid out"
    fix["message"] = f"{fix.get('message') or 'Fix'} ({how} at {width} columns, as ruff format would)"
    fix["edits"] = [
        {
            "content": "".join(kept[j1:j2]),
            "location": _location(starts, starts[i1]),
            "end_location": _location(starts, starts[i2]),
        }
    ]
    return {**diagnostic, "fix": fix}
