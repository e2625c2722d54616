"""Some of ruff's own fixes, written the way a strict reviewer asked for them.

Each refinement changes a fix's text into an equivalent one, never its meaning:

- ``SIM108``: ruff writes ``x = a if not c else b``; the reviewer asked for the positive form,
  ``x = b if c else a``. Only where neither branch is itself an unparenthesized conditional or
  lambda, whose precedence would regroup the expression. A branch that is an operation
  (``size - self.__size[key] if key in self.__data else size``) is parenthesized: the reviewer
  asked not to leave the reader to work out that the subtraction binds first.
- ``RUF005``: ruff writes ``[a, *list(rows)]`` for ``[a] + list(rows)``; unpacking already
  iterates ``rows`` once, so the copy goes: ``[a, *rows]``. Not in a file that binds the name
  ``list`` itself.

A fix whose text does not parse, or that holds nothing to refine, is left as ruff wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import libcst as cst

__all__ = ["REFINED", "refine"]

_BINDS_LIST = re.compile(r"(?m)^\s*(?:list\s*=|def\s+list\b|class\s+list\b)|\bas\s+list\b|\bimport\s+list\b")


class _PositiveTernary(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self._depth = 0

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        self._depth += 1
        return True

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        self._depth -= 1
        node = updated_node
        if self._depth == 0:  # the conditional the fix wrote, not one it carries over
            node = node.with_changes(body=_grouped(node.body), orelse=_grouped(node.orelse))
        test = node.test
        if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
            return node
        if not all(_atomic(branch) for branch in (node.body, node.orelse)):
            return node
        return node.with_changes(test=test.expression, body=node.orelse, orelse=node.body)


_OPERATIONS = (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison)


def _grouped(branch: cst.BaseExpression) -> cst.BaseExpression:
    """``branch`` in parentheses when it is an unparenthesized operation."""
    if isinstance(branch, _OPERATIONS) and not branch.lpar:
        return branch.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return branch


class _NoListCopy(cst.CSTTransformer):
    def leave_StarredElement(
        self, original_node: cst.StarredElement, updated_node: cst.StarredElement
    ) -> cst.StarredElement:
        value = updated_node.value
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "list"
            and len(value.args) == 1
            and value.args[0].star == ""
            and value.args[0].keyword is None
            and not value.lpar
        ):
            return updated_node.with_changes(value=value.args[0].value)
        return updated_node


def _atomic(branch: cst.BaseExpression) -> bool:
    """Whether ``branch`` keeps its grouping wherever it stands in a conditional expression."""
    return bool(getattr(branch, "lpar", ())) or not isinstance(branch, cst.IfExp | cst.Lambda)


def _rewrite(content: str, transformer: cst.CSTTransformer) -> str:
    try:
        module = cst.parse_module(content)
    except cst.ParserSyntaxError:
        return content
    return module.visit(transformer).code


def _sim108(content: str, _text: str) -> str:
    return _rewrite(content, _PositiveTernary())


def _ruf005(content: str, text: str) -> str:
    return content if _BINDS_LIST.search(text) else _rewrite(content, _NoListCopy())


REFINED: dict[str, Callable[[str, str], str]] = {"SIM108": _sim108, "RUF005": _ruf005}
"""Rules whose fixes are refined, and how (a fix's text and the file's text in, the text out)."""


def refine(diagnostic: Mapping[str, Any], text: str) -> dict[str, Any]:
    """``diagnostic`` (a ruff finding with a fix, on the file's ``text``) with its fix's edits
    refined (see the module docstring); unchanged for any other rule."""
    refiner = REFINED.get(str(diagnostic.get("code")))
    fix = diagnostic.get("fix")
    if refiner is None or not isinstance(fix, Mapping):
        return dict(diagnostic)
    edits = [
        {**edit, "content": refiner(str(edit.get("content", "")), text)}
        if edit.get("content")
        else dict(edit)
        for edit in fix.get("edits") or []
    ]
    return {**diagnostic, "fix": {**fix, "edits": edits}}
