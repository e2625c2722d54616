"""Fixes that keep what the code does: the file compiles to the same bytecode with them."""

from __future__ import annotations

from structured_agents.tasks.lint_fixes import Change
from structured_agents.tasks.same_code import same_code


def _change(text: str, old: str, new: str, label: str = "X line 1") -> Change:
    at = text.index(old)
    return Change(label, ((at, at + len(old), new),))


def test_moving_code_between_lines_keeps_it_and_moving_it_out_of_a_block_does_not() -> None:
    text = "if x: a()\nif y: b(); c()\nd = 1\n"
    split = _change(text, " a()", "\n    a()")
    moved_out = _change(text, "; c()", "\nc()")
    renamed = _change(text, "d =", "e =")

    assert same_code(text, [split, moved_out, renamed]) == [split]
    assert same_code(text, [split]) == [split]
    assert same_code("if x: a(\n", [split]) == []  # a text that does not compile: nothing is known


def test_nested_ifs_joined_by_and_and_a_conditional_expression_keep_the_code() -> None:
    """SIM102 compiles to the same jumps; SIM108's ``x = 1 if c else 2`` stores once, and keeps
    the code once both are compiled with assigned conditional expressions spelled out."""
    nested = "def f(a, b):\n    if a:\n        if b:\n            g()\n    return 1\n"
    ternary = "def f(c):\n    if c:\n        o.x[k] = 1\n    else:\n        o.x[k] = h(2 if d else 3)\n"
    joined = _change(nested, "if a:\n        if b:\n            g()", "if a and b:\n        g()")
    old = ternary[ternary.index("if c:") : ternary.rindex("\n")]
    expression = _change(ternary, old, "o.x[k] = 1 if c else h(2 if d else 3)")
    flipped = _change(ternary, old, "o.x[k] = h(2 if d else 3) if c else 1")
    other_target = _change(ternary, old, "o.y[k] = 1 if c else h(2 if d else 3)")
    swapped = _change(nested, "if a:\n        if b:", "if b:\n        if a:")

    assert same_code(nested, [joined]) == [joined]
    assert same_code(nested, [swapped]) == []
    assert same_code(ternary, [expression]) == [expression]
    assert same_code(ternary, [flipped]) == same_code(ternary, [other_target]) == []


def test_a_local_variable_may_be_renamed_an_argument_a_global_or_a_read_name_not() -> None:
    local = "def f(c):\n    for i in c:\n        g()\n"
    module = "for i in c:\n    g()\n"
    argument = "def f(i):\n    return 1\n"
    reads = "def f(c):\n    for i in c:\n        g(locals())\n"

    assert same_code(local, [c := _change(local, "for i", "for _i")]) == [c]
    assert same_code(module, [_change(module, "for i", "for _i")]) == []  # the module's attribute
    assert same_code(argument, [_change(argument, "f(i)", "f(_i)")]) == []  # a keyword callers pass
    assert same_code(reads, [_change(reads, "for i", "for _i")]) == []


def test_constants_count_by_type_and_value() -> None:
    text = "def f():\n    return 1\n"

    assert same_code(text, [_change(text, "1", "1.0")]) == []
    assert same_code(text, [_change(text, "1", "True")]) == []
    assert same_code(text, [c := _change(text, "return 1", "return (1)")]) == [c]
