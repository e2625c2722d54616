"""Docstring targets: every function, method and class of a codebase that lacks a docstring.

Qualified names follow Python's ``__qualname__``: ``func``, ``Class``, ``Class.method``,
``Outer.Inner.method``, and ``outer.<locals>.inner`` for a function or class defined inside a
function (nested definitions are included: they are targets like any other).

Left out on purpose: ``@overload`` stubs (the implementation carries the docstring) and property
setters and deleters (the getter does), since they share their qualified name with the
definition that should be documented. ``include_private=False`` also leaves out every target
with a ``_private`` name in its qualified name (dunder names such as ``__init__`` are public).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from structured_agents import syntax
from structured_agents.jobs.ids import job_id
from structured_agents.jobs.source import read_source, split_lines
from structured_agents.jobs.spec import JobSpec
from structured_agents.jobs.walk import iter_source_files
from structured_agents.tasks.docstring.style import style_of

__all__ = ["DOCSTRING_KIND", "DocstringTarget", "Gives", "discover_docstring_jobs", "find_docstring_targets"]

Gives = Literal["returns", "yields"]
"""What a function hands back that its docstring describes: a value, or the values it yields."""

DOCSTRING_KIND = "docstring"
logger = logging.getLogger(__name__)

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True, slots=True)
class DocstringTarget:
    """One definition found in a module."""

    qualname: str
    """Python-style qualified name."""
    kind: str
    """``function``, ``method`` or ``class``."""
    def_line: int
    """Line of the ``def``/``class`` keyword (1-based); tells same-named definitions apart."""
    start_line: int
    """First line of the segment: the first decorator, or the ``def``/``class`` line."""
    end_line: int
    """Last line of the definition."""
    segment: str
    """The exact source of lines ``start_line..end_line``, with indentation and line endings."""
    docstring: str | None
    """The current docstring (cleaned as ``ast.get_docstring`` does), None when there is none."""
    parameters: tuple[str, ...] = ()
    """What a docstring may describe as parameters: a function's parameters (``*args``,
    ``**kwargs`` with their stars; a method's ``self``/``cls`` left out), or a class's
    ``__init__`` parameters and annotated class attributes (dataclass-style fields)."""
    gives: Gives | None = None
    """``returns`` for a function that returns a value, ``yields`` for a generator, None for a
    class, a property, or a function that returns nothing."""

    def inputs(self) -> dict[str, object]:
        """The job inputs describing this target."""
        return {
            "qualname": self.qualname,
            "target_kind": self.kind,
            "def_line": self.def_line,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "source": self.segment,
            "docstring": self.docstring,
            "parameter_names": list(self.parameters),
            "gives": self.gives,
        }


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return ""


def _is_companion(node: Definition) -> bool:
    """An ``@overload`` stub or a property setter/deleter: documented elsewhere."""
    names = {_decorator_name(decorator) for decorator in node.decorator_list}
    return bool(names & {"overload", "setter", "deleter"})


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _function_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg is not None:
        names.append(f"*{args.vararg.arg}")
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(f"**{args.kwarg.arg}")
    return names


def _parameters(node: Definition, kind: str) -> tuple[str, ...]:
    """The names a docstring of ``node`` may describe as parameters."""
    if not isinstance(node, ast.ClassDef):
        names = _function_parameters(node)
        return tuple(names[1:] if kind == "method" and names[:1] in (["self"], ["cls"]) else names)
    names = []
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and statement.name == "__init__":
            names += _function_parameters(statement)[1:]
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.append(statement.target.id)
    return tuple(dict.fromkeys(names))


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body, not of the functions and classes nested in it (in no
    particular order: a stack, not nested generators, so deep code costs no more per node)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            yield child
            stack.extend(ast.iter_child_nodes(child))


def _own_statements(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.stmt]:
    """The statements of a function's own body (those of nested functions and classes left out)."""
    stack: list[ast.stmt] = list(node.body)
    while stack:
        statement = stack.pop()
        if not isinstance(statement, Definition):
            yield statement
            stack.extend(_nested_statements(statement))


