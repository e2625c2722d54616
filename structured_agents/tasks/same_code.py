"""Which of a file's fixes keep what its code does: the file compiles to the same bytecode.

Without a check command nothing runs the code, yet some fixes are known to keep it:
CPython compiles the file with the fix to the same instructions, constants and names as without
it, only on other lines. A block put on its own line (E701) and statements parted at their
semicolon (E702) do, and so do nested ``if`` statements joined by ``and`` (SIM102: the compiler
emits the same jumps) and an unused loop variable renamed ``_name`` (B007: a function's local
variables are slots, their names only labels), where the function cannot read its own names
(it calls none of :data:`~structured_agents.tasks.lint_source.NAME_READERS`). A conditional
expression for an ``if``/``else`` assignment (SIM108) does not: it stores once instead of
twice, the same result by other instructions. So both texts are compiled with each such
assignment written as the ``if``/``else`` it stands for (:class:`_Spelled`), a rewrite that
keeps what the code does (the test, then one branch's value, then the target's store, in both):
a SIM108 fix then compiles as the statement it replaces.

Compared, for the module and every function, class and comprehension in it: the instructions,
the exception table, the constants (code objects recursively), the global and attribute names,
the arguments' names, the closure's names and the flags. The local variables' names may differ
where their number does not. Line numbers and column positions are not compared. The bytecode is
this interpreter's: a fix that keeps it keeps the code's meaning in the language, which every
supported Python then compiles alike.
"""

from __future__ import annotations

import ast
import types
import warnings
from collections.abc import Sequence
from typing import Any

from structured_agents import syntax
from structured_agents.tasks.lint_fixes import Change, apply_changes
from structured_agents.tasks.lint_source import NAME_READERS

__all__ = ["same_code"]


def _constant(value: object) -> object:
    if isinstance(value, types.CodeType):
        return _shape(value)
    if isinstance(value, (tuple, frozenset)):
        return (
            type(value).__name__,
            tuple(sorted(map(repr, value))) if isinstance(value, frozenset) else tuple(map(_constant, value)),
        )
    return (type(value).__name__, repr(value))


def _shape(code: types.CodeType) -> tuple[Any, ...]:
    """What ``code`` does, without its lines and positions (see the module docstring)."""
    arguments = code.co_argcount + code.co_kwonlyargcount
    arguments += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    named = bool(NAME_READERS & set(code.co_names))
    return (
        code.co_code,
        code.co_exceptiontable if hasattr(code, "co_exceptiontable") else b"",
        tuple(_constant(value) for value in code.co_consts),
        code.co_names,
        code.co_varnames if named else code.co_varnames[:arguments],
        len(code.co_varnames),
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        code.co_cellvars,
        code.co_freevars,
        code.co_flags,
        code.co_name,
        code.co_qualname if hasattr(code, "co_qualname") else "",
    )


class _Spelled(ast.NodeTransformer):
    """Each ``x = a if c else b`` as ``if c: x = a`` ``else: x = b`` (see the module docstring)."""

    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        self.generic_visit(node)
        value = node.value
        if not isinstance(value, ast.IfExp):
            return node
        body, orelse = (
            self.visit_Assign(ast.copy_location(ast.Assign(targets=node.targets, value=branch), node))
            for branch in (value.body, value.orelse)
        )
        return ast.copy_location(ast.If(test=value.test, body=[body], orelse=[orelse]), node)


def _compiled(text: str) -> tuple[Any, ...] | None:
    """``text``'s bytecode without lines and positions, conditional expressions assigned spelled
    out (:class:`_Spelled`), or None where it does not compile."""
    try:
        tree = ast.fix_missing_locations(_Spelled().visit(syntax.parse(text, "<lint>")))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _shape(compile(tree, "<lint>", "exec", dont_inherit=True))
    except (SyntaxError, ValueError):
        return None


def same_code(text: str, changes: Sequence[Change]) -> list[Change]:
    """The ``changes`` of ``text`` with which it compiles to the same bytecode. Those that only
    move code between lines (their edits remove and write nothing but whitespace, line
    continuations and semicolons) are tried together first (bottle 0.12.25's 119 one-line
    blocks: one compilation), and the others together; one at a time only where a group does
    not agree."""
    before = _compiled(text) if changes else None
    if before is None:
        return []
    moving = [change for change in changes if all(_moves(text, edit) for edit in change.edits)]
    others = [change for change in changes if change not in moving]
    return [change for group in (moving, others) for change in _agreeing(text, group, before)]


_LAYOUT = " \t\r\n\\;"
"""What an edit that only moves code between lines removes and writes."""


def _moves(text: str, edit: tuple[int, int, str]) -> bool:
    start, end, content = edit
    return not text[start:end].strip(_LAYOUT) and not content.strip(_LAYOUT)


def _agreeing(text: str, group: Sequence[Change], before: tuple[Any, ...]) -> list[Change]:
    if not group:
        return []
    together, applied, _ = apply_changes(text, group)
    if len(applied) == len(group) and _compiled(together) == before:
        return list(group)
    return [change for change in group if _compiled(apply_changes(text, [change])[0]) == before]
