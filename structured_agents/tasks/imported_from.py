"""The names other modules of a codebase import from one of its modules.

An import a module does not use may still be what it is for: webob 1.8.11's ``compat.py``
imports ``urlparse``, ``quote`` and ``Queue`` for the other modules to import from it (``from
webob.compat import url_quote``). Ruff's F401 fix removes them, and 20 of webob's test modules
then failed to import. :func:`imported_names` reads, without importing or running anything,
which names the codebase's other modules take from a module with ``from module import name``
(absolute, from the root or a ``src`` folder, or relative); the lint task leaves F401 unfixed
in a module one of whose unused imports binds one of them (deepdiff 9.1.0's modules import
from ``helper.py`` names it imports and uses, and its unused imports are nobody's: there
ruff's fix stands)
(:meth:`~structured_agents.tasks.lint_settings.LintSettings.file_options`). An ``import
module`` read as ``module.name`` is not counted.

Only regular files under the root are read (no symbolic link is followed, no named pipe
waited on), at most :data:`MAX_FILES` of them and each at most :data:`MAX_BYTES`, skipping hidden
folders and virtual environments. Each file's imports are read once for its size and
modification time, and kept for the files used last.
"""

from __future__ import annotations

import ast
import os
import stat
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from structured_agents import syntax
from structured_agents.jobs.source import read_regular

__all__ = ["imported_names"]

MAX_FILES = 10_000
MAX_BYTES = 2_000_000
_SKIPPED = frozenset({"node_modules", "site-packages", "venv", "build", "dist", "__pycache__"})

_Imports = tuple[tuple[int, str, tuple[str, ...]], ...]
"""A file's ``from`` imports: level, module and names."""
_READ_KEPT = 50_000
_read: OrderedDict[tuple[str, str], tuple[int, int, _Imports]] = OrderedDict()
"""Each file's imports, by root and path, with the size and modification time they were read at:
the :data:`_READ_KEPT` files used last (a worker linting codebase after codebase)."""


def _files(root: Path) -> Iterator[tuple[PurePosixPath, os.stat_result]]:
    """The Python files under ``root`` (see the module docstring), with their status."""
    count = 0
    for folder, folders, names in os.walk(root):
        folders[:] = sorted(
            name
            for name in folders
            if not name.startswith(".")
            and name not in _SKIPPED
            and not os.path.islink(os.path.join(folder, name))
        )
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not name.endswith(".py"):
                continue
            try:
                status = os.lstat(path)
            except OSError:  # gone since the folder was listed
                continue
            if stat.S_ISREG(status.st_mode) and status.st_size <= MAX_BYTES:
                count += 1
                if count > MAX_FILES:
                    return
                yield PurePosixPath(os.path.relpath(path, root)), status


def _imports(root: Path, path: PurePosixPath, status: os.stat_result) -> _Imports:
    key = (str(root), str(path))
    known = _read.get(key)
    if known is not None and known[:2] == (status.st_size, status.st_mtime_ns):
        _read.move_to_end(key)
        return known[2]
    try:
        tree = syntax.parse(read_regular(root / path, MAX_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    found = tuple(
        (node.level, node.module or "", tuple(alias.name for alias in node.names))
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    )
    _read[key] = (status.st_size, status.st_mtime_ns, found)
    _read.move_to_end(key)
    while len(_read) > _READ_KEPT:
        _read.popitem(last=False)
    return found


def _dotted(path: PurePosixPath) -> tuple[str, ...]:
    """The parts of the module at ``path``, from the root (a package by its folder)."""
    parts = path.with_suffix("").parts
    return parts[:-1] if parts[-1:] == ("__init__",) else parts


def _resolved(importer: PurePosixPath, level: int, module: str) -> tuple[str, ...] | None:
    """The parts, from the root, of the module a ``from`` import of ``importer`` names (an
    absolute one as it is written); None where a relative one climbs out of the root."""
    named = tuple(module.split(".")) if module else ()
    if not level:
        return named
    folder = importer.parent.parts
    if level - 1 > len(folder):
        return None
    return folder[: len(folder) - (level - 1)] + named


def imported_names(root: Path, path: str) -> frozenset[str]:
    """The names the other modules under ``root`` import from the module ``path`` (relative to
    ``root``) with ``from ... import``."""
    target = PurePosixPath(path)
    dotted = _dotted(target)
    absolute = {dotted, dotted[1:] if dotted[:1] == ("src",) else dotted}
    names: set[str] = set()
    for other, status in _files(root):
        if other == target:
            continue
        for level, module, imported in _imports(root, other, status):
            resolved = _resolved(other, level, module)
            if resolved == dotted or (not level and resolved in absolute):
                names.update(name for name in imported if name != "*")
    return frozenset(names)
