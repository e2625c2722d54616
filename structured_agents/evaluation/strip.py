"""Remove the docstrings of every function, method and class of a module (libcst), or of
those with the given qualified names only (``Outer.method``, ``f.<locals>.g``).

Module docstrings stay: the docstring task does not write them, and they are part of what a
codebase's reader (and the docstring bundle's style detection) sees of the project. A body
left empty gets ``pass``; comments above a removed docstring move to the statement after it.
Everything else is kept byte for byte.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypeVar

import libcst as cst

__all__ = ["strip_docstrings"]

_Definition = TypeVar("_Definition", cst.FunctionDef, cst.ClassDef)


def _is_docstring(statement: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return len(statement.body) == 1 and _is_docstring(statement.body[0])
    if not isinstance(statement, cst.Expr):
        return False
    value = statement.value
    if isinstance(value, cst.SimpleString):
        return isinstance(value.evaluated_value, str)
    if isinstance(value, cst.ConcatenatedString):
        return isinstance(value.evaluated_value, str)
    return False


def _without_first(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    removed, rest = body[0], list(body[1:])
    if not rest:
        return [cst.SimpleStatementLine([cst.Pass()], leading_lines=_leading(removed))]
    rest[0] = rest[0].with_changes(leading_lines=[*_leading(removed), *_leading(rest[0])])
    return rest


def _leading(statement: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    lines = getattr(statement, "leading_lines", ())
    return list(lines) if isinstance(lines, Sequence) else []


class _Stripper(cst.CSTTransformer):
    def __init__(self, only: Collection[str] | None) -> None:
        super().__init__()
        self.removed = 0
        self._only = only
        self._scopes: list[tuple[str, bool]] = []
        """The definitions being visited, innermost last: qualified name, whether a class."""

    def _enter(self, name: str, is_class: bool) -> None:
        if self._scopes:
            outer, in_class = self._scopes[-1]
            name = f"{outer}.{name}" if in_class else f"{outer}.<locals>.{name}"
        self._scopes.append((name, is_class))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter(node.name.value, is_class=False)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter(node.name.value, is_class=True)

    def _strip(self, node: _Definition) -> _Definition:
        qualname, _ = self._scopes.pop()
        if self._only is not None and qualname not in self._only:
            return node
        body = node.body
        if isinstance(body, cst.IndentedBlock):
            if body.body and _is_docstring(body.body[0]):
                self.removed += 1
                return node.with_changes(body=body.with_changes(body=_without_first(body.body)))
        elif isinstance(body, cst.SimpleStatementSuite) and body.body and _is_docstring(body.body[0]):
            self.removed += 1
            return node.with_changes(body=body.with_changes(body=list(body.body[1:]) or [cst.Pass()]))
        return node

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        return self._strip(updated_node)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        return self._strip(updated_node)


def strip_docstrings(source: str, only: Collection[str] | None = None) -> tuple[str, int]:
    """``source`` without its function, method and class docstrings (``only``: those of the
    definitions with these qualified names), and how many were removed;
    ``libcst.ParserSyntaxError`` when it does not parse."""
    module = cst.parse_module(source)
    stripper = _Stripper(only)
    return module.visit(stripper).code, stripper.removed
