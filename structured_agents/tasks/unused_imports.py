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

:func:`shadowed_imports` removes an imported name the module binds again before anything reads
it (F811, which ruff fixes only where the second binding is the same import, by removing that
one): defusedxml 0.7.1's ``cElementTree.py`` imports ``XML``, ``XMLParser``, ``parse``... from
``.ElementTree`` and ``tostring`` from ``xml.etree.cElementTree`` too, then binds each of them
again (``XMLTreeBuilder = XMLParse = XMLParser = DefusedXMLParser``), so the imports bind
names nothing sees. The import's name is removed only where the new binding stands in the same
block as the import and binds each time it runs (an import, a definition, an assignment to
it; not a loop's, ``with``'s or ``try``'s: a fallback ``try: from b import x`` keeps the first
import), and the import is not in a ``try`` itself (a probe). A whole statement goes as
ruff's own F401 fix removes one, but in an ``__init__.py`` only where the same module is
imported again in the block (importing a submodule there binds it as the package's attribute).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from structured_agents.tasks.lint_source import SCOPES, Source, findings_at, unsafe_fix
from structured_agents.tasks.type_comments import (
    doctest_names,
    imports_read_unseen,
    type_comment_names,
)

__all__ = ["shadowed_imports", "typing_leftovers", "unused_imports"]

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
        lines = module.own_lines(node)
        return (*lines, "") if lines is not None else None
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


_SHADOWED = re.compile(r"^Redefinition of unused `([^`]+)` from line (\d+)")
"""Ruff's F811 message: the name, and the line of its unused binding."""
_BINDERS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
"""Statements that bind their names each time they run."""


def _statement_of(module: Source, offset: int) -> ast.stmt | None:
    """The innermost statement whose text holds ``offset``."""
    found: ast.stmt | None = None
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.stmt) or not module.start(node) <= offset < module.end(node):
            continue
        if found is None or module.start(node) >= module.start(found):
            found = node
    return found


def _block_of(module: Source, statement: ast.stmt) -> list[ast.stmt] | None:
    """The body ``statement`` stands in directly: a module's, a function's or a class's (None:
    another block, whose statements may not run)."""
    scopes = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    block = module.block_of(statement)
    parent = module.parents.get(statement)
    return block if isinstance(parent, scopes) and block is getattr(parent, "body", None) else None


def _binds_surely(module: Source, statement: ast.stmt, offset: int) -> bool:
    """Whether ``statement`` binds the name at ``offset`` each time it runs: an import, a
    definition, or an assignment whose target holds it (not a loop's or ``with``'s target,
    nor a ``:=`` in a value, which may not run)."""
    if isinstance(statement, _BINDERS):
        return True
    targets = (
        statement.targets
        if isinstance(statement, ast.Assign)
        else [statement.target]
        if isinstance(statement, ast.AnnAssign) and statement.value is not None
        else []
    )
    return any(module.start(target) <= offset < module.end(target) for target in targets)


def _shadowed_names(
    module: Source, diagnostics: Sequence[Mapping[str, Any]]
) -> dict[ast.Import | ast.ImportFrom, dict[int, int]]:
    """The import statements whose names F811 findings of ``diagnostics`` say are bound again
    (see the module docstring): for each, the offsets of those names and of their findings."""
    shadowed: dict[ast.Import | ast.ImportFrom, dict[int, int]] = {}
    for at, finding in findings_at(module, diagnostics, "F811").items():
        said = _SHADOWED.match(str(finding.get("message") or ""))
        again = _statement_of(module, at)
        if said is None or finding.get("fix") or again is None or not _binds_surely(module, again, at):
            continue
        name, row = said.group(1), int(said.group(2))
        block = _block_of(module, again) or []
        for node in block[: block.index(again)] if again in block else ():
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for alias in node.names:
                if alias.lineno == row and (alias.asname or alias.name) == name and "." not in alias.name:
                    shadowed.setdefault(node, {})[module.start(alias)] = at
    return shadowed


def shadowed_imports(
    path: str, module: Source, diagnostics: Sequence[Mapping[str, Any]]
) -> dict[int, dict[str, Any]]:
    """The F811 findings of ``diagnostics`` (ruff's, on ``module``, the file ``path``) that ruff
    gives no fix and whose unused binding is an imported name that may be removed (see the
    module docstring), by offset, each with the fix removing its statement's shadowed names."""
    flagged = findings_at(module, diagnostics, "F811")
    found: dict[int, dict[str, Any]] = {}
    for node, names in _shadowed_names(module, diagnostics).items():
        if len(names) == len(node.names) and not _imported_again(path, module, node):
            continue
        edit = _removal(module, node, set(names))
        if edit is None:
            continue
        fix = unsafe_fix(module, "Remove the imports bound again before use", [edit])
        found.update({at: {**flagged[at], "fix": fix} for at in names.values()})
    return found


def _imported_again(path: str, module: Source, node: ast.Import | ast.ImportFrom) -> bool:
    """Whether the whole statement ``node`` may go: outside an ``__init__.py``, as ruff's F401
    fix removes one; in one, where another statement of its block imports from its module."""
    if PurePosixPath(path).name != "__init__.py":
        return True
    return isinstance(node, ast.ImportFrom) and any(
        isinstance(other, ast.ImportFrom)
        and other is not node
        and (other.module, other.level) == (node.module, node.level)
        for other in _block_of(module, node) or []
    )
