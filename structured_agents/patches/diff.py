"""Unified diffs: make them, parse them, and apply several against one original.

Lines are split on ``\\n`` only, so ``\\r\\n`` endings and stray ``\\r`` stay part of their line
and a diff applies byte for byte. A last line without a newline is marked ``\\ No newline at
end of file`` as ``diff`` and ``git`` do (``difflib`` alone would glue it to the next line).

Several diffs made against the same original (one per docstring of a file) are applied
together: every hunk is checked against the original, then the changed line ranges are
spliced in; context lines may overlap, changed ranges may not.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from structured_agents.patches.errors import PatchError

__all__ = [
    "Edit",
    "Hunk",
    "ParsedDiff",
    "apply_edits",
    "diff_edits",
    "hunk_edits",
    "make_diff",
    "parse_diff",
    "split_keepends",
]

NO_NEWLINE = "\\ No newline at end of file\n"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def split_keepends(text: str) -> list[str]:
    """Lines of ``text`` split after each ``\\n``, endings kept."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    return [*out, lines[-1]] if lines[-1] else out


def make_diff(path: str, original: str, new: str, *, context: int = 3) -> str:
    """Unified diff from ``a/path`` to ``b/path``; empty when the texts are equal."""
    out = []
    for line in difflib.unified_diff(
        split_keepends(original), split_keepends(new), f"a/{path}", f"b/{path}", n=context
    ):
        out.append(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` block: where it starts in the original and its lines (prefix kept)."""

    old_start: int
    old_count: int
    lines: tuple[str, ...]

    def old_lines(self) -> list[str]:
        """The original lines the hunk expects (context and removed)."""
        return [line[1:] for line in self.lines if line[0] in " -"]


@dataclass(frozen=True, slots=True)
class ParsedDiff:
    """A single-file unified diff."""

    old_path: str
    new_path: str
    hunks: tuple[Hunk, ...]


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace original lines ``[start, end)`` (0-based) with ``lines``."""

    start: int
    end: int
    lines: tuple[str, ...]
    old: tuple[str, ...] = ()
    """The original lines ``[start, end)`` as the diff states them (what a revert puts back)."""


def _strip_prefix(header: str, marker: str) -> str:
    path = header[len(marker) :].rstrip("\n").split("\t")[0]
    return path[2:] if path[:2] in ("a/", "b/") else path


def parse_diff(diff: str) -> ParsedDiff:
    """Parse a unified diff of one file; :class:`PatchError` when it is malformed."""
    if not diff.strip():
        raise PatchError("the diff is empty: nothing to apply")
    lines = split_keepends(diff)
    if len(lines) < 2 or not lines[0].startswith("--- ") or not lines[1].startswith("+++ "):
        raise PatchError("not a unified diff: it must start with '--- ' and '+++ ' lines")
    hunks: list[Hunk] = []
    index = 2
    while index < len(lines):
        match = _HUNK_HEADER.match(lines[index])
        if match is None:
            if lines[index].startswith("--- "):
                raise PatchError("the diff spans several files; a result patches exactly one")
            raise PatchError(f"diff line {index + 1}: expected a '@@' hunk header, got {lines[index]!r}")
        old_start, old_left = int(match[1]), int(match[2] if match[2] is not None else 1)
        new_left = int(match[4] if match[4] is not None else 1)
        body: list[str] = []
        index += 1
        while index < len(lines) and (old_left or new_left or lines[index] == NO_NEWLINE):
            line = lines[index]
            if line == NO_NEWLINE and body:
                body[-1] = body[-1].removesuffix("\n")
            elif line[:1] in (" ", "-", "+"):
                body.append(line)
                old_left -= line[0] in " -"
                new_left -= line[0] in " +"
            else:
                raise PatchError(f"diff line {index + 1}: unexpected {line!r}")
            index += 1
        if old_left or new_left:
            raise PatchError(f"hunk at original line {old_start}: fewer lines than its header counts")
        hunks.append(Hunk(old_start, len(body) - sum(line[0] == "+" for line in body), tuple(body)))
    return ParsedDiff(_strip_prefix(lines[0], "--- "), _strip_prefix(lines[1], "+++ "), tuple(hunks))


def hunk_edits(parsed: ParsedDiff) -> list[Edit]:
    """The edits of a diff as its hunks state them, not checked against any file."""
    edits: list[Edit] = []
    for hunk in parsed.hunks:
        position = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        removed: list[str] = []
        added: list[str] = []
        for line in (*hunk.lines, " "):  # a final context line flushes the last change
            if line[0] == " " and (removed or added):
                edits.append(Edit(position - len(removed), position, tuple(added), tuple(removed)))
                removed, added = [], []
            if line[0] == " ":
                position += 1
            elif line[0] == "-":
                position += 1
                removed.append(line[1:])
            else:
                added.append(line[1:])
    return edits


def diff_edits(original: Sequence[str], parsed: ParsedDiff) -> list[Edit]:
    """The edits of a diff, each hunk checked against ``original`` lines."""
    for hunk in parsed.hunks:
        start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        if list(original[start : start + hunk.old_count]) != hunk.old_lines():
            raise PatchError(f"hunk at original line {hunk.old_start} does not match the file")
    return hunk_edits(parsed)


def apply_edits(original: Sequence[str], edit_sets: Iterable[Sequence[Edit]]) -> str:
    """Apply the edits of several diffs of the same original at once.

    :class:`PatchError` when two edits change the same lines or insert at the same place
    (their order would be a guess).
    """
    edits = sorted((edit for edits in edit_sets for edit in edits), key=lambda e: (e.start, e.end))
    out: list[str] = []
    cursor = 0
    previous: Edit | None = None
    for edit in edits:
        both_insert = previous is not None and previous.start == previous.end == edit.start == edit.end
        if edit.start < cursor or both_insert:
            raise PatchError(f"edits overlap at original line {edit.start + 1}")
        out += original[cursor : edit.start]
        out += edit.lines
        cursor, previous = edit.end, edit
    out += original[cursor:]
    return "".join(out)
