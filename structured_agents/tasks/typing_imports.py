"""Unused ``typing`` imports of a package's ``__init__.py``, removed.

Ruff offers no fix for F401 in an ``__init__.py``: a name imported there may be a re-export.
A name imported from ``typing``, ``typing_extensions`` or ``collections.abc`` is not one (no
package exports ``Optional`` as its own), so its import is a leftover: iniconfig 2.0.0's
``__init__.py`` imports ``NamedTuple``, ``NoReturn``, ``Optional``, ``Tuple``, ``Union`` and
``cast`` and uses none of them. :func:`unused_typing_imports` gives each such finding a fix
that removes the statement's unused names (one change for the statement, which its findings
share), or the whole statement where none of its names is used. A statement with a comment
among its names is left as it is, and so is a name a type comment uses (unidecode 1.3.8's
``Cache = {}  # type: Dict[...]``: :mod:`~structured_agents.tasks.type_comments`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from structured_agents.tasks.lint_source import Source, findings_at, unsafe_fix
from structured_agents.tasks.type_comments import type_comment_names

__all__ = ["unused_typing_imports"]

_TYPING = frozenset({"typing", "typing_extensions", "collections.abc"})
"""Modules whose names no package re-exports as its own."""


def _removal(module: Source, node: ast.ImportFrom, unused: set[int]) -> tuple[int, int, str] | None:
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


def unused_typing_imports(
    path: str, module: Source, diagnostics: Sequence[Mapping[str, Any]]
) -> dict[int, dict[str, Any]]:
    """The F401 findings of ``diagnostics`` (ruff's, on ``module``, the file ``path``) on
    unused ``typing`` imports of an ``__init__.py``, by offset, each with the fix removing its
    statement's unused names."""
    if PurePosixPath(path).name != "__init__.py":
        return {}
    flagged = findings_at(module, diagnostics, "F401")
    commented = type_comment_names(module.text)
    found: dict[int, dict[str, Any]] = {}
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in _TYPING):
            continue
        unused = {
            module.start(alias)
            for alias in node.names
            if module.start(alias) in flagged and (alias.asname or alias.name) not in commented
        }
        edit = _removal(module, node, unused) if unused else None
        if edit is None:
            continue
        fix = unsafe_fix(module, "Remove the unused `typing` imports", [edit])
        found.update({at: {**flagged[at], "fix": fix} for at in unused})
    return found
