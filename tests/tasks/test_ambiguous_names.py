"""E741's ``l`` bound by a comprehension is renamed to the singular of what it iterates, where
that is the word ``l`` abbreviates and the function uses that name nowhere; else it is left."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import Change, apply_changes, fixes
from structured_agents.tasks.lint_idioms import scarce_dropped
from structured_agents.tasks.lint_rewrites import with_candidates


def _renamed(root: Path, text: str) -> tuple[str, int]:
    found, left = with_candidates(text, ruff_json(root, "m.py", text, "E741"), "m.py")
    return apply_changes(text, fixes(text, found))[0], len(left)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (  # pysrt 1.1.2
            "def strip(lines):\n    lines = [l.rstrip() for l in lines]\n    return lines\n",
            "def strip(lines):\n    lines = [line.rstrip() for line in lines]\n    return lines\n",
        ),
        (  # unidiff 0.7.5: a method's plural, its last word
            "def f(self):\n    return [str(l) for l in self.source_lines() if l]\n",
            "def f(self):\n    return [str(line) for line in self.source_lines() if line]\n",
        ),
        (  # jsonpath-ng 1.6.1, at a module's top
            "x = any([l in f for l in Lexer.literals])\n",
            "x = any([literal in f for literal in Lexer.literals])\n",
        ),
        (  # a nested comprehension reading the name, a dict comprehension
            "def f(lines):\n    return {l: [c for c in l] for l in lines}\n",
            "def f(lines):\n    return {line: [c for c in line] for line in lines}\n",
        ),
    ],
)
def test_a_comprehensions_l_takes_the_singular_of_what_it_iterates(
    tmp_path: Path, before: str, after: str
) -> None:
    renamed, left = _renamed(tmp_path, before)

    assert renamed == after and left == 0
    assert ruff_json(tmp_path, "m.py", renamed, "E741") == []
    compile(renamed, "m.py", "exec")


@pytest.mark.parametrize(
    "text",
    [
        "def f(left, right):\n    return [l + r for l, r in zip(left, right)]\n",  # a pair
        "def f(self):\n    return (l for l in self if l.ok)\n",  # no word to take
        "def f(boxes):\n    return [l for l in boxes]\n",  # not a plain plural
        "def f(items):\n    return [l for l in items]\n",  # not the word ``l`` abbreviates
        "def f(lines, line):\n    return [l for l in lines if l != line]\n",  # the name is taken
        "def f(lines, xs):\n    return [[l for l in x] for l in lines for x in xs]\n",  # bound again
        "def f(lines):\n    for l in lines:\n        print(l)\n    return l\n",  # a loop's name lives on
    ],
)
def test_an_l_with_no_word_to_take_is_left(tmp_path: Path, text: str) -> None:
    renamed, left = _renamed(tmp_path, text)

    assert renamed == text and left >= 1


def test_a_file_renames_every_comprehensions_l_or_none(tmp_path: Path) -> None:
    """unidiff 0.7.5: ``[str(l) for l in self.source_lines()]`` renamed beside ``(l for l in
    self if l.is_context)`` two methods up, which has no word to take; a reviewer asked for both
    or neither."""
    both = "def lines(self):\n    return (l for l in self if l)\n\n\n"
    both += "def shown(self):\n    return [str(l) for l in self.source_lines()]\n"

    renamed, left = _renamed(tmp_path, both)

    assert renamed == both and left == 2
    kept, dropped = [Change("E741 line 6", ())], [Change("E741 line 2", ())]
    assert scarce_dropped(kept, dropped) == kept  # dropped by the verdict: the file keeps none
