"""A Python text as the lint task reads it: its lines, syntax tree, each node's parent, and
positions in ruff's terms (row and column from 1, in characters) and in ``ast``'s (UTF-8 bytes);
and its bytecode (:func:`compiled`)."""

from __future__ import annotations

import ast
import bisect
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from structured_agents import syntax
from structured_agents.jobs.source import split_lines
from structured_agents.tasks.lint_fixes import Edit

__all__ = [
    "NAME_READERS",
    "PURE_CALLS",
    "SCOPES",
    "Comprehension",
    "Source",
    "compiled",
    "findings_at",
    "import_bound",
    "location_of",
    "offset_of",
    "own_nodes",
    "reads_only",
    "row_of",
    "unsafe_fix",
]

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
"""The nodes that open a scope of their own."""
Comprehension = ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
"""The comprehensions, whose ``for`` clauses bind names of their own."""

NAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir"})
"""Builtins through which a function may see its local variables' names."""

PURE_CALLS = frozenset(
    {
        *("isinstance", "issubclass", "len", "hasattr", "getattr", "callable", "type", "bool", "any", "all"),
        *("startswith", "endswith", "find", "rfind", "count", "strip", "lstrip", "rstrip", "lower", "upper"),
        *("isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower", "isnumeric", "isidentifier"),
        *("get", "keys", "values", "items", "match", "search", "fullmatch"),
    }
)
"""Calls an expression reads without doing anything (a type or length test, a string test, a
lookup, a regular expression match)."""


def import_bound(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    return {alias.asname or alias.name.split(".")[0] for alias in node.names}


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``scope`` that belong to its own scope: not those of the functions,
    classes or lambdas nested in it, whose definitions (and their names) do belong to it."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, SCOPES):
            pending.extend(ast.iter_child_nodes(node))


def reads_only(node: ast.AST, also: frozenset[str] = frozenset()) -> bool:
    """Whether evaluating ``node`` only reads: it calls nothing but :data:`PURE_CALLS` (and the
    names ``also`` allows), and does not await, yield or assign (``:=``)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr):
            return False
        if isinstance(inner, ast.Call):
            func = inner.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name not in PURE_CALLS and name not in also:
                return False
    return True


class Source:
    """A parsed text: its lines, tree and each node's parent."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.tree = syntax.parse(text)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def offset(self, row: int, byte_offset: int) -> int:
        """The character offset of a position as ``ast`` gives it (line from 1, UTF-8 bytes)."""
        line = self.lines[row - 1].encode() if 1 <= row <= len(self.lines) else b""
        return self.starts[min(row, len(self.lines) + 1) - 1] + len(
            line[:byte_offset].decode("utf-8", "replace")
        )

    def start(self, node: Any) -> int:
        return self.offset(node.lineno, node.col_offset)

    def end(self, node: Any) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)

    def at(self, row: int, kinds: tuple[type[ast.AST], ...]) -> Iterator[Any]:
        """The nodes of ``kinds`` starting on line ``row``."""
        for node in ast.walk(self.tree):
            if isinstance(node, kinds) and getattr(node, "lineno", None) == row:
                yield node

    def scope_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost function, class or lambda ``node`` stands in (None: the module)."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, SCOPES):
            parent = self.parents.get(parent)
        return parent

    def own_lines(self, node: ast.stmt) -> tuple[int, int] | None:
        """The offsets where ``node``'s lines start and end, where it has them to itself (but
        for spaces and line breaks); else None."""
        first = self.starts[node.lineno - 1]
        last = self.starts[min(node.end_lineno or node.lineno, len(self.lines))]
        beside = self.text[first : self.start(node)] + self.text[self.end(node) : last]
        return None if beside.strip() else (first, last)

    def block_of(self, statement: ast.stmt) -> list[ast.stmt] | None:
        """The list of statements ``statement`` stands in (its parent's body, ``else:``,
        ``finally:`` or case), or None."""
        parent = self.parents.get(statement)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and statement in block:
                return block
        return None

    def handler_of(self, node: ast.AST) -> ast.ExceptHandler | None:
        """The ``except`` clause ``node`` stands in (not across a function or class)."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, SCOPES):
            if isinstance(parent, ast.ExceptHandler):
                return parent
            parent = self.parents.get(parent)
        return None


def row_of(finding: Mapping[str, Any]) -> int:
    """The line a ruff finding starts on (0: none given)."""
    return int((finding.get("location") or {}).get("row", 0))


def offset_of(text: str, location: Mapping[str, Any], starts: Sequence[int] | None = None) -> int:
    """The character offset of a ruff location (row and column from 1) in ``text`` (whose line
    starts are ``starts``, when known)."""
    row, column = int(location.get("row", 1)), int(location.get("column", 1))
    if starts is None:
        starts = [0]
        for line in split_lines(text)[: row - 1]:
            starts.append(starts[-1] + len(line))
    return starts[min(row, len(starts)) - 1] + column - 1


def findings_at(
    module: Source, diagnostics: Iterable[Mapping[str, Any]], code: str
) -> dict[int, Mapping[str, Any]]:
    """The findings of rule ``code`` among ``diagnostics`` (ruff's, on ``module``), by the
    character offset ruff reports each at."""
    return {
        offset_of(module.text, finding.get("location") or {}, module.starts): finding
        for finding in diagnostics
        if finding.get("code") == code
    }


def location_of(module: Source, offset: int) -> dict[str, int]:
    """Ruff's location (row and column from 1, in characters) of a character offset."""
    row = max(1, min(bisect.bisect_right(module.starts, offset), len(module.starts) - 1))
    return {"row": row, "column": offset - module.starts[row - 1] + 1}


def unsafe_fix(module: Source, message: str, edits: Sequence[Edit]) -> dict[str, Any]:
    """A ruff-shaped ``unsafe`` fix of ``module``'s text doing ``edits``, described by ``message``."""
    shaped = [
        {"content": content, "location": location_of(module, start), "end_location": location_of(module, end)}
        for start, end, content in edits
    ]
    return {"applicability": "unsafe", "message": message, "edits": shaped}


def compiled(text: str, path: str) -> types.CodeType:
    """``text`` compiled as the module ``path``, with no future import of the caller's and no
    warning (an invalid escape's ``SyntaxWarning``: the text still compiles); SyntaxError or
    ValueError where it does not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(text, path, "exec", dont_inherit=True)
