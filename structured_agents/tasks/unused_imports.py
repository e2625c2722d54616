"""Unused imports ruff offers no fix for, removed where nothing could read them.

- **An ``__init__.py``'s ``typing`` imports.** Ruff offers no fix for F401 in an ``__init__.py``:
  a name imported there may be a re-export. A name imported from ``typing``,
  ``typing_extensions`` or ``collections.abc`` is not one (no package exports ``Optional`` as
  its own), so its import is a leftover: iniconfig 2.0.0's ``__init__.py`` imports
  ``NamedTuple``, ``NoReturn``, ``Optional``, ``Tuple``, ``Union`` and ``cast`` and uses none
  of them.
- **Any import of a file whose type comments or doctest examples use one of its imports.** The
  lint task leaves F401 unfixed in such a file (ruff reads neither, and would remove what they
  use: :mod:`~structured_agents.tasks.type_comments`), so ruff's fix of every other unused
  import there is lost too: unidiff 0.7.5's ``patch.py`` keeps ``from typing import Iterable,
  Optional, Union`` for its type comments, and with it an ``import codecs`` nothing uses. Not in
  an ``__init__.py`` (a re-export), nor inside a ``try`` (``import win32api`` probes whether a
  module is there).

:func:`unused_imports` gives each such finding a fix that removes the statement's unused names
(one change for the statement, which its findings share), or the whole statement where none of
its names is used. A statement with a comment among its names is left as it is, and so is a
name a type comment or a doctest example uses (unidecode 1.3.8's ``Cache = {}  # type:
Dict[...]``).

:func:`typing_leftovers` removes the ``typing`` names a change leaves unused in either kind of
file: pyte 0.8.2's ``screens.py`` (whose doctests use its imports) had every ``List[...]`` and
``Optional[...]`` written ``list[...]`` and ``... | None`` (UP006, UP045), and ``from typing
import ..., List, Optional, ...`` was left importing them for nothing; dpath 2.2.0's
``__init__.py`` kept ``Union`` once its last ``Union[...]`` was written ``... | ...`` (a
reviewer's EDIT), and its ``Optional[str]`` stayed, dropped for leaving ``Optional`` unused.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from structured_agents.tasks.lint_source import SCOPES, Source, findings_at, unsafe_fix
from structured_agents.tasks.type_comments import (
    doctest_names,
    imports_read_unseen,
    type_comment_names,
)

__all__ = ["typing_leftovers", "unused_imports"]

_TYPING = frozenset({"typing", "typing_extensions", "collections.abc"})
"""Modules whose names no package re-exports as its own."""


def _removal(
    module: Source, node: ast.Import | ast.ImportFrom, unused: set[int]
) -> tuple[int, int, str] | None:
    """The edit removing the names of ``node`` that start at ``unused`` offsets."""
    if "#" in module.text[module.start(node) : module.end(node)]:
        return None
    kept = [alias for alias in node.names if module.start(alias) not in unused]
    if not kept:
        first = module.starts[node.lineno - 1]
        last = module.starts[min(node.end_lineno or node.lineno, len(module.lines))]
        beside = module.text[first : module.start(node)] + module.text[module.end(node) : last]
        return (first, last, "") if not beside.strip() else None
    start, end = module.start(node.names[0]), module.end(node.names[-1])
    between = (
        module.text[module.end(node.names[0]) : module.start(node.names[1])] if len(node.names) > 1 else ""
    )
    separator = between if between.strip() == "," else ", "
    return start, end, separator.join(module.text[module.start(a) : module.end(a)] for a in kept)


def _in_try(module: Source, node: ast.AST) -> bool:
    """Whether ``node`` stands in the body of a ``try`` (not across a function or class)."""
    child, parent = node, module.parents.get(node)
    while parent is not None and not isinstance(parent, SCOPES):
        if isinstance(parent, ast.Try) and child in parent.body:
            return True
        child, parent = parent, module.parents.get(parent)
    return False


def _removable(path: str, module: Source, node: ast.AST) -> bool:
    """Whether ``node``'s unused names may be removed (see the module docstring)."""
    if PurePosixPath(path).name == "__init__.py":
        return isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in _TYPING
    if not isinstance(node, ast.Import | ast.ImportFrom) or _in_try(module, node):
        return False
    return imports_read_unseen(module.text)


def unused_imports(
    path: str, module: Source, diagnostics: Sequence[Mapping[str, Any]]
) -> dict[int, dict[str, Any]]:
    """The F401 findings of ``diagnostics`` (ruff's, on ``module``, the file ``path``) that ruff
    gives no fix and that may be removed (see the module docstring), by offset, each with the
    fix removing its statement's unused names."""
    found_at = findings_at(module, diagnostics, "F401")
    flagged = {at: finding for at, finding in found_at.items() if not finding.get("fix")}
    if not flagged:
        return {}
    read = type_comment_names(module.text) | doctest_names(module.text)
    found: dict[int, dict[str, Any]] = {}
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or not _removable(path, module, node):
            continue
        unused = {
            module.start(alias)
            for alias in node.names
            if module.start(alias) in flagged and (alias.asname or alias.name).split(".")[0] not in read
        }
        edit = _removal(module, node, unused) if unused else None
        if edit is None:
            continue
        fix = unsafe_fix(module, "Remove the unused imports", [edit])
        found.update({at: {**flagged[at], "fix": fix} for at in unused})
    return found


def typing_leftovers(module: Source, diagnostics: Sequence[Mapping[str, Any]]) -> list[tuple[int, int, str]]:
    """The edits removing the names of ``typing``, ``typing_extensions`` and ``collections.abc``
    imports that F401 findings of ``diagnostics`` (ruff's, on ``module``) flag and no type
    comment or doctest example uses, one for each statement (see the module docstring)."""
    flagged = set(findings_at(module, diagnostics, "F401"))
    read = type_comment_names(module.text) | doctest_names(module.text)
    edits = []
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in _TYPING):
            continue
        unused = {
            module.start(alias)
            for alias in node.names
            if module.start(alias) in flagged and (alias.asname or alias.name) not in read
        }
        edit = _removal(module, node, unused) if unused and not _in_try(module, node) else None
        if edit is not None:
            edits.append(edit)
    return edits
