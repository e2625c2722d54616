"""Numbers in a fix written as the code wrote them.

Ruff writes a fix's expression from its syntax tree, and so spells every integer in decimal:
SIM210 turns hpack 4.0.0's ``True if current & 0x80 else False`` into ``bool(current & 128)``,
and PLR1714 turns idna's ``cp == 0x05F3 or cp == 0x05F4`` into ``cp in {1523, 1524}``, in a
table of code points all written in hexadecimal. A reviewer sends that back.

:func:`as_written` gives each integer of a fix's text the spelling of the integer it stands
for in the text the fix replaces, where both hold the same integers in the same order (the fix
moves them, never computes new ones). :func:`respells_numbers` says whether a fix still writes
a hexadecimal, octal, binary or ``_``-grouped number of the code in another spelling, where
that could not be done; such a fix is not offered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from structured_agents.tasks.lint_source import offset_of

__all__ = ["as_written", "respells_numbers"]

_INTEGER = re.compile(r"(?<![\w.])(?:0[xXoObB][0-9a-fA-F_]+|[1-9][\d_]*|0+)(?![\w.])")
"""An integer literal (not a digit of a name, a float or a string's word)."""
_SPELLED = re.compile(r"(?<![\w.])(?:0[xXoObB][0-9a-fA-F_]+|\d+_[\d_]*)\b")
"""A number written other than in plain decimal: hexadecimal, octal, binary, or with ``_``."""


def _edits(
    text: str, starts: Sequence[int], diagnostic: Mapping[str, Any]
) -> list[tuple[Mapping[str, Any], str, str]]:
    """Each edit of ``diagnostic``'s fix, with the text it writes and the text of ``text`` it
    replaces."""
    fix = diagnostic.get("fix")
    edits = fix.get("edits") if isinstance(fix, Mapping) else None
    found = []
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, Mapping):
            begin = offset_of(text, edit.get("location") or {}, starts)
            end = offset_of(text, edit.get("end_location") or {}, starts)
            found.append((edit, str(edit.get("content") or ""), text[begin:end]))
    return found


def _value(literal: str) -> int | None:
    try:
        return int(literal, 0)
    except ValueError:
        return None


def _respelled(content: str, replaced: str) -> str:
    """``content`` with its integers spelled as ``replaced`` spells the same integers in the same
    order; ``content`` itself where they are not the same."""
    written = list(_INTEGER.finditer(content))
    originals = _INTEGER.findall(replaced)
    if len(written) != len(originals) or any(
        _value(match.group()) != _value(original) for match, original in zip(written, originals, strict=True)
    ):
        return content
    parts, last = [], 0
    for match, original in zip(written, originals, strict=True):
        parts += [content[last : match.start()], original]
        last = match.end()
    return "".join([*parts, content[last:]])


def as_written(text: str, starts: Sequence[int], diagnostic: Mapping[str, Any]) -> dict[str, Any]:
    """``diagnostic`` (ruff's finding on ``text``, whose lines start at ``starts``) with the
    integers of its fix spelled as the text it replaces spells them (see the module docstring)."""
    edits = _edits(text, starts, diagnostic)
    if not edits:
        return dict(diagnostic)
    respelled = [{**edit, "content": _respelled(content, replaced)} for edit, content, replaced in edits]
    return {**diagnostic, "fix": {**diagnostic["fix"], "edits": respelled}}


def respells_numbers(text: str, starts: Sequence[int], diagnostic: Mapping[str, Any]) -> bool:
    """Whether ``diagnostic``'s fix writes a number of ``text`` in another spelling (see the
    module docstring); ``starts``: the offsets of ``text``'s lines."""
    for _, content, replaced in _edits(text, starts, diagnostic):
        kept = set(_SPELLED.findall(content))
        if any(number not in kept for number in _SPELLED.findall(replaced)):
            return True
    return False
