"""The lint task's proposals: line fixes applied to a text, checked by ruff before and after.

A proposal is ``{"line": N, "old": TEXT, "new": TEXT}``: replace the first ``old`` on line
``N`` of the file as the job read it (1-based) with ``new``. A fix whose ``old`` was the line's
whole text and whose ``new`` is empty deletes the line (an unused import goes away instead of
leaving a blank line). Several fixes of one line apply in order; a fix whose ``old`` is no
longer on its line is skipped and reported.

Ruff checks the text through stdin with ``--stdin-filename`` set to the file's real path, in
the codebase root: the codebase's own configuration (rules, ``noqa``, excludes) applies and
nothing is written anywhere, neither to the user's files nor to a temporary copy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structured_agents.jobs.source import split_lines
from structured_agents.runner.errors import TaskError

__all__ = ["FixReport", "apply_line_fixes", "ruff_codes", "ruff_safe_fixes"]


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


def _ruff(root: Path, path: str, text: str, *options: str) -> str:
    """Ruff's standard output for ``text`` read as ``root/path``, with ``options``."""
    command = [sys.executable, "-m", "ruff", "check", *options, "--exit-zero", "--no-cache"]
    command += ["--force-exclude", "--stdin-filename", str(root.resolve() / path), "-"]
    try:
        done = subprocess.run(command, cwd=root, input=text, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise TaskError(f"could not run ruff: {exc}") from exc
    if done.returncode != 0:
        raise TaskError(f"ruff failed on {path} (exit {done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout


def ruff_codes(root: Path, path: str, text: str) -> list[str]:
    """The codes of ruff's findings on ``text`` as if it were ``root/path``, sorted."""
    out = _ruff(root, path, text, "--output-format", "json")
    try:
        findings = json.loads(out or "[]")
    except json.JSONDecodeError as exc:
        raise TaskError(f"ruff printed no JSON for {path}: {out[:200]!r}") from exc
    return sorted(str(item.get("code") or "syntax-error") for item in findings)


def ruff_safe_fixes(root: Path, path: str, text: str) -> str:
    """``text`` with the fixes ruff itself calls safe applied (``ruff check --fix``), as if it
    were ``root/path``; unchanged where ruff has none (or excludes the file)."""
    return _ruff(root, path, text, "--fix", "--quiet") or text
