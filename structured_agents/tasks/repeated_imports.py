"""An import inside a function that repeats one the module already ran at its top (PLC0415).

Ruff has no fix for an import outside the top level: moving one to the top changes when it
runs, and lazy imports are often deliberate (an optional dependency, a slow module only a
command-line entry point needs, an import cycle). One case changes nothing: the function
imports what the module already imported at its top level, in the same form, before the
function is defined (tabulate 0.9.0's ``_main`` repeats ``import textwrap``). The name is then
bound to the same object either way, so :func:`repeated_import` gives the finding the
statement's removal as its candidate, on these conditions:

- the top-level import is a statement of the module's own body (not under an ``if`` or
  ``try``), binds each of the inner statement's names in the same way (``import a.b``,
  ``from a import b as c``), and comes before the function's definition;
- the module binds none of those names anywhere else at its top level (a later ``textwrap =
  None`` would make the global another object);
- the function's own scope binds none of them otherwise (an assignment, a parameter, a loop
  or ``with`` target, another import, a ``global``, ``nonlocal`` or ``del``), nor does a
  function it is nested in, and no function declares one of them ``global`` (it could rebind
  the module's), so the name stays the global it reads once the import is gone;
- the statement stands alone on its lines and is not its block's only statement.

Any other import outside the top level is left as it is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from structured_agents.tasks.lint_fixes import Edit
from structured_agents.tasks.lint_source import SCOPES, Source, import_bound, own_nodes

__all__ = ["repeated_import"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Import = ast.Import | ast.ImportFrom


def _form(node: _Import) -> tuple[object, ...]:
    """What an import statement binds, and from where (the same form binds the same object)."""
    names = tuple((alias.name, alias.asname) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return ("from", node.module, node.level, names)
    return ("import", names)


def _enclosing(module: Source, function: ast.AST) -> Iterator[ast.AST]:
    """The functions ``function`` is nested in, innermost first (a class's names are not
    visible to the functions in it)."""
    scope = module.scope_of(function)
    while scope is not None:
        if isinstance(scope, (*_FUNCTIONS, ast.Lambda)):
            yield scope
        scope = module.scope_of(scope)


def _module_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """``statement`` and the nodes under it that bind in the module's scope."""
    yield statement
    if not isinstance(statement, SCOPES):
        yield from own_nodes(statement)


def _binds(node: ast.AST) -> set[str]:
    """The names ``node`` binds in the scope it stands in."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return import_bound(node)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    return set()


def _alone(module: Source, node: ast.stmt) -> tuple[int, int] | None:
    """The span of ``node``'s whole lines, where nothing else stands on them; else None."""
    first, last = node.lineno, node.end_lineno or node.lineno
    start, end = module.starts[first - 1], module.starts[min(last, len(module.lines))]
    before = module.text[start : module.start(node)]
    after = module.text[module.end(node) : end]
    if before.strip() or (after.strip() and not after.strip().startswith("#")):
        return None
    return start, end


def repeated_import(module: Source, row: int, at: int, _end: int) -> list[tuple[str, tuple[Edit, ...]]]:
    """The removal of the import on line ``row`` (a PLC0415 finding at offset ``at``) where it
    repeats one the module ran at its top (see the module docstring); else nothing."""
    inner = next((n for n in module.at(row, (ast.Import, ast.ImportFrom)) if module.start(n) == at), None)
    function = module.scope_of(inner) if inner is not None else None
    if inner is None or not isinstance(function, _FUNCTIONS):
        return []
    names, form = import_bound(inner), _form(inner)
    top = next(
        (
            node
            for node in module.tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            and _form(node) == form
            and node.lineno < function.lineno
        ),
        None,
    )
    if top is None:
        return []
    at_top = [
        node for statement in module.tree.body if statement is not top for node in _module_nodes(statement)
    ]
    if any(names & _binds(node) for node in at_top):
        return []
    others = [node for node in own_nodes(function) if node is not inner]
    if any(names & _binds(node) for node in others):  # its parameters among them
        return []
    if any(names & _binds(node) for scope in _enclosing(module, function) for node in own_nodes(scope)):
        return []
    if any(isinstance(node, ast.Global) and names & set(node.names) for node in ast.walk(module.tree)):
        return []  # a function may rebind the global
    block = getattr(module.parents.get(inner), "body", None)
    if not isinstance(block, list) or len(block) < 2 or inner not in block:
        return []
    span = _alone(module, inner)
    if span is None:
        return []
    shown = ", ".join(sorted(names))
    return [(f"Remove the import of `{shown}`: the module imports it at its top", ((*span, ""),))]
