"""The filters a bundle's Jinja prompts get besides Jinja's own.

``dedent``: :func:`textwrap.dedent`, so a method's source reads like top-level code.
``signature``: a definition's source cut after its signature, dedented (its decorators and
``def``/``class`` lines, up to the first statement of its body), so a prompt can open the
definition's docstring right after it. Text that does not parse as one definition is
returned dedented, as it is.
``outline``: a definition's source as a prompt shows it, bounded
(:func:`structured_agents.jobs.outline.outline`).

Each takes text: an input the job does not have fails as an undefined name does, and one that
is not a string fails naming the filter, both as template errors (so a batch's check names the
job and template instead of crashing on a ``TypeError``).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable

from jinja2 import TemplateRuntimeError, Undefined

from structured_agents import syntax
from structured_agents.jobs.outline import outline

__all__ = ["FILTERS", "signature"]


def signature(source: str) -> str:
    """The lines of the definition ``source`` up to its body, dedented, ending on a newline."""
    text = textwrap.dedent(source)
    try:
        tree = syntax.parse(text)
    except SyntaxError:
        return text
    node = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or not node.body:
        return text
    first = node.body[0]
    lines = text.splitlines(keepends=True)
    if first.lineno > node.lineno:
        head = "".join(lines[: first.lineno - 1])
    else:  # a body on the ``def`` line: ``def f(): return 1``
        head = "".join(lines[: first.lineno - 1]) + lines[first.lineno - 1][: first.col_offset]
    return head.rstrip() + "\n"


def _on_text(name: str, function: Callable[[str], str]) -> Callable[[object], str]:
    def on_text(value: object) -> str:
        if isinstance(value, Undefined):
            value = str(value)  # StrictUndefined raises UndefinedError; a context placeholder is ""
        if not isinstance(value, str):
            raise TemplateRuntimeError(f"filter {name} takes text, got {type(value).__name__}")
        return function(value)

    return on_text


_TEXT_FILTERS: dict[str, Callable[[str], str]] = {
    "dedent": textwrap.dedent,
    "outline": outline,
    "signature": signature,
}

FILTERS: dict[str, Callable[[object], str]] = {
    name: _on_text(name, function) for name, function in _TEXT_FILTERS.items()
}
