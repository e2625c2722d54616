"""Explicit imports for a module's star imports (F403), naming what it uses of them (F405).

``from .core import *`` becomes ``from .core import Literal, Word`` with the names ruff's F405
findings say the module uses from its star imports, each given to the star import that binds it
last (the one whose binding Python keeps). The names a star import binds are read from its
module's file under the root, never imported or run: the module's ``__all__`` where it is a
literal list or tuple of strings, else its public top-level names (definitions, assignments,
imports, and what its own star imports bind, read the same way).

No explicit import is written:

- in a public module: what its star imports bind is part of its namespace, which the
  explicit imports would narrow to what it uses (a reviewer rejected pyparsing's
  ``helpers.py`` and ``common.py`` made explicit: ``from pyparsing.helpers import Each`` then
  fails, though pyparsing's tests pass). Only a private module (a part of its path starts with
  an underscore: ``_core.py``, ``_impl/x.py``, ``__main__.py``) or a test module is given them;
- in a package's ``__init__.py``, whose star imports are its re-exports;
- anywhere in a file one of whose used names no star import of it binds as read (a module
  outside the root or not found, an ``__all__`` built at run time, a name bound through
  ``globals()``): the file keeps all its star imports;
- for a star import none of whose names the module uses.

Files are read only under the root: no symbolic link is followed, and only regular files of at
most :data:`_MAX_BYTES` are read.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from structured_agents import syntax
from structured_agents.jobs.source import read_regular
from structured_agents.tasks.lint_fixes import Edit
from structured_agents.tasks.lint_source import Source, row_of, unsafe_fix

__all__ = ["explicit_imports"]

_MAX_BYTES = 2_000_000
_WIDTH = 79
"""The longest one-line import written; a longer one is wrapped one name a line, as ruff format
wraps it."""
_USED = re.compile(r"^`([^`]+)` may be undefined, or defined from star imports")


def _read(root: Path, relative: PurePosixPath) -> str | None:
    """The text of the regular file ``relative`` under ``root``; None where it is missing, too
    large, not UTF-8, anything but a regular file, or reached through a symbolic link."""
    path = root
    for part in relative.parts[:-1]:
        path = path / part
        if path.is_symlink():
            return None
    try:
        return read_regular(path / relative.name, _MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _module_file(root: Path, importer: PurePosixPath, node: ast.ImportFrom) -> PurePosixPath | None:
    """The file under ``root`` of the module ``node`` (in the file ``importer``) imports from."""
    parts = tuple((node.module or "").split(".")) if node.module else ()
    if node.level:
        base = importer.parent
        for _ in range(node.level - 1):
            if base == PurePosixPath("."):
                return None
            base = base.parent
        bases = [base]
    else:
        bases = [PurePosixPath("."), PurePosixPath("src")]
    for base in bases:
        stem = base.joinpath(*parts) if parts else base
        for candidate in (stem.with_suffix(".py") if parts else None, stem / "__init__.py"):
            if candidate is not None and _read(root, candidate) is not None:
                return candidate
    return None


def _targets(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


class _Unknown(Exception):
    """What a star import binds cannot be read from its module's file."""


def _literal_all(tree: ast.Module) -> set[str] | None:
    """The names of ``tree``'s top-level ``__all__``, assigned and extended as literals (None:
    it has none); :class:`_Unknown` where it is built otherwise."""
    names: set[str] | None = None
    for statement in tree.body:
        named = (node for node in ast.walk(statement) if isinstance(node, ast.Name))
        if isinstance(statement, ast.Expr) and any(node.id == "__all__" for node in named):
            raise _Unknown  # __all__.extend(...) and the like
        if not isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if not any("__all__" in _targets(target) for target in targets):
            continue
        value = statement.value
        if not (
            isinstance(value, ast.List | ast.Tuple)
            and all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in value.elts)
        ):
            raise _Unknown
        listed = {str(item.value) for item in value.elts if isinstance(item, ast.Constant)}
        names = (names or set()) | listed if isinstance(statement, ast.AugAssign) else listed
    return names


