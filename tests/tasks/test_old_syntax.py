"""Syntax older Pythons lack, read from the tree where ruff's lowest target cannot tell."""

from __future__ import annotations

import pytest

from structured_agents.tasks.old_syntax import older_syntax

PY2_COMPATIBLE = """\
import sys


def write(out, items, *rest, **options):
    first, rest = items[0], items[1:]
    (a, b) = rest[:2]
    out.write("%s: %d" % (first, len(rest)))
    out.write(b"raw")
    try:
        return dict((k, v) for k, v in options.items())
    except KeyError as err:
        raise ValueError(str(err))
    return [x for x in rest if x] + list(rest) + [first]
"""
"""Code Python 2.5 runs (simplejson's idiom): nothing in it is newer."""


@pytest.mark.parametrize(
    ("text", "version", "message"),
    [
        ("x = 1\ny = f'{x}'\n", (3, 6), "an f-string"),
        ("x: int = 1\n", (3, 6), "a variable annotation"),
        ("x = 1_000\n", (3, 6), "an underscore in a number"),
        ("async def f():\n    pass\n", (3, 5), "async or await"),
        ("a = (1, *b)\n", (3, 5), "unpacking into a display ([*a, *b])"),
        ("a = {**b}\n", (3, 5), "unpacking into a dict display ({**a})"),
        ("f(*a, *b)\n", (3, 5), "more than one unpacking in a call"),
        ("c = a @ b\n", (3, 5), "the @ operator"),
        ("def f():\n    yield from g()\n", (3, 3), "yield from"),
        ("try:\n    pass\nexcept E as e:\n    raise F from e\n", (3, 0), "raise ... from"),
        ("def f():\n    x = 1\n    def g():\n        nonlocal x\n", (3, 0), "nonlocal"),
        ("a, *b = c\n", (3, 0), "a starred assignment target"),
        ("def f(a, *, b):\n    pass\n", (3, 0), "a keyword-only parameter"),
        ("def f(a: int):\n    pass\n", (3, 0), "a parameter annotation"),
        ("def f() -> int:\n    pass\n", (3, 0), "a return annotation"),
        ("s = {1, 2}\n", (2, 7), "a set display or a set or dict comprehension"),
        ("with a as x, b as y:\n    pass\n", (2, 7), "several context managers in one with"),
    ],
)
def test_each_construct_needs_the_python_that_added_it(
    text: str, version: tuple[int, int], message: str
) -> None:
    older = (version[0], version[1] - 1) if version[1] else (2, 7)
    expected = f"{message} needs Python {version[0]}.{version[1]}"

    assert older_syntax(text, older) == {expected: 1}
    assert not older_syntax(text, version)  # that Python has it


def test_code_python_2_5_runs_holds_nothing_newer() -> None:
    assert not older_syntax(PY2_COMPATIBLE, (2, 5))


def test_constructs_are_counted_so_a_change_is_compared_with_the_original() -> None:
    text = "a = f'{x}' + f'{y:{width}}'\nb = 1_0 + 2_0\n"

    assert older_syntax(text, (3, 5)) == {
        "an f-string needs Python 3.6": 2,  # the nested format spec is part of its f-string
        "an underscore in a number needs Python 3.6": 2,
    }


def test_a_text_that_does_not_parse_has_nothing_to_report() -> None:
    assert not older_syntax("def f(:\n", (2, 7))
