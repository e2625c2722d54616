"""Insert or replace the docstring of one function, method or class, with libcst.

Everything but the docstring stays byte-identical: libcst round-trips the module, and only
the target's body changes (a new first statement, or a new string in place of the old
docstring, keeping its comments). A one-line body (``def f(): return x``) becomes an indented
block, the one reformatting a docstring needs. The docstring is written as ``\"\"\"...\"\"\"``
at the body's indentation, with the file's line ending; its text is cleaned with
``inspect.cleandoc``, so ``ast.get_docstring`` of the result gives that cleaned text back.

Targets are named as discovery names them (``Class.method``, ``outer.<locals>.inner``). When
several definitions share a name, ``@overload`` stubs and property setters/deleters give way to
the implementation or getter (as in discovery); otherwise ``line`` (the line of the
``def``/``class`` keyword) picks one.
"""

from __future__ import annotations

import functools
import inspect
from typing import cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from structured_agents.jobs.source import split_lines
from structured_agents.patches.errors import PatchError

__all__ = ["docstring_literal", "set_docstring"]

Definition = cst.FunctionDef | cst.ClassDef


def docstring_literal(text: str, indent: str, newline: str = "\n") -> str:
    """``text`` as a triple-quoted literal whose continuation lines are indented by ``indent``."""
    cleaned = inspect.cleandoc(text.replace("\r\n", "\n").replace("\r", "\n"))
    if not cleaned.strip():
        raise PatchError("a docstring must not be empty")
    escaped = cleaned.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if escaped.endswith('"'):
        escaped = escaped[:-1] + '\\"'
    first, *rest = escaped.split("\n")
    if not rest:
        return f'"""{first}"""'
    body = newline.join(f"{indent}{line}" if line.strip() else "" for line in rest)
    return f'"""{first}{newline}{body}{newline}{indent}"""'


class _Definitions(cst.CSTVisitor):
    """Every function and class of a module with its qualified name."""

    def __init__(self) -> None:
        self.found: list[tuple[str, Definition]] = []
        self._prefixes: list[str] = [""]

    def _enter(self, node: Definition, suffix: str) -> None:
        qualname = self._prefixes[-1] + node.name.value
        self.found.append((qualname, node))
        self._prefixes.append(qualname + suffix)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter(node, ".")

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._prefixes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter(node, ".<locals>.")

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._prefixes.pop()


def _decorator_name(decorator: cst.Decorator) -> str:
    target = decorator.decorator
    target = target.func if isinstance(target, cst.Call) else target
    if isinstance(target, cst.Name):
        return target.value
    return target.attr.value if isinstance(target, cst.Attribute) else ""


def _is_companion(node: Definition) -> bool:
    """An ``@overload`` stub or a property setter/deleter."""
    return any(_decorator_name(d) in ("overload", "setter", "deleter") for d in node.decorators)


def _docstring_line(body: cst.BaseSuite) -> cst.SimpleStatementLine | None:
    """The body's docstring statement, if its first statement is a string."""
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    first = body.body[0]
    if not isinstance(first, cst.SimpleStatementLine) or len(first.body) != 1:
        return None
    expr = first.body[0]
    if isinstance(expr, cst.Expr) and isinstance(expr.value, cst.SimpleString | cst.ConcatenatedString):
        return first
    return None


@functools.lru_cache(maxsize=16)
def _definitions(source: str) -> tuple[cst.Module, tuple[tuple[str, Definition, int], ...]]:
    """The parsed module and its definitions (qualified name, node, line of the name), kept for
    the few most recent files: a batch writes many docstrings into each file, and parsing and
    placing a module's nodes costs far more than changing one (libcst nodes are immutable, so
    the cached tree is never changed by a replacement)."""
    try:
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    except cst.ParserSyntaxError as exc:
        raise PatchError(f"the file does not parse: {exc}") from exc
    positions = wrapper.resolve(PositionProvider)
    visitor = _Definitions()
    wrapper.visit(visitor)
    found = tuple((name, node, positions[node.name].start.line) for name, node in visitor.found)
    return wrapper.module, found


def _find(source: str, qualname: str, line: int | None) -> tuple[cst.Module, Definition, int]:
    module, found = _definitions(source)
    matches = [(node, def_line) for name, node, def_line in found if name == qualname]
    if line is not None:
        matches = [match for match in matches if match[1] == line]
    elif len(matches) > 1:  # as discovery does, prefer the implementation to its companions
        matches = [match for match in matches if not _is_companion(match[0])] or matches
    if not matches:
        where = f" on line {line}" if line is not None else ""
        raise PatchError(f"no function or class {qualname!r}{where} in the file")
    if len(matches) > 1:
        lines = ", ".join(str(found_line) for _, found_line in matches)
        raise PatchError(f"{qualname!r} is defined {len(matches)} times (lines {lines}); pass line=")
    node, def_line = matches[0]
    return module, node, def_line


def set_docstring(source: str, qualname: str, docstring: str, *, line: int | None = None) -> str:
    """``source`` with the docstring of ``qualname`` set to ``docstring`` (inserted or replaced)."""
    module, node, def_line = _find(source, qualname, line)
    body = node.body
    def_text = split_lines(source)[def_line - 1]
    unit = body.indent if isinstance(body, cst.IndentedBlock) and body.indent is not None else None
    indent = def_text[: len(def_text) - len(def_text.lstrip(" \t"))] + (unit or module.default_indent)
    string = cst.SimpleString(docstring_literal(docstring, indent, module.default_newline))
    new_body: cst.BaseSuite
    if isinstance(body, cst.SimpleStatementSuite):  # def f(): return x
        statements = [
            cst.SimpleStatementLine(body=[cst.Expr(string)]),
            cst.SimpleStatementLine(body=body.body),
        ]
        new_body = cst.IndentedBlock(header=body.trailing_whitespace, body=statements)
    elif (old := _docstring_line(body)) is not None:
        expr = old.body[0]
        replaced = old.with_changes(body=[cst.Expr(string, semicolon=expr.semicolon)])
        new_body = body.with_changes(body=[replaced, *body.body[1:]])
    else:
        new_body = body.with_changes(body=[cst.SimpleStatementLine(body=[cst.Expr(string)]), *body.body])
    updated = module.deep_replace(node, node.with_changes(body=new_body))
    return cast(cst.Module, updated).code  # replacing an inner node leaves a Module
