"""``SIM115`` (a file opened without a context manager): the ``with`` statement the code spells
out by hand.

Ruff has no fix for SIM115. Two shapes close the file themselves, and become a ``with``:

- ``f = open(name)``, then a ``try:`` whose ``finally:`` only closes it (defusedxml 0.7.1's
  ``expatbuilder.parse``). ``with open(name) as f:`` takes the assignment's and the ``try:``'s
  lines, and the ``finally:`` goes; the block keeps its indent, so nothing in it changes.
  The two run the same: a file's ``__enter__`` returns the file, and its ``__exit__`` closes it
  however the block ends.
- ``f = open(name)``, statements, then ``f.close()`` in the same block (ply 3.11's
  ``f = open(filename); data = f.read(); f.close()``). The statements move one indent step in
  (the file's own, :func:`~structured_agents.tasks.one_line_blocks.step_of`), and the close goes.
  The file is now closed when a statement raises, too. Not where a statement may leave the
  block early (``return``, ``break``, ``continue``, ``yield``): the original left the file open
  there, and a ``return f`` would now return it closed; nor where a string spans lines among
  them, whose text the indent would change.

In either, the opened file's name is bound by the assignment alone (a plain name, not rebound
in the block), nothing but spaces and line breaks stands between the parts that go (a comment
there would be lost), and the close is the bare ``f.close()`` on a line of its own. Any other
SIM115 (``open(name).read()``, a file kept on ``self``) is left as it is.
"""

from __future__ import annotations

import ast

from structured_agents.tasks.lint_fixes import Edit
from structured_agents.tasks.lint_source import Source
from structured_agents.tasks.one_line_blocks import step_of

__all__ = ["opened_with"]

_LEAVES = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)


def _closes(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` is ``name.close()``."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(call := statement.value, ast.Call)
        and not call.args
        and not call.keywords
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "close"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
    )


def _rebinds(statements: list[ast.stmt], name: str) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
        for statement in statements
        for node in ast.walk(statement)
    )


def _spans_strings(statements: list[ast.stmt]) -> bool:
    """Whether a string literal among ``statements`` spans lines (an indent would enter it)."""
    return any(
        isinstance(node, ast.Constant | ast.JoinedStr) and node.lineno != node.end_lineno
        for statement in statements
        for node in ast.walk(statement)
    )


def opened_with(module: Source, row: int, at: int, _end: int) -> list[tuple[str, tuple[Edit, ...]]]:
    """The candidate for the ``SIM115`` finding whose call starts at ``at`` on line ``row``."""
    for assign in module.at(row, (ast.Assign,)):
        if not (
            len(assign.targets) == 1
            and isinstance(target := assign.targets[0], ast.Name)
            and module.start(assign.value) == at
        ):
            continue
        block = module.block_of(assign)
        if block is None or block[-1] is assign or module.own_lines(assign) is None:
            return []
        name, call = target.id, module.text[module.start(assign.value) : module.end(assign.value)]
        after = block[block.index(assign) + 1 :]
        opened = f"with {call} as {name}:"
        if isinstance(after[0], ast.Try):
            return _try_finally(module, assign, after[0], name, opened)
        return _closed_after(module, assign, after, name, opened)
    return []


def _try_finally(
    module: Source, assign: ast.Assign, statement: ast.Try, name: str, opened: str
) -> list[tuple[str, tuple[Edit, ...]]]:
    if statement.handlers or statement.orelse or len(statement.finalbody) != 1:
        return []
    close = statement.finalbody[0]
    closing = module.own_lines(close)
    if not _closes(close, name) or _rebinds(statement.body, name) or closing is None:
        return []
    header = module.start(statement)
    if module.text[module.end(assign) : header].strip() or not module.text.startswith("try", header):
        return []
    colon = header + len("try")
    while module.text[colon : colon + 1] in (" ", "\t"):
        colon += 1
    if module.text[colon : colon + 1] != ":":
        return []
    body_end = module.starts[statement.body[-1].end_lineno or statement.lineno]
    if module.text[body_end : module.start(close)].strip() != "finally:":
        return []
    edits = ((module.start(assign), colon + 1, opened), (body_end, closing[1], ""))
    return [(f"Open it in a `with` statement (the `finally:` closes `{name}`)", edits)]


def _closed_after(
    module: Source, assign: ast.Assign, after: list[ast.stmt], name: str, opened: str
) -> list[tuple[str, tuple[Edit, ...]]]:
    at = next((i for i, statement in enumerate(after) if _closes(statement, name)), None)
    closing = module.own_lines(after[at]) if at else None
    if not at or closing is None:
        return []  # no close on its own lines in the block, or nothing between it and the open
    inside = after[:at]
    if _rebinds(inside, name) or _spans_strings(inside):
        return []
    if any(isinstance(node, _LEAVES) for statement in inside for node in ast.walk(statement)):
        return []
    close = after[at]
    between = module.text[module.end(inside[-1]) : module.start(close)]
    if between.strip():
        return []  # a comment before the close
    step = step_of(module)
    first, last = inside[0].lineno, inside[-1].end_lineno or inside[-1].lineno
    indents = tuple(
        (module.starts[line - 1], module.starts[line - 1], step)
        for line in range(first, last + 1)
        if module.lines[line - 1].strip()
    )
    edits = ((module.start(assign), module.end(assign), opened), *indents, (*closing, ""))
    return [(f"Open it in a `with` statement (in place of `{name}.close()`)", edits)]
