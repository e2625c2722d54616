"""An unused loop variable whose name a later loop binds again (B007 without ruff's fix).

Ruff renames an unused loop variable ``_name`` only where nothing else in its function reads the
name. Functions that repeat a loop often reuse its variable: polib 1.2.0's ``_MOFileParser``
reads two tables with ``for i in range(numofstrings):`` and uses ``i`` only in the third loop,
so the first two get no fix. The value those two bind is never read when each read of the name
comes after a binding of its own, so :func:`rebound_loop_name` gives such a finding the rename
ruff would write, ``_i``, on these conditions:

- the loop is in a function (a module's or class's name is an attribute others may read), and
  binds the one name (an unpacking's names are left: a shared form may document the tuple);
- every read of the name in the function (an augmented assignment reads too) stands in the body
  of another ``for`` loop that binds it, one that does not hold this loop, or after a
  comprehension's own ``for`` that binds it: each iteration binds the name before the read, and
  this loop cannot run in between;
- the function does not delete the name, declare it ``global`` or ``nonlocal``, call
  ``locals``, ``vars``, ``eval``, ``exec`` or ``dir``, nor hold a function, class or lambda
  that mentions it (which could read it as a closure);
- the file mentions the new name nowhere.

The candidate is then written as the file's other throwaway names are (``for _ in``; see
:mod:`~structured_agents.tasks.lint_refine`). Any other unused loop variable ruff cannot rename
is left as it is.
"""

from __future__ import annotations

import ast
import re

from structured_agents.tasks.lint_fixes import Edit
from structured_agents.tasks.lint_source import NAME_READERS, SCOPES, Comprehension, Source, own_nodes

__all__ = ["rebound_loop_name"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor)


def _binds(target: ast.AST, name: str) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
        for node in ast.walk(target)
    )


def _in_comprehension(comprehension: ast.AST, child: ast.AST, name: str) -> bool:
    """Whether ``child`` of ``comprehension`` (its result, or one of its ``for`` clauses) is
    evaluated after one of its ``for`` clauses bound ``name``."""
    generators: list[ast.comprehension] = getattr(comprehension, "generators", [])
    if child not in generators:  # the element, key or value: after every clause
        return any(_binds(clause.target, name) for clause in generators)
    return any(_binds(clause.target, name) for clause in generators[: generators.index(child)])


def _binds_before(module: Source, parent: ast.AST, child: ast.AST, loop: ast.AST, name: str) -> bool:
    """Whether ``parent`` binds ``name`` before it evaluates its part ``child``: a ``for``
    loop (not ``loop``, nor one holding it) its body, a comprehension's clause its conditions,
    a comprehension the clauses after the one binding it and its result."""
    if isinstance(parent, ast.comprehension):
        return child is not parent.iter and child is not parent.target and _binds(parent.target, name)
    if isinstance(parent, Comprehension):
        return _in_comprehension(parent, child, name)
    return (
        isinstance(parent, _LOOPS)
        and parent is not loop
        and child in parent.body
        and _binds(parent.target, name)
        and not _holds(module, parent, loop)
    )


def _rebound_before(module: Source, read: ast.AST, loop: ast.AST, name: str) -> bool:
    """Whether ``read`` of ``name`` follows a binding of its own (see the module docstring)."""
    child, parent = read, module.parents.get(read)
    while parent is not None and not isinstance(parent, SCOPES):
        if _binds_before(module, parent, child, loop, name):
            return True
        child, parent = parent, module.parents.get(parent)
    return False


def _holds(module: Source, outer: ast.AST, inner: ast.AST) -> bool:
    parent = module.parents.get(inner)
    while parent is not None:
        if parent is outer:
            return True
        parent = module.parents.get(parent)
    return False


def _blocks(node: ast.AST, name: str) -> bool:
    """Whether ``node`` of the function makes its name ``name`` unsafe to leave unbound: a nested
    scope mentioning it, a ``global``/``nonlocal`` of it, a call that reads the names."""
    if isinstance(node, SCOPES):
        return any(isinstance(inner, ast.Name) and inner.id == name for inner in ast.walk(node))
    if isinstance(node, ast.Global | ast.Nonlocal):
        return name in node.names
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NAME_READERS


def _dead(module: Source, function: ast.AST, loop: ast.AST, name: str) -> bool:
    """Whether nothing in ``function`` reads the value ``loop`` binds to ``name``."""
    for node in own_nodes(function):
        if _blocks(node, name):
            return False
        if not isinstance(node, ast.Name) or node.id != name:
            continue
        if isinstance(node.ctx, ast.Del):
            return False
        augmented = module.parents.get(node)
        reads = isinstance(node.ctx, ast.Load) or (
            isinstance(augmented, ast.AugAssign) and augmented.target is node
        )
        if reads and not _rebound_before(module, node, loop, name):
            return False
    return True


def rebound_loop_name(module: Source, row: int, at: int, end: int) -> list[tuple[str, tuple[Edit, ...]]]:
    """The rename of B007's unused loop variable at ``at`` to ``_name``, where each read of
    the name in its function follows a binding of its own (see the module docstring)."""
    for loop in module.at(row, _LOOPS):
        target = loop.target
        if not isinstance(target, ast.Name) or module.start(target) != at:
            continue
        name, function, new = target.id, module.scope_of(loop), f"_{target.id}"
        if (
            not isinstance(function, _FUNCTIONS)
            or re.search(rf"(?<![\w.]){re.escape(new)}\b", module.text)
            or not _dead(module, function, loop, name)
        ):
            return []
        return [(f"Rename unused `{name}` to `{new}`", ((at, end, new),))]
    return []
