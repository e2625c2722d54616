"""A string literal too long for its line, split into implicitly concatenated parts that fit
and parse to the same string."""

from __future__ import annotations

import ast

import pytest

from structured_agents.tasks.lint_strings import split_strings


def _call(*arguments: str) -> list[str]:
    return ["def f(self, name, plugin):\n", "    raise ValueError(\n", *arguments, "    )\n"]


def _value(lines: list[str]) -> str:
    tree = ast.parse("".join(lines))
    raised = next(node for node in ast.walk(tree) if isinstance(node, ast.Call))
    return ast.dump(raised.args[0])


PLUGGY = '        f"Plugin name already registered: {name}={plugin}\\n{self._name2plugin}"\n'


def test_a_long_f_string_is_split_after_its_newline_escape_where_that_fits() -> None:
    lines = _call(PLUGGY)

    split = split_strings(lines, 0, len(lines), 72, set())

    assert split[2:4] == [
        '        f"Plugin name already registered: {name}={plugin}\\n"\n',
        '        f"{self._name2plugin}"\n',
    ]
    assert _value(split) == _value(lines)


def test_else_after_the_last_space_that_fits_and_a_part_without_a_field_is_no_f_string() -> None:
    lines = _call('        f"the {{literal}} braces are kept and then the {name} comes after them",\n')

    split = split_strings(lines, 0, len(lines), 50, set())

    assert split[2:4] == [
        '        "the {literal} braces are kept and "\n',
        '        f"then the {name} comes after them",\n',
    ]
    assert _value(split) == _value(lines)


@pytest.mark.parametrize(
    "line",
    [
        '        f"{name}{plugin}{self._name2plugin}{self._hookcallers_of_all_those}"\n',  # no space
        '        b"bytes are left as they are, however long the literal is written"\n',
        '        "two literals on one line", "the second of them long enough to pass"\n',
        '        f"a field {plugin!r:>{width}} with a format spec whose space: {name:{fill}}"\n',
    ],
)
def test_a_literal_with_no_place_to_split_or_not_alone_is_left_as_it_is(line: str) -> None:
    lines = _call(line)
    if "{width}" in line:  # split, but never inside a field
        split = split_strings(lines, 0, len(lines), 60, set())
        assert _value(split) == _value(lines)
        assert all(part.count("{") == part.count("}") for part in split[2:-1])
        return
    assert split_strings(lines, 0, len(lines), 50, set()) == lines


def test_a_string_standing_as_a_statement_or_a_line_known_before_is_not_split() -> None:
    statement = ["def f():\n", '    "a docstring long enough to pass the width of forty columns"\n']
    assert split_strings(statement, 0, 2, 40, set()) == statement
    lines = _call(PLUGGY)
    assert split_strings(lines, 0, len(lines), 72, {PLUGGY.rstrip("\n")}) == lines
