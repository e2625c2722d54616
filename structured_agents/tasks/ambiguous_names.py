"""``E741`` (a name such as ``l`` that reads as ``1`` or ``I``) bound by a comprehension: the
singular of what it iterates, where that is the word the name abbreviates.

pysrt 1.1.2's ``lines = [l.rstrip() for l in lines]`` becomes ``[line.rstrip() for line in
lines]``, unidiff 0.7.5's ``[str(l) for l in self.source_lines()]`` becomes ``[str(line) for
line in self.source_lines()]``, and jsonpath-ng 1.6.1's ``any([l in f for l in
JsonPathLexer.literals])`` takes ``literal``. The name the iterable ends with (a name, an
attribute or a call of one), its last ``_`` word, must be a plain plural (``lines``, not
``boxes`` or ``entries``) whose singular starts with the ambiguous letter: the author abbreviated
that word. Anything else is left as it is: a loop's name lives on after the loop, the pair in
``for l, r in zip(left, right)`` says left and right as it is, and jdcal 1.4.1's ``l = j_i +
68569`` follows the published algorithm's letters.

Only the comprehension's own uses of the name change, and only where the new name is used
nowhere in the function (or module) around it: on Python 2 a list comprehension's name leaks
into the function, and no reader should meet two meanings of ``line`` there. A comprehension
whose name is bound again inside it (another ``for l``, a lambda's ``l``) is left as it is.
"""

from __future__ import annotations

import ast
import keyword

from structured_agents.tasks.lint_fixes import Edit
from structured_agents.tasks.lint_source import SCOPES, Comprehension, Source

__all__ = ["comprehension_name"]

_ES_PLURALS = ("ss", "ies", "ses", "xes", "zes", "ches", "shes")
"""Endings of words whose singular is not the word without its ``s`` (``entries``, ``boxes``)."""


def _iterated_word(node: ast.expr) -> str | None:
    """The last ``_`` word of the name ``node`` ends with (``lines`` of ``self.source_lines()``)."""
    if isinstance(node, ast.Call):
        node = node.func
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name.rsplit("_", 1)[-1] if name else None


def _singular(word: str, letter: str) -> str | None:
    """``word`` without its plural ``s`` where it is a plain plural starting with ``letter``."""
    if len(word) < 3 or not word.islower() or not word.endswith("s") or word.endswith(_ES_PLURALS):
        return None
    singular = word[:-1]
    return singular if singular[0] == letter.lower() and not keyword.iskeyword(singular) else None


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name`` (an argument, or a name stored to)."""
    if isinstance(node, ast.arg):
        return node.arg == name
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)


def _names(scope: ast.AST) -> set[str]:
    """Every name and argument under ``scope``."""
    found: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return found


def _renamed(comprehension: Comprehension, index: int, old: str) -> list[ast.Name] | None:
    """The names ``old`` the ``index``-th generator of ``comprehension`` binds, as the
    comprehension reads them; None where another part of it binds ``old`` again."""
    generators = comprehension.generators
    parts: list[ast.AST] = [generators[index].target, *generators[index].ifs]
    for later in generators[index + 1 :]:
        parts += [later.target, later.iter, *later.ifs]
    fields = ("key", "value") if isinstance(comprehension, ast.DictComp) else ("elt",)
    parts += [getattr(comprehension, field) for field in fields]
    names: list[ast.Name] = []
    for part in parts:
        for node in ast.walk(part):
            if isinstance(node, (*SCOPES, Comprehension, ast.comprehension)) and any(
                _binds(inner, old) for inner in ast.walk(node)
            ):
                return None
            if isinstance(node, ast.Name) and node.id == old:
                if isinstance(node.ctx, ast.Store) and node is not generators[index].target:
                    return None
                names.append(node)
    return names


def comprehension_name(module: Source, row: int, at: int, _end: int) -> list[tuple[str, tuple[Edit, ...]]]:
    """The candidate for the ``E741`` finding of the name at ``at`` on line ``row``."""
    for comprehension in ast.walk(module.tree):
        if not isinstance(comprehension, Comprehension):
            continue
        for index, generator in enumerate(comprehension.generators):
            target = generator.target
            if not (isinstance(target, ast.Name) and module.start(target) == at):
                continue
            word = _iterated_word(generator.iter)
            new = _singular(word, target.id) if word else None
            scope = module.scope_of(comprehension) or module.tree
            if new is None or new in _names(scope):
                return []
            names = _renamed(comprehension, index, target.id)
            if not names:
                return []
            edits = tuple((module.start(name), module.end(name), new) for name in names)
            return [(f"Rename `{target.id}` to `{new}`", edits)]
    return []
