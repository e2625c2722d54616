"""A fix laid out the way ruff format would, where the code around it already is.

Ruff's fixes do not wrap or re-indent: ``raise Error("...") from err`` or an f-string can end
past the project's line length (the verdict then drops the fix: ``made a line too long``), and
a multi-line fix keeps its continuation lines at their old indent. Where the code
follows ruff format's (black's) style at the project's line length, in the file's own quote
style, :func:`laid_out` writes the fix in that style too::

    raise ValueError(
        "missing key %s in the mapping given" % key
    ) from None

- A file formatted throughout (as the user wrote it, before ruff's own fixes, but for a few
  statements where black and ruff format part): the statements the fix changes are formatted,
  and the blank lines next to them too, at the width the file is formatted at (the project's,
  else the first usual one at which ruff format leaves it as it is: a black-formatted file
  whose docstrings run to 110 columns is wrapped at 88).
- A file formatted only where the fix is (the statements it changes were as ruff format writes
  them): those statements are formatted (``ruff format --range``) and nothing around them. A
  fix that needs wrapping is wrapped there only when one of those statements already spans
  lines in black's way: one-line statements say nothing of how the file wraps (boltons aligns
  its continuations under the bracket).
- Anywhere else the fix is left as ruff wrote it: black's layout would be foreign to the file
  (a strict reviewer sent such wraps back), and a fix over the length is dropped by the verdict,
  except where what runs past the length is a string the fix wrote (UP031's f-string), inside
  brackets: it is split into literals each under the first, as code that aligns its
  continuations under a bracket writes them
  (:func:`~structured_agents.tasks.lint_strings.reflow_strings`). glom 23.5.0 lost 15 of its
  ``%`` formats this way, and with them the twins that go together.

A string literal the formatter leaves too long on a line of its own inside brackets is split
into implicitly concatenated parts (:func:`~structured_agents.tasks.lint_strings.split_strings`),
and literals concatenated so, too long each (cssutils 2.15.0's ``__str__`` formats, two literals
over ``% (...)``), are written again as literals that fit
(:func:`~structured_agents.tasks.lint_strings.reflow_strings`).

A simplification (``SIM``) that would need wrapping is left as ruff wrote it too (and so
dropped): a four-line ``if``/``else`` turned into a five-line wrapped conditional is not
simpler. So is a fix the formatter cannot bring within the length.
"""

from __future__ import annotations

import ast
import difflib
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from structured_agents import syntax
from structured_agents.jobs.source import split_lines
from structured_agents.tasks.lint_fixes import apply_edits, fix_edits
from structured_agents.tasks.lint_settings import GROWTH, WIDTHS, LintSettings
from structured_agents.tasks.lint_strings import reflow_strings, split_strings
from structured_agents.tasks.ruff import ruff_safe_fixes
from structured_agents.tasks.ruff_format import format_lines, formatted_at

__all__ = ["laid_out"]

_Span = tuple[int, int, int, int]
"""``text`` lines ``[i1, i2)`` replaced by the new lines ``[j1, j2)``."""


def _too_long(lines: list[str], width: int, known: set[str], replaced: list[str] | None = None) -> bool:
    """Whether a line of ``lines`` runs past ``width`` and is new: not a line of the file
    (``known``), nor one that stands in place of a line of ``replaced`` (the lines they replace,
    one for one) that ran past it already and is at most :data:`.GROWTH` columns shorter, as the
    verdict judges it (feedparser 6.0.14's 96-column ``raise UndeclaredNamespace("'%s' is not
    ..." % givenprefix)``, an f-string three columns shorter, was split in two)."""
    before = replaced if replaced is not None and len(replaced) == len(lines) else [""] * len(lines)
    for line, old in zip(lines, before, strict=True):
        text, was = line.rstrip("\r\n"), old.rstrip("\r\n")
        if (
            len(text) > width
            and text not in known
            and not (len(was) > width and len(text) <= len(was) + GROWTH)
        ):
            return True
    return False


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


def _blank(lines: list[str]) -> bool:
    return all(not line.strip() for line in lines)


_EDGE = 2
"""Lines either side of the formatted statements whose blank lines the formatter may change,
in a file formatted throughout (black's two blank lines after a nested ``def``...)."""


def _only_within(
    fixed: list[str], formatted: list[str], first: int, last: int, edges: bool = False
) -> list[str] | None:
    """``fixed`` with the formatter's changes to its lines ``[first, last)`` taken, and its
    blank lines added or dropped elsewhere left out; None when it changed anything else."""
    result: list[str] = []
    matcher = difflib.SequenceMatcher(None, fixed, formatted, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            result += formatted[j1:j2]
        elif (
            _blank([*fixed[i1:i2], *formatted[j1:j2]])
            and not first < i1 <= i2 < last
            and not (edges and first - _EDGE <= i1 and i2 <= last + _EDGE)
        ):
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
    root: Path, path: str, lines: list[str], first: int, last: int, width: int, edges: bool = False
) -> list[str] | None:
    """``lines`` with the formatter's layout of their lines ``[first, last)`` (see
    :func:`_only_within`); None when it cannot be had."""
    formatted = format_lines(root, path, lines, first, last, width)
    return _only_within(lines, split_lines(formatted), first, last, edges) if formatted else None


