"""Candidate fixes for findings ruff has no fix for, shaped as ruff's own (unsafe) fixes.

For a few common rules a finding without a fix gets one or more candidates, each a small edit
that does what the rule asks and nothing else:

- ``E722`` (bare ``except:``): ``except Exception:``;
- ``B904`` (``raise`` in an ``except`` without ``from``): ``from`` the handled exception (bound
  as ``err`` when the handler binds none), or ``from None``;
- ``F401`` (an unused import ruff will not remove, as in an ``__init__.py``): the explicit
  re-export ``import x as x``;
- ``RUF012`` (a mutable class attribute): annotated ``ClassVar[dict]`` (``list``, ``set``),
  ``from typing import ClassVar`` added once.

:func:`with_candidates` gives them to the lint task as ruff-shaped findings with a fix, so each
is offered, decided and verified as ruff's unsafe fixes are. A finding of any other rule gets
none: it is left as it is (and said so), never rewritten freely; a small model asked to rewrite
such lines wrote nothing that compiled and fixed its finding.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

__all__ = ["CANDIDATE_RULES", "with_candidates"]

Insert = tuple[int, int, str]
"""Insert the string at this position: line (from 1), UTF-8 byte offset in the line (from 0)."""
Candidate = tuple[str, tuple[Insert, ...]]
"""What a candidate does (for its fix's message), and its insertions."""
_MUTABLE = {ast.Dict: "dict", ast.DictComp: "dict", ast.List: "list", ast.ListComp: "list"}
_MUTABLE.update({ast.Set: "set", ast.SetComp: "set"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class _Module:
    """A parsed text: its lines, tree and each node's parent."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.tree = ast.parse(text)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def at(self, row: int, kinds: tuple[type[ast.AST], ...]) -> Iterator[Any]:
        """The nodes of ``kinds`` starting on line ``row``."""
        for node in ast.walk(self.tree):
            if isinstance(node, kinds) and getattr(node, "lineno", None) == row:
                yield node

    def handler_of(self, node: ast.AST) -> ast.ExceptHandler | None:
        """The ``except`` clause ``node`` stands in (not across a function or class)."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, _SCOPES):
            if isinstance(parent, ast.ExceptHandler):
                return parent
            parent = self.parents.get(parent)
        return None

    def import_line(self) -> int:
        """Where a new import goes: the line after the module's leading docstring and imports."""
        after = 1
        for number, statement in enumerate(self.tree.body):
            docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            if not (isinstance(statement, (ast.Import, ast.ImportFrom)) or (docstring and number == 0)):
                break
            after = (statement.end_lineno or statement.lineno) + 1
        return after


def _e722(module: _Module, row: int, _column: int, _path: str) -> list[Candidate]:
    for handler in module.at(row, (ast.ExceptHandler,)):
        line = module.lines[row - 1].encode()
        if handler.type is None and line[handler.col_offset :].startswith(b"except"):
            return [("Catch `Exception`", ((row, handler.col_offset + len("except"), " Exception"),))]
    return []


def _b904(module: _Module, row: int, _column: int, _path: str) -> list[Candidate]:
    for raised in module.at(row, (ast.Raise,)):
        handler = module.handler_of(raised)
        if raised.exc is None or raised.cause is not None or handler is None or raised.end_lineno is None:
            continue
        end = (raised.end_lineno, raised.end_col_offset or 0)
        found: list[Candidate] = []
        if handler.name is not None:
            found.append((f"Raise it from `{handler.name}`", ((*end, f" from {handler.name}"),)))
        elif handler.type is not None and handler.type.end_lineno is not None:
            used = {n.id for n in ast.walk(handler) if isinstance(n, ast.Name)}
            name = next(n for n in ("err", "exc", "error", "caught") if n not in used)
            bind = (handler.type.end_lineno, handler.type.end_col_offset or 0, f" as {name}")
            message = f"Bind the exception as `{name}` and raise from it"
            found.append((message, (bind, (*end, f" from {name}"))))
        found.append(("Raise it `from None` (its context is not shown)", ((*end, " from None"),)))
        return found
    return []


def _f401(module: _Module, row: int, column: int, path: str) -> list[Candidate]:
    if not path.endswith("__init__.py"):
        return []
    for node in ast.walk(module.tree):
        if (
            not isinstance(node, ast.alias)
            or node.lineno != row
            or _column(module, row, node.col_offset) != column
        ):
            continue
        if node.asname is None and "." not in node.name and node.name != "*" and node.end_lineno:
            inserted = (node.end_lineno, node.end_col_offset or 0, f" as {node.name}")
            return [(f"Re-export `{node.name}` explicitly", (inserted,))]
    return []


def _ruf012(module: _Module, row: int, _column: int, _path: str) -> list[Candidate]:
    imports = [node for node in module.tree.body if isinstance(node, ast.ImportFrom)]
    imported = any(n.module == "typing" and "ClassVar" in {a.name for a in n.names} for n in imports)
    for assign in module.at(row, (ast.Assign,)):
        kind = _MUTABLE.get(type(assign.value))
        target = assign.targets[0] if len(assign.targets) == 1 else None
        in_class = isinstance(module.parents.get(assign), ast.ClassDef)
        if kind is None or not isinstance(target, ast.Name) or not in_class:
            continue
        inserts: tuple[Insert, ...] = ((target.lineno, target.end_col_offset or 0, f": ClassVar[{kind}]"),)
        if not imported:
            inserts = ((module.import_line(), 0, "from typing import ClassVar\n"), *inserts)
        return [(f"Annotate `{target.id}` as `ClassVar[{kind}]`", inserts)]
    return []


_GENERATORS: dict[str, Callable[[_Module, int, int, str], list[Candidate]]] = {
    "B904": _b904,
    "E722": _e722,
    "F401": _f401,
    "RUF012": _ruf012,
}
CANDIDATE_RULES = frozenset(_GENERATORS)
"""The rules a finding without a fix gets candidates for."""


def _column(module: _Module, row: int, byte_offset: int) -> int:
    """Ruff's column (characters, from 1) of a byte offset in line ``row``."""
    line = module.lines[row - 1].encode() if row <= len(module.lines) else b""
    return len(line[:byte_offset].decode("utf-8", "replace")) + 1


def _fix(module: _Module, message: str, inserts: Sequence[Insert]) -> dict[str, Any]:
    edits = []
    for row, offset, content in inserts:
        at = {"row": row, "column": _column(module, row, offset)}
        edits.append({"content": content, "location": at, "end_location": dict(at)})
    return {"applicability": "unsafe", "message": message, "edits": edits}


def _has_fix(diagnostic: Mapping[str, Any]) -> bool:
    fix = diagnostic.get("fix")
    return isinstance(fix, Mapping) and fix.get("applicability") in ("safe", "unsafe")


def with_candidates(
    text: str, diagnostics: Sequence[Mapping[str, Any]], path: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``diagnostics`` (ruff's JSON findings on ``text``, the file ``path``) with a fix, then one
    for each candidate of those without one (the finding, with the candidate as its fix); and
    the findings without a fix that got no candidate."""
    try:
        module: _Module | None = _Module(text)
    except (SyntaxError, ValueError):
        module = None
    fixed: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    for diagnostic in diagnostics:
        if _has_fix(diagnostic):
            fixed.append(dict(diagnostic))
            continue
        generator = _GENERATORS.get(str(diagnostic.get("code")))
        location = diagnostic.get("location") or {}
        row, column = int(location.get("row", 0)), int(location.get("column", 0))
        found = generator(module, row, column, path) if generator and module and row > 0 else []
        fixed += [{**diagnostic, "fix": _fix(module, *candidate)} for candidate in found if module]
        if not found:
            left.append(dict(diagnostic))
    return fixed, left
