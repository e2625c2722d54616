"""``E701`` (a compound statement's block on its header's line): the block moved to a line of
its own, indented one step under the header; ``E702`` (statements on one line, ``a = 1; b = 2``):
the statement after the semicolon on a line of its own, at the same indent.

``if not data: return None`` becomes::

    if not data:
        return None

Only the whitespace between the colon and the block changes: the block's statements, a comment
after them and the header stay as they were, so the code does the same thing by construction
(the candidate is still verified as every candidate is). The step is the file's own: a tab where
its blocks are indented with tabs, else its smallest indent (four spaces where it has none).
``class Error(Exception): pass`` gets the same. A file's blocks are split together or not at
all (:data:`~structured_agents.tasks.lint_idioms.FAMILIES`): where the model decides alone
(no check runs), one split among four left was the odd one out (ply 3.11's ``cpp.py``).
A block after a header that spans lines, or one whose colon is followed by anything but spaces
(a line continuation), is left as it is; ruff flags neither. Statements that share a line
are parted only where the first of them starts the line (``if x: a; b`` is a one-line block
first) and nothing but spaces stands around the semicolon.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterator

from structured_agents.tasks.lint_fixes import Edit
from structured_agents.tasks.lint_source import Source

__all__ = ["one_line_block", "statements_apart", "step_of"]

_BLOCKS = ("body", "orelse", "finalbody")
_STEP = "    "


def one_line_block(module: Source, row: int, at: int, _end: int) -> list[tuple[str, tuple[Edit, ...]]]:
    """The candidate for the ``E701`` finding whose colon is at ``at`` on line ``row``."""
    if module.text[at : at + 1] != ":":
        return []
    blocks, step = _layout(module)
    for header, first in blocks.get(row, ()):
        start = module.start(first)
        if start <= at or module.text[at + 1 : start].strip(" \t"):
            continue
        line = getattr(header, "lineno", row) if header is not None else row
        if line != row:
            return []  # a header over several lines
        indent = _indent(module.lines[row - 1])
        return [("Put the block on its own line", ((at + 1, start, "\n" + indent + step),))]
    return []


def statements_apart(module: Source, row: int, at: int, _end: int) -> list[tuple[str, tuple[Edit, ...]]]:
    """The candidate for the ``E702`` finding whose semicolon is at ``at`` on line ``row``."""
    if module.text[at : at + 1] != ";":
        return []
    for first, before, after in _sharing(module).get(row, ()):
        end, start = module.end(before), module.start(after)
        if not end <= at < start or module.text[end:start].strip(" \t") != ";":
            continue
        line_start = module.starts[first.lineno - 1]
        if module.text[line_start : module.start(first)].strip(" \t"):
            return []  # the first statement follows a header's colon
        indent = _indent(module.lines[first.lineno - 1])
        return [("Put the statement on its own line", ((end, start, "\n" + indent),))]
    return []


@functools.lru_cache(maxsize=1)
def _sharing(module: Source) -> dict[int, list[tuple[ast.stmt, ast.stmt, ast.stmt]]]:
    """Each two statements of one block where the second starts on the line the first ends
    on, by that line, with the first statement of the block on that line."""
    found: dict[int, list[tuple[ast.stmt, ast.stmt, ast.stmt]]] = {}
    for _, _, statements in _statement_lists(module.tree):
        first = statements[0]
        for before, after in itertools.pairwise(statements):
            if after.lineno != before.end_lineno:
                first = after
                continue
            found.setdefault(after.lineno, []).append((first, before, after))
    return found


@functools.lru_cache(maxsize=1)
def _layout(module: Source) -> tuple[dict[int, list[tuple[ast.AST | None, ast.stmt]]], str]:
    """The module's blocks by the line their first statement starts on (:func:`_blocks`), and
    its indent (:func:`step_of`), read once for all of a file's findings (bottle 0.12.25 has 127:
    walking its tree for each took 2.4 s); the last module only is kept."""
    blocks: dict[int, list[tuple[ast.AST | None, ast.stmt]]] = {}
    for header, first in _blocks(module.tree):
        blocks.setdefault(first.lineno, []).append((header, first))
    return blocks, step_of(module)


def _blocks(tree: ast.AST) -> Iterator[tuple[ast.AST | None, ast.stmt]]:
    """Each block's first statement, with the node whose header its own line starts (None for an
    ``else:`` or ``finally:``, whose header is the keyword's line alone)."""
    for node, field, statements in _statement_lists(tree):
        yield (node if field == "body" else None), statements[0]


def _statement_lists(tree: ast.AST) -> Iterator[tuple[ast.AST, str, list[ast.stmt]]]:
    """Each block of statements in ``tree``: the node holding it, its field and its statements."""
    for node in ast.walk(tree):
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield node, field, block


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def step_of(module: Source) -> str:
    """One indent of the file: a tab where a block is indented with tabs, else the smallest
    indent of a statement, else four spaces."""
    indents = {
        _indent(module.lines[node.lineno - 1])
        for node in ast.walk(module.tree)
        if isinstance(node, ast.stmt) and node.col_offset > 0
    }
    if any("\t" in indent for indent in indents):
        return "\t"
    spaces = [len(indent) for indent in indents if indent]
    return " " * min(spaces) if spaces else _STEP
