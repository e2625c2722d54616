"""The ``.pym`` checker: what a Grail script may contain, with a code for every rejection.

=======  ==================================================================================
code     rejected
=======  ==================================================================================
PYM000   the file or folder cannot be read (reported by the registry and the CLI)
PYM001   not valid Python (syntax error), or a sandbox parser limit hit at run time
PYM002   ``class`` definitions
PYM003   generators: ``yield`` and ``yield from``
PYM004   ``with`` and ``async with``
PYM005   ``match`` statements
PYM006   ``global`` and ``nonlocal``
PYM007   ``del``
PYM008   ``lambda``
PYM009   imports other than ``grail``, ``typing`` and ``__future__``
PYM010   names ``grail`` does not provide (only ``Input`` and ``external``), or aliases
PYM011   ``x: T = Input("y")``: the input name differs from the variable
PYM012   ``Input(...)`` anywhere but a top-level ``name: T = Input("name", ...)`` statement,
         or with arguments other than the name, ``default=`` and ``description=``
PYM013   a ``default=`` that is not a JSON literal (numbers, strings, lists, dicts, ...)
PYM014   a ``default=`` that does not match the declared type
PYM015   an input type with no JSON-schema equivalent (see :mod:`.schema`)
PYM016   two declarations (inputs or externals) of one name
PYM017   ``try``/``except*`` (exception groups)
PYM018   ``async for`` and async comprehensions
PYM019   running code built at run time: the names ``exec``, ``eval``, ``compile``,
         ``__import__`` and ``__builtins__`` (called, aliased or rebound), the attributes
         ``.__import__``/``.__builtins__``, and ``getattr``/``setattr``/``hasattr``/``delattr``
         with one of those names as a string literal
PYM020   an ``@external`` with a body (only a docstring and ``...`` are allowed)
PYM021   an ``@external`` that is not a top-level ``async def`` with that one decorator
PYM022   an ``@external`` parameter without annotation, or ``*args``/``**kwargs``
PYM023   an external used other than as ``await name(...)``
PYM024   an external the host does not grant (checked against the grants, see .externals)
PYM025   an external whose parameters differ from the host function's
PYM030   a declaration sharing a line with another statement
PYM031   two scripts of one tool name in a registry folder (the first one is kept)
=======  ==================================================================================

Monty itself runs some of these (classes, lambdas, ``global``); the Grail format keeps them
out so tools stay small, declarative and portable across sandbox versions. PYM019 is a static
check of what the source spells out: Monty runs ``exec`` and ``eval`` (within its own limits
and modules; it has no ``compile``, ``__import__`` or ``__builtins__``), so a script that reaches
them another way (a name computed at run time) still runs only what the sandbox allows.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from structured_agents import syntax
from structured_agents.pym.errors import Diagnostic
from structured_agents.pym.model import ExternalDecl, ExternalParam, InputSpec
from structured_agents.pym.schema import UnsupportedAnnotation, annotation_schema

__all__ = ["CheckResult", "check_source"]

ALLOWED_IMPORTS = frozenset({"grail", "typing", "__future__"})
DYNAMIC_CODE = frozenset({"exec", "eval", "compile", "__import__", "__builtins__"})
"""Names that run (or reach what runs) code built at run time (PYM019)."""
_ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "hasattr", "delattr"})
GRAIL_NAMES = frozenset({"Input", "external"})
_FORBIDDEN: dict[type[ast.AST], tuple[str, str]] = {
    ast.ClassDef: ("PYM002", "class definitions are not supported"),
    ast.Yield: ("PYM003", "generators (yield) are not supported"),
    ast.YieldFrom: ("PYM003", "generators (yield from) are not supported"),
    ast.With: ("PYM004", "'with' is not supported"),
    ast.AsyncWith: ("PYM004", "'async with' is not supported"),
    ast.Match: ("PYM005", "'match' is not supported"),
    ast.Global: ("PYM006", "'global' is not supported"),
    ast.Nonlocal: ("PYM006", "'nonlocal' is not supported"),
    ast.Delete: ("PYM007", "'del' is not supported"),
    ast.Lambda: ("PYM008", "'lambda' is not supported; define a function"),
    ast.TryStar: ("PYM017", "'except*' (exception groups) is not supported"),
    ast.AsyncFor: ("PYM018", "'async for' is not supported"),
}


@dataclass
class CheckResult:
    """Everything the checker learnt from one source text."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    docstring: str | None = None
    inputs: list[InputSpec] = field(default_factory=list)
    externals: list[ExternalDecl] = field(default_factory=list)
    removed: list[tuple[int, int]] = field(default_factory=list)
    """1-based inclusive line spans of declarations, blanked out of the code that runs."""


