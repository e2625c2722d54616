"""The lines of a module that no supported Python runs: branches of a version test that is
false on every version from the codebase's lowest on.

pyasn1 0.6.0 supports Python 3.8 and up and still keeps ``if sys.version_info[0] <= 2:``
branches. A reviewer sent back fixes made inside one (a ``raise ... from err`` and f-strings in
its ``prettyIn``): such a branch is deleted, not modernised, and ruff's UP036 deletes it where
it can. So no fix but UP036's is offered on these lines (:func:`dead_lines`).

A test counts where it compares ``sys.version_info`` (or ``sys.version_info[0]``, ``[:2]``,
``.major``, ``.minor``) with literal integers or a tuple of them, alone or joined by ``and``/
``or``; its value is worked out for every version from the lowest to 3.30. An ``if`` whose
test is false for all of them has a dead body; one whose test is true for all of them, a dead
``else``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from structured_agents.tasks.lint_source import Source

__all__ = ["dead_lines"]

_NEWEST_MINOR = 30
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
Version = tuple[int, int]


def _is_version_info(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "version_info"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _side(node: ast.expr, version: Version) -> int | tuple[int, ...] | None:
    """The value of ``node`` on Python ``version``: a literal, ``sys.version_info`` (its first two
    numbers: a tuple of three or more compares as they do), an index, slice or ``.major``/
    ``.minor`` of it; None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Tuple):
        items = [item.value for item in node.elts if isinstance(item, ast.Constant)]
        numbers = [item for item in items if type(item) is int]
        return tuple(numbers) if len(numbers) == len(node.elts) else None
    if _is_version_info(node):
        return version
    if isinstance(node, ast.Attribute) and _is_version_info(node.value):
        return {"major": version[0], "minor": version[1]}.get(node.attr)
    if isinstance(node, ast.Subscript) and _is_version_info(node.value):
        index = node.slice
        if isinstance(index, ast.Constant) and type(index.value) is int and index.value in (0, 1):
            return version[index.value]
        if (
            isinstance(index, ast.Slice)
            and index.lower is None
            and index.step is None
            and isinstance(index.upper, ast.Constant)
            and type(index.upper.value) is int
            and index.upper.value in (1, 2)
        ):
            return version[: index.upper.value]
    return None


def _value(test: ast.expr, version: Version) -> bool | None:
    """The version test ``test`` on Python ``version``; None where it is no version test."""
    if isinstance(test, ast.BoolOp):
        values = [_value(part, version) for part in test.values]
        if any(value is None for value in values):
            return None
        return all(values) if isinstance(test.op, ast.And) else any(values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        value = _value(test.operand, version)
        return None if value is None else not value
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    compare = _COMPARE.get(type(test.ops[0]))
    left, right = _side(test.left, version), _side(test.comparators[0], version)
    if compare is None or left is None or right is None or type(left) is not type(right):
        return None
    if isinstance(left, tuple) and isinstance(right, tuple):
        # sys.version_info holds the micro version too: (3, 8) >= (3, 8) as (3, 8, 0) would
        width = min(len(left), len(right))
        left, right = left[:width], right[:width]
    return compare(left, right)


def _constant(test: ast.expr, lowest: Version) -> bool | None:
    """The value ``test`` has on every Python from ``lowest`` on, where it has one value."""
    if _value(test, lowest) is None:  # no version test: on no Python either
        return None
    values = {
        _value(test, (3, minor)) for minor in range(lowest[1] if lowest[0] == 3 else 0, _NEWEST_MINOR + 1)
    }
    if lowest[0] < 3:
        values |= {_value(test, (2, minor)) for minor in range(lowest[1], 8)}
    return values.pop() if len(values) == 1 else None


def _span(statements: list[ast.stmt]) -> range:
    first, last = statements[0], statements[-1]
    return range(first.lineno, (last.end_lineno or last.lineno) + 1)


def dead_lines(module: Source, lowest: Version | None) -> set[int]:
    """The lines of ``module`` that no Python from ``lowest`` on runs (see the module
    docstring); none where the lowest is not known."""
    if lowest is None:
        return set()
    dead: set[int] = set()
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.If):
            continue
        value = _constant(node.test, lowest)
        if value is False:
            dead.update(_span(node.body))
        elif value is True and node.orelse:
            dead.update(_span(node.orelse))
    return dead
