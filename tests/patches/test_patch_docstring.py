"""set_docstring: only the target's docstring changes; indentation, line endings and escapes are right."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structured_agents.patches import PatchError, docstring_change, parse_diff, set_docstring
from structured_agents.tasks.docstring import find_docstring_targets

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"


def strip_docstrings(source: str) -> str:
    """``ast.dump`` of the module with every docstring (module, classes, functions) removed."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        if isinstance(node, kinds) and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def docstrings(source: str) -> list[tuple[str, str | None]]:
    """(qualname, docstring) of every definition, in source order."""
    return [(t.qualname, t.docstring) for t in find_docstring_targets(source, include_documented=True)]


@pytest.mark.parametrize("relative", ["geometry/shapes.py", "utils.py", "lint_me.py"])
def test_every_target_of_the_sample_changes_only_its_docstring(relative: str) -> None:
    original = (SAMPLE / relative).read_text()
    before = docstrings(original)
    for index, target in enumerate(find_docstring_targets(original, include_documented=True)):
        text = f"Docstring of {target.qualname}.\n\nSecond paragraph, indented right."
        new = set_docstring(original, target.qualname, text, line=target.def_line)
        assert strip_docstrings(new) == strip_docstrings(original), target.qualname
        expected = [*before[:index], (target.qualname, inspect.cleandoc(text)), *before[index + 1 :]]
        assert docstrings(new) == expected


def test_insertion_only_adds_lines_at_the_body_indentation() -> None:
    original = (SAMPLE / "geometry/shapes.py").read_text()
    change = docstring_change(
        "geometry/shapes.py", original, "Rectangle.corners.<locals>.corner", "One corner.\n\nMore."
    )
    (hunk,) = parse_diff(change.diff).hunks
    added = [line for line in hunk.lines if line[0] == "+"]
    assert added == [
        '+            """One corner.\n',
        "+\n",
        "+            More.\n",
        '+            """\n',
    ]
    assert not [line for line in hunk.lines if line[0] == "-"]
    assert change.diff.startswith("--- a/geometry/shapes.py\n+++ b/geometry/shapes.py\n")


def test_replacement_keeps_comments_and_following_statements() -> None:
    source = 'class A:\n    def f(self):\n        """Old."""  # keep me\n        # and me\n        return 1\n'
    assert set_docstring(source, "A.f", "New.") == (
        'class A:\n    def f(self):\n        """New."""  # keep me\n        # and me\n        return 1\n'
    )


def test_one_line_bodies_tabs_and_crlf() -> None:
    assert set_docstring("def f(): return 1  # note\n", "f", "Doc.") == (
        'def f():  # note\n    """Doc."""\n    return 1\n'
    )
    tabs = "class T:\n\tdef m(self):\n\t\tpass\n"
    assert set_docstring(tabs, "T.m", "Line one.\nLine two.") == (
        'class T:\n\tdef m(self):\n\t\t"""Line one.\n\t\tLine two.\n\t\t"""\n\t\tpass\n'
    )
    crlf = "def f():\r\n    return 1\r\n"
    assert (
        set_docstring(crlf, "f", "A.\n\nB.")
        == 'def f():\r\n    """A.\r\n\r\n    B.\r\n    """\r\n    return 1\r\n'
    )


def test_same_named_definitions_need_a_line() -> None:
    source = "if X:\n    def f():\n        pass\nelse:\n    def f():\n        pass\n"
    with pytest.raises(PatchError, match="defined 2 times"):
        set_docstring(source, "f", "Doc.")
    assert set_docstring(source, "f", "Doc.", line=5).endswith(
        '    def f():\n        """Doc."""\n        pass\n'
    )
    prop = (
        "class P:\n    @property\n    def x(self):\n        return 1\n\n"
        "    @x.setter\n    def x(self, v):\n        pass\n"
    )
    assert set_docstring(prop, "P.x", "The x.").count('"""The x."""') == 1
    assert '    def x(self):\n        """The x."""' in set_docstring(prop, "P.x", "The x.")
    with pytest.raises(PatchError, match="no function or class 'g'"):
        set_docstring(source, "g", "Doc.")
    with pytest.raises(PatchError, match="must not be empty"):
        set_docstring(source, "f", "  \n ", line=2)
    with pytest.raises(PatchError, match="does not parse"):
        set_docstring("def broken(:\n", "broken", "Doc.")


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(['"', "\\", "\n", "'"])))
def test_any_text_round_trips_through_the_literal(text: str) -> None:
    cleaned = inspect.cleandoc(text)
    source = "class C:\n    def m(self):\n        return 1\n"
    if not cleaned.strip():
        with pytest.raises(PatchError):
            set_docstring(source, "C.m", text)
        return
    new = set_docstring(source, "C.m", text)
    method = ast.parse(new).body[0].body[0]  # type: ignore[attr-defined]
    assert ast.get_docstring(method) == cleaned