def _is_input_call(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Input"


def _dynamic_code(node: ast.AST) -> str | None:
    """The PYM019 name ``node`` uses, if any."""
    if isinstance(node, ast.Name) and node.id in DYNAMIC_CODE:
        return node.id
    if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_CODE and node.attr.startswith("__"):
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _ATTRIBUTE_FUNCTIONS
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in DYNAMIC_CODE
    ):
        return str(node.args[1].value)
    return None


def _is_ellipsis(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is ...


def _json_literal(value: Any) -> Any:
    """The value with tuples as lists; ValueError when it is not JSON (sets, bytes, ...)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json_literal(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json_literal(v) for k, v in value.items()}
    raise ValueError(type(value).__name__)


class _Checker:
    def __init__(self, path: str) -> None:
        self.path = path
        self.result = CheckResult()
        self.declared: set[str] = set()
        self.declaration_nodes: set[int] = set()

    def report(self, code: str, message: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0) + 1
        self.result.diagnostics.append(Diagnostic(code, message, self.path, line, column))

    def declare(self, name: str, node: ast.AST) -> bool:
        if name in self.declared:
            self.report("PYM016", f"{name!r} is declared twice", node)
            return False
        self.declared.add(name)
        return True

    def run(self, tree: ast.Module) -> CheckResult:
        self.result.docstring = ast.get_docstring(tree)
        kept: list[ast.stmt] = []
        for stmt in tree.body:
            if self.top_level(stmt):
                start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
                self.result.removed.append((start, stmt.end_lineno or stmt.lineno))
                self.declaration_nodes.add(id(stmt))
            else:
                kept.append(stmt)
        for stmt in kept:
            end = stmt.end_lineno or stmt.lineno
            if any(start <= end and stmt.lineno <= stop for start, stop in self.result.removed):
                self.report("PYM030", "a declaration shares a line with this statement", stmt)
        self.walk(tree)
        self.result.diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
        return self.result

    def top_level(self, stmt: ast.stmt) -> bool:
        """Handle a declaration statement; False for any other statement."""
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "grail" and stmt.level == 0:
            for alias in stmt.names:
                if alias.name not in GRAIL_NAMES or alias.asname:
                    shown = alias.name + (f" as {alias.asname}" if alias.asname else "")
                    self.report("PYM010", f"'from grail import {shown}': only Input, external", stmt)
            return True
        if isinstance(stmt, ast.AnnAssign) and _is_input_call(stmt.value):
            self.input(stmt)
            return True
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            isinstance(d, ast.Name) and d.id == "external" for d in stmt.decorator_list
        ):
            self.external(stmt)
            return True
        return False

    def input(self, stmt: ast.AnnAssign) -> None:
        call = stmt.value
        assert isinstance(call, ast.Call)
        if not isinstance(stmt.target, ast.Name):
            self.report("PYM012", "Input() must be assigned to a plain name", stmt)
            return
        var = stmt.target.id
        name_arg = call.args[0] if len(call.args) == 1 else None
        if not (isinstance(name_arg, ast.Constant) and isinstance(name_arg.value, str)):
            self.report("PYM012", f"Input() for {var!r} takes exactly one argument, the name string", call)
            return
        if name_arg.value != var:
            self.report("PYM011", f"Input name {name_arg.value!r} differs from the variable {var!r}", call)
            return
        try:
            schema = annotation_schema(stmt.annotation)
        except UnsupportedAnnotation as exc:
            self.report("PYM015", f"input {var!r}: {exc}", stmt.annotation)
            return
        required, default = True, None
        for keyword in call.keywords:
            if keyword.arg == "description":
                value = keyword.value
                if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                    self.report("PYM012", f"description of input {var!r} must be a string literal", value)
                    return
                schema["description"] = value.value
                continue
            if keyword.arg == "default":
                try:
                    default = _json_literal(ast.literal_eval(keyword.value))
                except ValueError:
                    self.report("PYM013", f"default of input {var!r} must be a JSON literal", keyword.value)
                    return
                required = False
                continue
            shown = f"{keyword.arg}=" if keyword.arg else "**"
            self.report("PYM012", f"Input() for {var!r}: unexpected argument {shown}", keyword.value)
            return
        if not required:
            if not Draft202012Validator(schema).is_valid(default):
                message = f"default {default!r} of input {var!r} is not a {ast.unparse(stmt.annotation)}"
                self.report("PYM014", message, stmt)
                return
            schema["default"] = default
        if self.declare(var, stmt):
            self.result.inputs.append(InputSpec(var, schema, required, default, stmt.lineno))

    def external(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if not isinstance(fn, ast.AsyncFunctionDef) or len(fn.decorator_list) != 1:
            self.report("PYM021", f"external {fn.name!r} must be an 'async def' with only @external", fn)
            return
        body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
        extra = [stmt for stmt in body if not _is_ellipsis(stmt)]
        if extra:
            self.report("PYM020", f"external {fn.name!r} must have no body (only '...')", extra[0])
            return
        args = fn.args
        if args.vararg or args.kwarg:
            self.report("PYM022", f"external {fn.name!r}: *args/**kwargs are not supported", fn)
            return
        positional = [*args.posonlyargs, *args.args]
        defaults_from = len(positional) - len(args.defaults)
        params: list[ExternalParam] = []
        for index, arg in enumerate([*positional, *args.kwonlyargs]):
            if arg.annotation is None:
                self.report("PYM022", f"parameter {arg.arg!r} of external {fn.name!r} needs a type", arg)
                return
            has_default = (
                index >= defaults_from
                if index < len(positional)
                else args.kw_defaults[index - len(positional)] is not None
            )
            params.append(ExternalParam(arg.arg, ast.unparse(arg.annotation), has_default))
        if self.declare(fn.name, fn):
            self.result.externals.append(ExternalDecl(fn.name, tuple(params), fn.lineno, fn.col_offset + 1))

    def walk(self, tree: ast.Module) -> None:
        externals = {e.name for e in self.result.externals}
        awaited = {
            id(n.value.func)
            for n in ast.walk(tree)
            if isinstance(n, ast.Await) and isinstance(n.value, ast.Call)
        }
        for stmt in tree.body:
            if id(stmt) in self.declaration_nodes:
                continue
            for node in ast.walk(stmt):
                self.visit(node, externals, awaited)

    def visit(self, node: ast.AST, externals: set[str], awaited: set[int]) -> None:
        forbidden = _FORBIDDEN.get(type(node))
        if forbidden is not None:
            self.report(*forbidden, node)
        elif (dynamic := _dynamic_code(node)) is not None:
            message = f"{dynamic!r} is not allowed: a tool may not run code it builds at run time"
            self.report("PYM019", message, node)
        elif isinstance(node, ast.comprehension) and node.is_async:
            self.report("PYM018", "async comprehensions are not supported", node.target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name != "typing":
                    self.report("PYM009", f"'import {alias.name}': only typing may be imported", node)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module not in ALLOWED_IMPORTS or module == "grail":
                where = " at top level" if module == "grail" else ""
                self.report("PYM009", f"'from {module} import': only grail{where}, typing, __future__", node)
        elif _is_input_call(node):
            self.report("PYM012", "Input() must be a top-level 'name: T = Input(\"name\", ...)'", node)
        elif isinstance(node, ast.Name) and node.id == "external":
            self.report("PYM021", "@external must decorate a top-level async def", node)
        elif (
            isinstance(node, ast.Name)
            and node.id in externals
            and id(node) not in awaited
            and isinstance(node.ctx, ast.Load)
        ):
            self.report("PYM023", f"external {node.id!r} must be called as 'await {node.id}(...)'", node)


def check_source(source: str, path: str = "") -> CheckResult:
    """Check one ``.pym`` source text; syntax errors are a PYM001 diagnostic, never raised."""
    try:
        tree = syntax.parse(source, path or "<pym>")
    except SyntaxError as exc:
        message = f"syntax error: {exc.msg}"
        diagnostic = Diagnostic("PYM001", message, path, exc.lineno or 1, exc.offset or 1)
        return CheckResult(diagnostics=[diagnostic])
    return _Checker(path).run(tree)