def _gives(node: Definition, segment: str) -> Gives | None:
    """What the docstring of ``node`` describes as handed back (see :attr:`DocstringTarget.gives`);
    ``segment`` is its source (a function without the word ``yield`` in it yields nothing, which
    spares walking every expression of most functions)."""
    if isinstance(node, ast.ClassDef):
        return None
    if any(
        _decorator_name(decorator) in ("property", "cached_property") for decorator in node.decorator_list
    ):
        return None
    if "yield" in segment and any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(node)):
        return "yields"
    returned = [n for n in _own_statements(node) if isinstance(n, ast.Return) and n.value is not None]
    if any(not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in returned):
        return "returns"
    return None


def _walk(body: list[ast.stmt], prefix: str, in_class: bool) -> Iterator[tuple[Definition, str, str]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            qualname = f"{prefix}{node.name}"
            yield node, qualname, "class"
            yield from _walk(node.body, f"{qualname}.", in_class=True)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            qualname = f"{prefix}{node.name}"
            yield node, qualname, "method" if in_class else "function"
            yield from _walk(node.body, f"{qualname}.<locals>.", in_class=False)
        else:  # definitions under if/try/with/for/match blocks still belong to this scope
            yield from _walk(_nested_statements(node), prefix, in_class)


def _nested_statements(node: ast.stmt) -> list[ast.stmt]:
    statements: list[ast.stmt] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            statements.append(child)
        elif isinstance(child, ast.ExceptHandler | ast.match_case):
            statements.extend(child.body)
    return statements


def find_docstring_targets(
    source: str, *, include_documented: bool = False, include_private: bool = True
) -> list[DocstringTarget]:
    """The definitions of one module's source that need a docstring (all of them with
    ``include_documented``); raises ``SyntaxError`` when the source does not parse."""
    return _targets(_definitions(source), source, include_documented, include_private)


def _definitions(source: str) -> list[tuple[Definition, str, str, str | None]]:
    """Every definition of a module: node, qualified name, kind and docstring."""
    tree = syntax.parse(source.removeprefix("\ufeff"))
    return [(node, name, kind, ast.get_docstring(node)) for node, name, kind in _walk(tree.body, "", False)]


def _targets(
    definitions: list[tuple[Definition, str, str, str | None]],
    source: str,
    include_documented: bool,
    include_private: bool,
) -> list[DocstringTarget]:
    lines = split_lines(source)
    targets = []
    for node, qualname, kind, docstring in definitions:
        if _is_companion(node) or (docstring is not None and not include_documented):
            continue
        if not include_private and any(_is_private(part) for part in qualname.split(".")):
            continue
        start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        end = node.end_lineno or node.lineno
        segment = "".join(lines[start - 1 : end])
        targets.append(
            DocstringTarget(
                qualname,
                kind,
                node.lineno,
                start,
                end,
                segment,
                docstring,
                _parameters(node, kind),
                _gives(node, segment),
            )
        )
    return targets


def discover_docstring_jobs(
    root: Path, *, include_documented: bool = False, include_private: bool = True
) -> list[JobSpec]:
    """One job per target of every Python file under ``root`` that git would not ignore; each
    job's inputs carry the docstring style the codebase already uses (``style``).

    Files that cannot be read, decoded or parsed are logged and skipped.
    """
    found = []  # each file parsed once, its tree dropped at once (thousands kept alive slow the GC)
    docstrings: list[str] = []
    for relative in iter_source_files(root):
        source = read_source(root / relative)
        if source is None:
            continue
        try:
            definitions = _definitions(source.text)
        except (SyntaxError, ValueError) as exc:  # ValueError: source with NUL bytes
            logger.warning("skipping %s: does not parse: %s", relative, exc)
            continue
        docstrings += (docstring for *_, docstring in definitions if docstring)
        found.append(
            (relative, source, _targets(definitions, source.text, include_documented, include_private))
        )
    style = style_of(docstrings)
    jobs = []
    for relative, source, targets in found:
        path = relative.as_posix()
        for target in targets:
            jobs.append(
                JobSpec(
                    job_id=job_id(DOCSTRING_KIND, relative, target.qualname, target.segment),
                    kind=DOCSTRING_KIND,
                    path=path,
                    qualname=target.qualname,
                    source_hash=source.hash,
                    inputs={"path": path, "style": style, **target.inputs()},
                )
            )
    return jobs
