"""JSON schema of an input from its annotation, read from the AST (nothing is imported).

==============================  ===========================================================
annotation                      schema
==============================  ===========================================================
``str`` ``int`` ``float``       ``{"type": "string"}`` / ``integer`` / ``number``
``bool`` ``None``               ``{"type": "boolean"}`` / ``{"type": "null"}``
``list`` ``dict`` ``Any``       ``{"type": "array"}`` / ``{"type": "object"}`` / ``{}``
``list[T]`` ``List[T]``         ``{"type": "array", "items": T}``
``dict[str, T]`` ``Dict[...]``  ``{"type": "object", "additionalProperties": T}``
``Optional[T]`` ``T | None``    ``{"type": [T, "null"]}`` for plain types, else ``anyOf``
``Union[A, B]`` ``A | B``       the same rule as above
``Literal["a", "b"]``           ``{"type": "string", "enum": ["a", "b"]}``
``"T"`` (a string)              the annotation it contains
==============================  ===========================================================

``typing.X`` spellings are accepted too. Anything else raises :class:`UnsupportedAnnotation`.
"""

from __future__ import annotations

import ast
from typing import Any

from structured_agents import syntax
from structured_agents.types import JsonDict, json_type_of

__all__ = ["UnsupportedAnnotation", "annotation_schema"]

_SIMPLE: dict[str, JsonDict] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array"},
    "List": {"type": "array"},
    "dict": {"type": "object"},
    "Dict": {"type": "object"},
    "Any": {},
    "None": {"type": "null"},
}


class UnsupportedAnnotation(ValueError):
    """The annotation has no JSON-schema equivalent here; the message says which part."""


def _name(node: ast.expr) -> str | None:
    """``str`` for ``str`` and ``typing.str``-style attribute spellings; None otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "typing":
        return node.attr
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return None


def _union(members: list[JsonDict]) -> JsonDict:
    """One schema accepting any member: a type list when every member is a plain type."""
    if all(set(m) == {"type"} for m in members):
        types: list[str] = []
        for member in members:
            for kind in member["type"] if isinstance(member["type"], list) else [member["type"]]:
                if kind not in types:
                    types.append(kind)
        return {"type": types[0]} if len(types) == 1 else {"type": types}
    if any(not m for m in members):  # Any absorbs the rest
        return {}
    return {"anyOf": members}


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    return [node]


def _subscript_args(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _literal(args: list[ast.expr], source: str) -> JsonDict:
    values: list[Any] = []
    for arg in args:
        if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str | int | bool | None):
            raise UnsupportedAnnotation(f"Literal values must be str, int, bool or None in {source!r}")
        values.append(arg.value)
    types = {json_type_of(v) for v in values}
    schema: JsonDict = {"enum": values}
    if len(types) == 1:
        schema = {"type": types.pop(), "enum": values}
    return schema


def annotation_schema(node: ast.expr) -> JsonDict:
    """The JSON schema of an annotation expression; UnsupportedAnnotation when there is none."""
    source = ast.unparse(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            inner = syntax.parse(node.value, mode="eval").body
        except SyntaxError as exc:
            raise UnsupportedAnnotation(f"string annotation {node.value!r} is not an expression") from exc
        return annotation_schema(inner)
    if isinstance(node, ast.BinOp):
        return _union([annotation_schema(m) for m in _union_members(node)])
    name = _name(node)
    if name is not None and name in _SIMPLE:
        return dict(_SIMPLE[name])
    if isinstance(node, ast.Subscript):
        return _generic(node, source)
    raise UnsupportedAnnotation(f"unsupported input type {source!r}")


def _generic(node: ast.Subscript, source: str) -> JsonDict:
    origin = _name(node.value)
    args = _subscript_args(node)
    if origin in ("list", "List") and len(args) == 1:
        return {"type": "array", "items": annotation_schema(args[0])}
    if origin in ("dict", "Dict") and len(args) == 2:
        if _name(args[0]) != "str":
            raise UnsupportedAnnotation(f"dict keys must be str in {source!r} (JSON object keys)")
        return {"type": "object", "additionalProperties": annotation_schema(args[1])}
    if origin == "Optional" and len(args) == 1:
        return _union([annotation_schema(args[0]), {"type": "null"}])
    if origin == "Union":
        return _union([annotation_schema(a) for a in args])
    if origin == "Literal":
        return _literal(args, source)
    raise UnsupportedAnnotation(f"unsupported input type {source!r}")
