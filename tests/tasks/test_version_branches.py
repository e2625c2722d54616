"""The branches of a version test that no supported Python runs, and no fix offered there."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_rewrites import with_candidates
from structured_agents.tasks.lint_source import Source
from structured_agents.tasks.version_branches import dead_lines

PYASN1 = """import sys


class Char:
    if sys.version_info[0] <= 2:
        def prettyIn(self, value):
            try:
                return unicode(value)
            except (UnicodeDecodeError, LookupError):
                raise ValueError("Can't decode string '%s'" % (value,))
    else:
        def prettyIn(self, value):
            try:
                return str(value)
            except (UnicodeDecodeError, LookupError):
                raise ValueError("Can't decode string '%s'" % (value,))
"""


def test_fixes_in_a_branch_no_supported_python_runs_are_not_offered(tmp_path: Path) -> None:
    """pyasn1 0.6.0 (Python 3.8 and up): a reviewer sent back a ``raise ... from err`` and an
    f-string written into its ``sys.version_info[0] <= 2`` branch: that branch is deleted, not
    modernised."""
    diagnostics = ruff_json(tmp_path, "m.py", PYASN1, "B904,UP031")

    found, left = with_candidates(PYASN1, diagnostics, "m.py", lowest=(3, 8))

    assert {item["location"]["row"] for item in found} == {16}  # B904 and UP031 of the live branch
    assert {item["location"]["row"] for item in left} == {10}
    everywhere, _ = with_candidates(PYASN1, diagnostics, "m.py", lowest=(2, 7))  # both run there
    assert {item["location"]["row"] for item in everywhere} == {10, 16}


@pytest.mark.parametrize(
    ("test", "lowest", "dead"),
    [
        ("sys.version_info[0] == 2", (3, 8), "body"),
        ("sys.version_info < (3,)", (3, 8), "body"),
        ("sys.version_info < (3, 9)", (3, 8), None),  # 3.8 runs it
        ("sys.version_info < (3, 9)", (3, 9), "body"),
        ("sys.version_info >= (3, 8)", (3, 8), "else"),
        ("sys.version_info.major >= 3 and sys.version_info[:2] >= (3, 6)", (3, 7), "else"),
        ("not sys.version_info[0] < 3", (3, 6), "else"),
        ("sys.version_info[0] <= 2", (2, 7), None),
        ("sys.version_info >= (3, 8) and ready", (3, 8), None),  # not a version test alone
        ("PY2", (3, 8), None),  # a name: its value is not read
    ],
)
def test_a_version_test_is_worked_out_for_every_supported_python(
    test: str, lowest: tuple[int, int], dead: str | None
) -> None:
    text = f"import sys\n\nif {test}:\n    a = 1\nelse:\n    a = 2\n"
    expected = {"body": {4}, "else": {6}, None: set()}[dead]
    assert dead_lines(Source(text), lowest) == expected
    assert dead_lines(Source(text), None) == set()
