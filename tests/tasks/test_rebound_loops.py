"""B007's unused loop variable whose name a later loop binds again: renamed where the value it
binds is never read, left anywhere that value might be."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates

TABLES = """def parse(read, count):
    ids = []
    for i in range(count):
        ids.append(read())
    strs = []
    for i in range(count):
        strs.append(read())
    for i in range(count):
        print(ids[i], strs[i])
"""
"""polib 1.2.0's ``_MOFileParser.parse``: two tables read, the third loop uses ``i``."""

COMPREHENDED = """def f(rows):
    for i in rows:
        print(rows)
    for i in rows:
        print([i * j for j in rows])
    return [i for i in rows if i], {i: row for i, row in enumerate(rows)}
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TABLES, TABLES.replace("i in range(count):\n        ids", "_i in range(count):\n        ids")),
        (TABLES, TABLES.replace("i in range(count):\n        strs", "_i in range(count):\n        strs")),
        (COMPREHENDED, COMPREHENDED.replace("for i in rows:", "for _i in rows:", 1)),
    ],
)
def test_an_unused_loop_name_read_only_after_its_own_binding_is_renamed(
    tmp_path: Path, text: str, expected: str
) -> None:
    diagnostics = ruff_json(tmp_path, "m.py", text, "B007")
    assert diagnostics and not any(found.get("fix") for found in diagnostics)  # ruff gives none

    found, left = with_candidates(text, diagnostics, "m.py")
    candidates = [apply_changes(text, [change])[0] for change in fixes(text, found)]

    assert expected in candidates and left == []
    for candidate in candidates:
        compile(candidate, "m.py", "exec")
        assert len(ruff_json(tmp_path, "m.py", candidate, "B007")) < len(diagnostics)


def test_the_rename_takes_the_files_throwaway_name(tmp_path: Path) -> None:
    text = TABLES + "\n\ndef g(n):\n    for _ in range(n):\n        pass\n"

    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "B007"), "m.py")
    candidate, applied, _ = apply_changes(text, fixes(text, found))

    assert applied and candidate.count("for _ in range(count):") == 2 and "for i in range(count)" in candidate


READ_AFTER = "def f(rows):\n    for i in rows:\n        pass\n    return i\n"


@pytest.mark.parametrize(
    "text",
    [
        READ_AFTER,  # the last value read after the loop
        READ_AFTER.replace("return i", "for j in range(i):\n        print(j)"),  # in a loop's iterable
        READ_AFTER.replace("return i", "for j in rows:\n        i += j\n    return i"),  # augmented
        READ_AFTER.replace("pass", "pass\n    else:\n        print(i)\n    i = 0"),  # the loop's else
        READ_AFTER.replace("return i", "return [r for r in range(i)]"),  # a comprehension's first iterable
        READ_AFTER.replace("return i", "return lambda: i"),  # a closure
        READ_AFTER.replace("return i", "del i"),  # deleted
        READ_AFTER.replace("return i", "for i in rows:\n        print(i)\n    return locals()"),  # read
        READ_AFTER.replace("return i", "for i in rows:\n        print(i)\n    _i = 1"),  # taken
        # the later loop holds this one, whose value its body reads
        "def f(rows):\n    for i in rows:\n        for i in rows:\n            pass\n        print(i)\n",
        # a module's loop: the name is an attribute
        "for i in range(3):\n    pass\nfor i in range(3):\n    print(i)\n",
        # an unpacking's name
        "def f(d):\n    for k, v in d:\n        print(v)\n    for k in d:\n        print(k)\n",
    ],
)
def test_a_loop_name_whose_value_may_be_read_is_left(tmp_path: Path, text: str) -> None:
    diagnostics = [found for found in ruff_json(tmp_path, "m.py", text, "B007") if not found.get("fix")]
    assert diagnostics

    found, left = with_candidates(text, diagnostics, "m.py")

    assert found == [] and len(left) == len(diagnostics)
