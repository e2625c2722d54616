"""A fix's integers spelled as the code spells them, or the fix not offered."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates
from structured_agents.tasks.lint_source import Source
from structured_agents.tasks.number_spellings import as_written, respells_numbers

HPACK = "def kind(current):\n    indexed = True if current & 0x80 else False\n    return indexed\n"
IDNA = "def f(cp):\n    return cp == 0x05F3 or cp == 0x05F4 or cp == 1_000\n"


@pytest.mark.parametrize(
    ("rule", "text", "written"),
    [
        # hpack 4.0.0: ruff writes bool(current & 128)
        ("SIM210", HPACK, "    indexed = bool(current & 0x80)\n"),
        # idna: ruff writes {1523, 1524, 1000} in a table of code points written in hexadecimal
        ("PLR1714", IDNA, "    return cp in (0x05F3, 0x05F4, 1_000)\n"),
    ],
)
def test_a_fix_keeps_the_spelling_of_the_numbers_it_moves(
    tmp_path: Path, rule: str, text: str, written: str
) -> None:
    diagnostics = ruff_json(tmp_path, "m.py", text, rule)
    assert "0x" not in str(diagnostics[0]["fix"])  # ruff's own fix spells them in decimal

    found, left = with_candidates(text, diagnostics, "m.py")

    assert [item["code"] for item in found] == [rule] and left == []
    changed = apply_changes(text, fixes(text, found))[0]
    assert written in changed and Source(changed).tree is not None


def _finding(content: str) -> dict[str, object]:
    edit = {"content": content, "location": {"row": 1, "column": 5}, "end_location": {"row": 1, "column": 25}}
    return {
        "code": "X000",
        "location": {"row": 1, "column": 5},
        "fix": {"applicability": "unsafe", "edits": [edit]},
    }


def test_a_fix_whose_numbers_differ_from_the_codes_is_left_as_ruff_wrote_it_and_not_offered() -> None:
    text = "x = (0xFF if a else 0o17)\n"
    starts = Source(text).starts

    same = as_written(text, starts, _finding("0xFF if a else 15"))
    assert same["fix"]["edits"][0]["content"] == "0xFF if a else 0o17"  # type: ignore[index]
    assert not respells_numbers(text, starts, same)

    other = as_written(text, starts, _finding("255 if a else 16"))  # not the same numbers
    assert other["fix"]["edits"][0]["content"] == "255 if a else 16"  # type: ignore[index]
    assert respells_numbers(text, starts, other)
