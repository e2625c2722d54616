"""A package's first-party re-exports declared in an ``__all__`` its ``__init__.py`` lacks.

Ruff offers no fix for F401 in an ``__init__.py``: a name imported there may be a re-export,
and ruff's message says to remove it, list it in ``__all__`` or import it ``as`` itself. The
last (ruff's preview fix) was rejected by a strict reviewer as lint-appeasing noise. A name an
``__init__.py`` imports from its own package (a relative import, or an absolute one from the
package itself) is its public API, not a leftover: colorama 0.4.6's ``from .ansi import Fore,
Back, Style, Cursor`` and six more, ten findings under a strict rule set. Where the module has
no ``__all__``, :func:`declared_reexports` gives those findings one fix, shared: an ``__all__``
after the imports at the top of the module, listing every public name the module binds at its
top level (its own imports from the package, its functions, classes and assigned names),
sorted as ruff's RUF022 sorts it, in the quotes most of its strings use, on one line where it
fits in 79 columns, else a name a line at the module's indentation. Two kinds of import stay
out of it, and their findings stay as they are: a submodule's (``from . import patterns``,
imported for its side effects or as an attribute), and one its comments call deprecated
(pathspec 0.12.1 keeps those out of its ``__all__`` on purpose).

That changes what ``from package import *`` binds: before, every public name in the package's
namespace, the modules it imports (``os``) and its submodules among them; after, the names
listed. The package's tests are the check, as for every unsafe fix. A module that already has
an ``__all__`` (its names not listed there were left out on purpose, or by mistake: which, only
its authors know), defines ``__getattr__`` or ``__dir__`` (its namespace is computed), imports
``*`` at its top (the names the star binds are not in the text: xlrd 2.0.1's ``from .formula
import *`` re-exports thirty-odd formula names, and an ``__all__`` without them took
``from xlrd import *`` from 61 names to 25, a reviewer's REJECT), or re-exports only private
names gets no candidate.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from structured_agents.tasks.lint_source import Source, findings_at, unsafe_fix

__all__ = ["declared_reexports"]

_COMPUTED = frozenset({"__getattr__", "__dir__"})
_WIDTH = 79
"""The longest ``__all__`` written on one line (PEP 8's width: fits every formatter's)."""


def _own(node: ast.ImportFrom, package: str) -> bool:
    """Whether ``node`` imports from the package itself (relatively, or by its name)."""
    return node.level > 0 or (node.module or "").split(".")[0] == package


def _submodules(node: ast.ImportFrom, package: str) -> bool:
    """Whether ``node`` imports the package's submodules (``from . import x``; the package's
    ``__init__.py`` is what runs, so ``x`` can only be a submodule), for their side effects or
    as attributes: not names the package declares."""
    return (node.level == 1 and node.module is None) or (node.level == 0 and node.module == package)


def _deprecated(module: Source, node: ast.stmt) -> bool:
    """Whether the comments just above ``node``, or on its lines, call it deprecated (pathspec
    0.12.1 keeps such re-exports out of its ``__all__`` on purpose)."""
    first = node.lineno
    while first > 1 and module.lines[first - 2].strip().startswith("#"):
        first -= 1
    said = "".join(module.lines[first - 1 : node.end_lineno or node.lineno])
    return re.search(r"deprecat", said, re.IGNORECASE) is not None


def _bound(module: Source, node: ast.stmt, package: str) -> Iterator[tuple[str, ast.AST]]:
    """The names a top-level statement binds that belong in the package's ``__all__``, each with
    the node that binds it."""
    if isinstance(node, ast.ImportFrom) and _own(node, package):
        if _submodules(node, package) or _deprecated(module, node):
            return
        for alias in node.names:
            yield alias.asname or alias.name, alias
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, node
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                yield target.id, target


def _named_at(module: Source, alias: ast.alias) -> int:
    """Where ruff reports an unused import: the name it binds (``y`` of ``x as y``)."""
    return module.end(alias) - len(alias.asname) if alias.asname else module.start(alias)


def _order(name: str) -> tuple[int, list[int | str]]:
    """RUF022's isort-style order: constants, then classes, then the rest, each in natural
    order (``x2`` before ``x10``)."""
    natural: list[int | str] = [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", name) and not re.fullmatch(r"[A-Z]", name):
        return 0, natural
    return (1, natural) if name[:1].isupper() else (2, natural)


def _quote(module: Source) -> str:
    """The quote most of ``module``'s string literals open with (double where none)."""
    single = double = 0
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and hasattr(node, "lineno"):
            opening = module.text[module.start(node) : module.start(node) + 4].lstrip("rRbBuUfF")
            single += opening.startswith("'")
            double += opening.startswith('"')
    return "'" if single > double else '"'


def _indent(module: Source) -> str:
    """The module's indentation unit: its first indented statement's (a tab, or spaces), else
    four spaces."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.stmt) and node.col_offset > 0:
            line = module.lines[node.lineno - 1]
            lead = line[: len(line) - len(line.lstrip(" \t"))]
            return "\t" if lead.startswith("\t") else lead
    return "    "


def _header_end(module: Source) -> int | None:
    """The offset after the imports at the top of the module (after its docstring and any
    ``from __future__``), or None where it starts with no import."""
    body = module.tree.body
    first = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    last = None
    for node in body[first:]:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            break
        last = node
    if last is None:
        return None
    return module.starts[min(last.end_lineno or last.lineno, len(module.lines))]


def declared_reexports(
    path: str, module: Source, diagnostics: Sequence[Mapping[str, Any]]
) -> dict[int, dict[str, Any]]:
    """The F401 findings of ``diagnostics`` (ruff's, on ``module``, the file ``path``) on the
    package's own public names imported by an ``__init__.py`` without an ``__all__``, by offset,
    each with the fix that declares the module's public names in one."""
    posix = PurePosixPath(path)
    if posix.name != "__init__.py":
        return {}
    package = posix.parent.name
    flagged = findings_at(module, diagnostics, "F401")
    names: dict[str, ast.AST] = {}
    for node in module.tree.body:
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return {}  # what the star binds is not in the text
        for name, binder in _bound(module, node, package):
            if name == "__all__" or name in _COMPUTED:
                return {}
            if not name.startswith("_"):
                names.setdefault(name, binder)
    reexported = {_named_at(module, b) for b in names.values() if isinstance(b, ast.alias)} & set(flagged)
    end = _header_end(module)
    if not reexported or end is None:
        return {}
    quote, indent = _quote(module), _indent(module)
    quoted = [f"{quote}{name}{quote}" for name in sorted(names, key=_order)]
    one_line = f"__all__ = [{', '.join(quoted)}]"
    listed = "".join(f"{indent}{name},\n" for name in quoted)
    declared = one_line + "\n" if len(one_line) <= _WIDTH else f"__all__ = [\n{listed}]\n"
    after = module.text[end : end + 1]
    text = "\n" + declared + ("" if after in ("\n", "\r", "") else "\n")
    fix = unsafe_fix(module, "Declare the package's public names in `__all__`", [(end, end, text)])
    return {at: {**flagged[at], "fix": fix} for at in reexported}