def _namespace(node: ast.AST) -> bool:
    """Whether ``node`` is ``globals()``, ``vars()`` or ``locals()``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("globals", "vars", "locals")
        and not node.args
    )


def _binds_dynamically(node: ast.AST) -> bool:
    """Whether ``node`` may bind names no statement names: ``globals()[k] = v``,
    ``globals().update(...)``, ``exec(...)``."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        return _namespace(node.value)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("update", "setdefault", "__setitem__"):
        return _namespace(func.value)
    return isinstance(func, ast.Name) and func.id == "exec"


def _top_level(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at a module's top level (into ``if``, ``try``, ``with`` and
    loops, not into definitions)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _top_level(inner)
        for handler in getattr(statement, "handlers", ()):
            yield from _top_level(handler.body)


Origin = tuple[str, str, str]
"""Where a bound name's object comes from: ``("file", path, name)`` (defined in the module file
``path`` under the root), ``("external", module, name)`` (``from module import name``, a module
outside the root) or ``("module", module, "as" or "")`` (``import module``, with an alias or
without)."""


def _module_origin(alias: ast.alias) -> Origin:
    """The origin of the name ``import a.b`` (``a``, with ``a.b`` loaded) or ``import a.b as c``
    (``a.b``, its third item ``as``) binds."""
    return ("module", alias.name, "as" if alias.asname else "")


