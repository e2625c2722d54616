"""A definition's code as a model is shown it: bounded, its docstring left out.

:func:`outline` is what a prompt shows of a target: a function whole up to
:data:`OUTLINE_LINES` lines (the rest elided with ``...``), a class with its methods cut to their
signatures (``...`` for each body), so a model sees what the code does without the prompt
growing with it. :func:`body_of` is what follows a definition's docstring: its body, at one
level of indentation.
"""

from __future__ import annotations

import ast
import textwrap

from structured_agents import syntax

__all__ = ["OUTLINE_LINES", "body_of", "outline"]

OUTLINE_LINES = 30
"""Most lines :func:`outline` shows of a definition (a longer one is cut, ``...`` marking the cut)."""

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _definition(text: str) -> Definition | None:
    """The one definition ``text`` holds (None: it holds another statement, several, or does
    not parse)."""
    try:
        tree = syntax.parse(text)
    except SyntaxError:
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    return node if isinstance(node, Definition) and node.body else None


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> range:
    """The lines (0-based) of ``node``'s docstring statement, empty when it has none."""
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.end_lineno is not None
    ):
        return range(first.lineno - 1, first.end_lineno)
    return range(0)


def _cut(lines: list[str], limit: int) -> str:
    if len(lines) <= limit:
        return "".join(lines)
    last = lines[limit - 1]
    indent = last[: len(last) - len(last.lstrip())] if last.strip() else "    "
    return "".join(lines[: limit - 1]) + f"{indent}...\n"


def outline(source: str, limit: int = OUTLINE_LINES) -> str:
    """The definition ``source`` as a prompt shows it (see the module docstring), dedented,
    ending on a newline; text that is not one definition comes back dedented and cut."""
    text = textwrap.dedent(source)
    lines = text.splitlines(keepends=True)
    node = _definition(text)
    if node is None:
        return _cut(lines, limit)
    skipped = set(_docstring_lines(node))
    elided: dict[int, str] = {}  # 0-based line -> the ``...`` that stands for a method's body there
    if isinstance(node, ast.ClassDef):
        for child in node.body:
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = child.body[0]
                if first.lineno == child.lineno:  # ``def f(): return 1``: one line, kept
                    continue
                body = range(first.lineno - 1, child.end_lineno or first.lineno)
                skipped.update(body)
                elided[body.start] = " " * first.col_offset + "...\n"
    kept = [
        elided.get(index, line) for index, line in enumerate(lines) if index in elided or index not in skipped
    ]
    return _cut(kept, limit)


def body_of(source: str) -> str:
    """The statements of a definition's body, dedented to one level of four spaces, its
    docstring left out (what a reviewer score reads after a candidate docstring)."""
    text = textwrap.dedent(source)
    node = _definition(text)
    if node is None:
        return ""
    skipped = _docstring_lines(node)
    body = node.body[1:] if skipped else node.body
    if not body or body[0].lineno == node.lineno:
        return ""
    lines = text.splitlines(keepends=True)[body[0].lineno - 1 : node.end_lineno]
    return textwrap.indent(textwrap.dedent("".join(lines)), "    ")