@functools.lru_cache(maxsize=16)
def _statements(text: str) -> tuple[tuple[int, int], ...]:
    """The line ranges ``[first, last)`` (from 0) of ``text``'s simple statements."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError):
        return ()
    return tuple(
        (node.lineno - 1, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt) and not hasattr(node, "body")
    )


def _spans_lines(text: str) -> frozenset[int]:
    """The lines (from 0) of ``text``'s simple statements that span several lines."""
    return frozenset(
        line for first, last in _statements(text) if last - first > 1 for line in range(first, last)
    )


def _whole_statements(text: str, first: int, last: int) -> tuple[int, int]:
    """``[first, last)`` widened to the whole simple statements of ``text`` it touches."""
    for start, end in _statements(text):
        if start < last and first < end:
            first, last = min(first, start), max(last, end)
    return first, last


def laid_out(
    root: Path, path: str, text: str, original: str, diagnostic: Mapping[str, Any], settings: LintSettings
) -> dict[str, Any]:
    """``diagnostic`` (a ruff-shaped finding on ``text``, the file ``root/path``, with a fix),
    its fix laid out as ruff format would at the project's line length where the code around it
    is formatted already (see the module docstring; ``original``: the file before ruff's safe
    fixes, whose long lines are not the fix's); unchanged otherwise. The fix is judged with
    ruff's safe fixes on top, as the verdict applies it (UP031's ``.format()`` is an f-string by
    then, and may fit where the ``.format()`` did not)."""
    edits = fix_edits(text, diagnostic)
    if not edits:
        return dict(diagnostic)
    width = settings.width_for(root, path, original)
    lines, applied = split_lines(text), apply_edits(text, edits)
    touched = _changed(lines, split_lines(applied))
    if touched is None:
        return dict(diagnostic)
    asked = (width,) if settings.width is not None else WIDTHS  # else width_for's own (cached) question
    throughout = formatted_at(root, path, original, asked) == width
    region = _whole_statements(text, touched[0], touched[1])
    black = throughout or (region[0] != region[1] and _formatted(root, path, lines, *region, width) == lines)
    fixed = split_lines(ruff_safe_fixes(root, path, applied, *settings.file_options(root, path, original)))
    known = {line.rstrip("\r\n") for line in split_lines(original)}
    span = _changed(lines, fixed)
    if span is None or span[2] == span[3]:
        return dict(diagnostic)
    long = _too_long(fixed[span[2] : span[3]], width, known, lines[span[0] : span[1]])
    if long and str(diagnostic.get("code", "")).startswith("SIM"):
        return dict(diagnostic)  # a simplification that needs wrapping is not simpler
    if long and (not black or (not throughout and not _spans_lines(text) & set(range(*region)))):
        # black's layout is foreign here, or one-line statements say nothing of how the file
        # wraps: only the strings the fix wrote are split, each literal under the first
        reflowed = reflow_strings(fixed, span[2], span[3], width, original)
        return _rewritten(
            diagnostic, lines, fixed, reflowed, width, known, f"its string split at {width} columns"
        )
    if not black:
        return dict(diagnostic)
    kept = _formatted(
        root, path, fixed, *_whole_statements("".join(fixed), span[2], span[3]), width, edges=throughout
    )
    changed = _changed(lines, kept) if kept is not None else None
    if kept is not None and changed is not None:
        kept = split_strings(kept, changed[2], changed[3], width, known)
        if _too_long(kept[changed[2] : changed[3]], width, known):  # one literal a line, each too long
            kept = reflow_strings(kept, changed[2], changed[3], width, original)
    how = "wrapped" if long else "laid out"
    return _rewritten(
        diagnostic, lines, fixed, kept, width, known, f"{how} at {width} columns, as ruff format would"
    )


def _rewritten(
    diagnostic: Mapping[str, Any],
    lines: list[str],
    fixed: list[str],
    kept: list[str] | None,
    width: int,
    known: set[str],
    how: str,
) -> dict[str, Any]:
    """``diagnostic`` with its fix made the one edit from ``lines`` (the file) to ``kept``, said
    to be ``how`` in its message; as it was where ``kept`` is missing, the same as ``fixed``
    (the fix with ruff's safe fixes on top), or has a line over ``width`` that ``known`` lacks."""
    whole = _changed(lines, kept) if kept is not None and kept != fixed else None
    if kept is None or whole is None or _too_long(kept[whole[2] : whole[3]], width, known):
        return dict(diagnostic)
    i1, i2, j1, j2 = whole
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    fix = dict(diagnostic["fix"])
    fix["message"] = f"{fix.get('message') or 'Fix'} ({how})"
    fix["edits"] = [
        {
            "content": "".join(kept[j1:j2]),
            "location": _location(starts, starts[i1]),
            "end_location": _location(starts, starts[i2]),
        }
    ]
    return {**diagnostic, "fix": fix}