class _Reader:
    """Where the names of modules under one root come from, each module read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[PurePosixPath, tuple[dict[str, Origin], set[str]] | None] = {}

    def star(self, importer: PurePosixPath, node: ast.ImportFrom) -> dict[str, Origin] | None:
        """What ``from <node's module> import *`` binds in ``importer``, and where each comes
        from; None: not known."""
        target = _module_file(self.root, importer, node)
        read = self.module(target) if target is not None else None
        if target is None or read is None:
            return None
        bindings, exported = read
        return {name: bindings.get(name, ("file", target.as_posix(), name)) for name in exported}

    def module(self, path: PurePosixPath) -> tuple[dict[str, Origin], set[str]] | None:
        """The module ``path``'s top-level names with their origins, and the names a star
        import of it binds; None: not known (a cycle reads as unknown until it is done)."""
        if path in self._cache:
            return self._cache[path]
        self._cache[path] = None
        text = _read(self.root, path)
        try:
            read = self._names(path, text) if text is not None else None
        except _Unknown:
            read = None
        self._cache[path] = read
        return read

    def _names(self, path: PurePosixPath, text: str) -> tuple[dict[str, Origin], set[str]]:
        try:
            tree = syntax.parse(text)
        except (SyntaxError, ValueError):
            raise _Unknown from None
        if any(_binds_dynamically(node) for node in ast.walk(tree)):
            raise _Unknown  # names bound through globals() or exec cannot be read
        bindings: dict[str, Origin] = {}
        seen: dict[str, set[Origin]] = {}
        for statement in _top_level(tree.body):
            for name, origin in self._binds(path, statement).items():
                bindings[name] = origin
                seen.setdefault(name, set()).add(origin)
        for name, origins in seen.items():
            if len(origins) > 1:  # bound to two things (try/except ImportError...): its own binding
                bindings[name] = ("file", path.as_posix(), name)
        listed = _literal_all(tree)
        exported = listed if listed is not None else {name for name in bindings if not name.startswith("_")}
        return bindings, exported

    def _binds(self, path: PurePosixPath, statement: ast.stmt) -> dict[str, Origin]:
        """The names one top-level ``statement`` of the module ``path`` binds, with their origins."""
        own = path.as_posix()
        if isinstance(statement, ast.ImportFrom):
            return self._imported(path, statement)
        if isinstance(statement, ast.Import):
            return {
                alias.asname or alias.name.split(".")[0]: _module_origin(alias) for alias in statement.names
            }
        names: set[str] = set()
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = {statement.name}
        elif isinstance(statement, ast.Assign):
            names = {name for target in statement.targets for name in _targets(target)}
        elif isinstance(statement, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            names = set(_targets(statement.target))
        elif isinstance(statement, ast.With | ast.AsyncWith):
            bound = (item.optional_vars for item in statement.items if item.optional_vars is not None)
            names = {name for target in bound for name in _targets(target)}
        return {name: ("file", own, name) for name in names}

    def _imported(self, path: PurePosixPath, statement: ast.ImportFrom) -> dict[str, Origin]:
        if any(alias.name == "*" for alias in statement.names):
            starred = self.star(path, statement)
            if starred is None:
                raise _Unknown
            return starred
        target = _module_file(self.root, path, statement)
        bound = {alias.asname or alias.name: alias.name for alias in statement.names}
        if target is None and statement.level:  # not found under the root: the module's own binding
            return {name: ("file", path.as_posix(), name) for name in bound}
        if target is None:
            return {name: ("external", statement.module or "", attr) for name, attr in bound.items()}
        read = self.module(target)
        bindings = read[0] if read is not None else {}
        return {name: bindings.get(attr, ("file", target.as_posix(), attr)) for name, attr in bound.items()}


def _dotted(importer: PurePosixPath, origin: str, relative: bool) -> str:
    """The module ``origin`` (a file under the root) as ``importer`` names it in an import."""
    file = PurePosixPath(origin)
    parts = file.parent.parts + (() if file.name == "__init__.py" else (file.stem,))
    if not relative:
        return ".".join(parts[1:] if parts[:1] == ("src",) else parts)
    package = importer.parent.parts
    common = 0
    while common < min(len(package), len(parts)) and package[common] == parts[common]:
        common += 1
    return "." * (len(package) - common + 1) + ".".join(parts[common:])


def _spelled(name: str, attr: str) -> str:
    return attr if attr == name else f"{attr} as {name}"


def _statements(
    importer: PurePosixPath, node: ast.ImportFrom, names: Mapping[str, Origin]
) -> list[tuple[str, list[str]]]:
    """The imports binding ``names`` (each with its origin) in place of the star import ``node``,
    each name from where it comes from: ``(module, ["name", "attr as name"])`` pairs, the
    module written ``import module`` for a plain import (its one name the alias, or empty).
    Empty where a name comes from ``importer`` itself."""
    grouped: dict[str, list[str]] = {}
    for name, (kind, module, attr) in sorted(names.items(), key=lambda item: _order(item[0])):
        if kind == "module":
            source, spelled = f"import {module}", name if attr else ""
        elif kind == "external":
            source, spelled = module, _spelled(name, attr)
        elif module == importer.as_posix():
            return []
        else:
            source, spelled = _dotted(importer, module, bool(node.level)), _spelled(name, attr)
        grouped.setdefault(source, []).append(spelled)
    return sorted(grouped.items(), key=_section)


def _section(statement: tuple[str, list[str]]) -> tuple[int, bool, str]:
    """Where isort puts an import: the standard library, other absolute imports, relative
    ones; in each, ``import`` lines before ``from`` lines, by module."""
    source = statement[0]
    plain = source.startswith("import ")
    module = source.removeprefix("import ")
    section = 2 if module.startswith(".") else 0 if module.split(".")[0] in sys.stdlib_module_names else 1
    return section, not plain, module


def _line(source: str, names: Sequence[str], pad: str) -> str:
    """One import statement, indented by ``pad``: on one line where it fits, else one name a
    line, as ruff format writes it."""
    if source.startswith("import "):
        return source + (f" as {names[0]}" if names[0] else "")
    one_line = f"from {source} import {', '.join(names)}"
    if len(pad) + len(one_line) <= _WIDTH:
        return one_line
    inner = "".join(f"{pad}    {name},\n" for name in names)
    return f"from {source} import (\n{inner}{pad})"


def _imported_from(node: ast.ImportFrom) -> str:
    return "." * node.level + (node.module or "")


def _edits(
    module: Source, planned: Sequence[tuple[ast.ImportFrom, list[tuple[str, list[str]]]]]
) -> list[Edit]:
    """Edits writing the imports ``planned`` for each star import, all at once: names of a
    module the file already imports from at its top level (``from .util import a``, without
    comments) join that statement; new absolute imports go after the file's last absolute
    import above the first star, where isort keeps them; the rest take the first star's place;
    the other stars' lines go."""
    first_star = planned[0][0]
    pad = module.text[module.start(first_star) - first_star.col_offset : module.start(first_star)]
    existing = {
        _imported_from(other): other
        for other in module.tree.body
        if isinstance(other, ast.ImportFrom)
        and all(alias.name != "*" for alias in other.names)
        and "#" not in module.text[module.start(other) : module.end(other)]
    }
    above = [
        other
        for other in module.tree.body[: module.tree.body.index(first_star)]
        if isinstance(other, ast.Import) or (isinstance(other, ast.ImportFrom) and not other.level)
    ]
    joining: dict[str, list[str]] = {}
    absolute: dict[str, list[str]] = {}
    here: dict[str, list[str]] = {}
    for _, statements in planned:
        for source, names in statements:
            where = (
                joining if source in existing else absolute if above and not source.startswith(".") else here
            )
            where.setdefault(source, []).extend(name for name in names if name not in where.get(source, []))
    edits: list[Edit] = []
    for source, names in joining.items():
        joined = existing[source]
        old = [alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in joined.names]
        written = _line(source, [*old, *_sorted(name for name in names if name not in old)], pad)
        edits.append((module.start(joined), module.end(joined), written))
    if absolute:
        anchor = module.end(above[-1])
        lines = "".join(f"\n{pad}{_line(source, _sorted(names), pad)}" for source, names in absolute.items())
        edits.append((anchor, anchor, lines))
    for index, (node, _) in enumerate(planned):
        if index == 0 and here:
            lines = f"\n{pad}".join(_line(source, _sorted(names), pad) for source, names in here.items())
            edits.append((module.start(node), module.end(node), lines))
        else:
            first = module.starts[node.lineno - 1]
            last = module.starts[min(node.end_lineno or node.lineno, len(module.lines))]
            edits.append((first, last, ""))
    return edits


