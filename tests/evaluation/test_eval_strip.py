"""Stripping docstrings with libcst: every function, method and class one, nothing else."""

from __future__ import annotations

import ast

import pytest

from structured_agents.evaluation.strip import strip_docstrings
from structured_agents.tasks.docstring import code_without_docstrings, find_docstring_targets

SOURCE = '''"""The module docstring stays."""

import os


def documented(a, b):
    """Add two numbers.

    Args:
        a: One.
    """
    return a + b


def only_a_docstring():
    """Nothing but this."""


def one_line(): "A one-line body."


class Shape:
    # a comment above the docstring
    """A shape."""

    sides = 0

    async def area(self):
        \'\'\'The area.\'\'\'
        def inner():
            """Nested."""
            return 1
        return inner()

    def concatenated(self):
        ("Two " "parts.")
        return b"bytes"


def not_docstrings():
    b"bytes are not a docstring"
    f"nor is an f-string {os.sep}"
    x = "nor a string after code"
    return x
'''


def test_every_definition_loses_its_docstring_and_the_code_stays_the_same() -> None:
    stripped, removed = strip_docstrings(SOURCE)

    assert removed == 7
    left = [t.qualname for t in find_docstring_targets(stripped, include_documented=True) if t.docstring]
    assert left == []
    assert ast.get_docstring(ast.parse(stripped)) == "The module docstring stays."
    assert code_without_docstrings(stripped) == code_without_docstrings(SOURCE)


def test_bodies_left_empty_get_pass_and_comments_move_down() -> None:
    stripped, _ = strip_docstrings(SOURCE)

    assert "def only_a_docstring():\n    pass\n" in stripped
    assert "def one_line(): pass\n" in stripped
    assert "class Shape:\n    # a comment above the docstring\n\n    sides = 0\n" in stripped


def test_strings_that_are_not_docstrings_stay_byte_for_byte() -> None:
    stripped, _ = strip_docstrings(SOURCE)

    tail = SOURCE[SOURCE.index("def not_docstrings") :]
    assert stripped.endswith(tail)


def test_a_module_that_does_not_parse_raises() -> None:
    import libcst

    with pytest.raises(libcst.ParserSyntaxError):
        strip_docstrings("def broken(:\n")


def test_only_the_named_definitions_lose_their_docstrings() -> None:
    source = (
        'class Outer:\n    """Outer."""\n\n    def method(self):\n        """Method."""\n\n'
        '        def inner():\n            """Inner."""\n\n\ndef method():\n    """Top level."""\n'
    )

    text, removed = strip_docstrings(source, {"Outer.method", "Outer.method.<locals>.inner"})

    assert removed == 2 and '"""Outer."""' in text and '"""Top level."""' in text
    assert '"""Method."""' not in text and '"""Inner."""' not in text
    assert strip_docstrings(source, set()) == (source, 0)