def _sorted(names: Iterable[str]) -> list[str]:
    """``names`` (``attr`` or ``attr as name``) in isort's order."""
    return sorted(names, key=_order)


def _order(name: str) -> tuple[int, str]:
    """isort's order by type: constants, classes, then the rest."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name


_TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def _private(importer: PurePosixPath) -> bool:
    """Whether no code outside the codebase imports from ``importer``: a part of its path starts
    with an underscore (not ``__init__``), or it is a test module."""
    parts = [*importer.parent.parts, importer.stem]
    test = (
        importer.name.startswith("test_") or importer.stem.endswith("_test") or importer.name == "conftest.py"
    )
    return (
        test
        or bool(_TEST_FOLDERS & set(importer.parent.parts))
        or any(part.startswith("_") and part != "__init__" for part in parts)
    )


def explicit_imports(
    root: Path, path: str, module: Source, diagnostics: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The F403 findings of ``diagnostics`` (ruff's on ``module``, the file ``path`` under
    ``root``), each with explicit imports as its fix; empty where none can be written (see the
    module docstring)."""
    importer = PurePosixPath(path)
    stars = [
        node
        for node in module.tree.body
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
    ]
    if importer.name == "__init__.py" or not stars or not _private(importer):
        return []
    used = {match.group(1) for item in diagnostics if (match := _USED.match(str(item.get("message", ""))))}
    reader = _Reader(root)
    bound = [reader.star(importer, node) for node in stars]
    chosen: list[dict[str, Origin]] = [{} for _ in stars]
    for name in used:
        binders = [index for index, names in enumerate(bound) if names is not None and name in names]
        if not binders:
            return []  # a name no star import is known to bind: the file keeps them all
        last = binders[-1]
        chosen[last][name] = (bound[last] or {})[name]
    planned = [
        (node, statements)
        for node, names in zip(stars, chosen, strict=True)
        if names and (statements := _statements(importer, node, names))
    ]
    if not planned:
        return []
    message = f"Import the {sum(len(names) for names in chosen)} names used from where they are defined"
    fix = unsafe_fix(module, message, _edits(module, planned))
    rows = {node.lineno for node, _ in planned}
    return [
        {**diagnostic, "fix": fix}
        for diagnostic in diagnostics
        if diagnostic.get("code") == "F403" and row_of(diagnostic) in rows
    ]
