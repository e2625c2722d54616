"""Argument values of Qwen XML tool calls, read and written per the tool's JSON schema.

Qwen3's XML call format writes each argument as ``<parameter=KEY>\\nVALUE\\n</parameter>``:
strings as raw text, everything else as JSON. Text alone is ambiguous (``42`` may be a number
or the string "42"), so a value is read against the schema of its property when it is known:

* a property whose schema allows only strings (``type: string``, string ``enum``/``const``)
  keeps the raw text, minus *quote noise*: a value that is, as a whole, one JSON string literal
  (``"London"``) is decoded, and one wrapped in single quotes with none inside (``'London'``) is
  unwrapped. A value with quotes only inside (``He said "hi"``) stays as written;
* any other schema: the text is read as JSON when that gives a value of an allowed type,
  else as a string if strings are allowed, else as JSON anyway, else as the raw text;
* no schema (unknown tool or property): JSON when the text parses, else the raw text.

``render_value`` is the exact inverse: it writes a string raw only when reading the raw text
back gives the same string, and otherwise as a JSON string with ``</`` escaped as ``<\\/``
(valid JSON), so a value never contains the ``</parameter>`` that would end it early.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from structured_agents.grammar.refs import resolve_ref
from structured_agents.types import JsonDict, json_type_of

__all__ = [
    "VALUE_EXCLUDES",
    "canonical",
    "clean_string",
    "coerce_value",
    "dumps_json",
    "parse_value",
    "property_schema",
    "render_value",
    "same_value",
]

VALUE_EXCLUDES: tuple[str, ...] = (
    "</parameter>",
    "</function>",
    "</tool_call>",
    "<tool_call>",
    "<function=",
    "<parameter=",
)
"""What a value may not hold: the markers that close it or its call, and those that open another
call or argument (a small model runs on into the next call inside a value, which then never
closes)."""
"""Closing markers a raw argument value may not contain (the grammar excludes them too)."""

_MAX_REF_DEPTH = 32


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    """``schema`` with local ``$ref`` pointers (``#``, ``#/$defs/...``) followed; else as is."""
    for _ in range(_MAX_REF_DEPTH):
        if not isinstance(schema, Mapping) or not isinstance(schema.get("$ref"), str):
            return schema
        schema = resolve_ref(root, schema["$ref"])
        if schema is None:
            return {}
    return {}


def _schema_types(schema: Any, root: Mapping[str, Any], depth: int = 0) -> frozenset[str] | None:
    """The JSON types a schema allows, or ``None`` when it does not constrain the type."""
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or depth > _MAX_REF_DEPTH:
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(str(t) for t in declared)
    if "const" in schema:
        return frozenset({json_type_of(schema["const"])})
    if isinstance(schema.get("enum"), list):
        return frozenset(json_type_of(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            found = [_schema_types(b, root, depth + 1) for b in branches]
            if not found or any(t is None for t in found):
                return None
            return frozenset().union(*(t for t in found if t is not None))
    if "properties" in schema:
        return frozenset({"object"})
    if "items" in schema:
        return frozenset({"array"})
    return None


def _matches(value: Any, types: frozenset[str]) -> bool:
    kind = json_type_of(value)
    return kind in types or (kind == "integer" and "number" in types)


def property_schema(schema: Any, key: str, root: Mapping[str, Any]) -> Any:
    """The schema of property ``key`` of an object ``schema`` (``None`` if unknown)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return None
    props = schema.get("properties")
    if isinstance(props, Mapping) and key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def clean_string(text: str) -> str:
    """``text`` without quote noise: a whole JSON string literal decoded, ``'x'`` unwrapped."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"':
        try:
            decoded = json.loads(stripped)
        except ValueError:
            return text
        return decoded if isinstance(decoded, str) else text
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == "'" and "'" not in stripped[1:-1]:
        return stripped[1:-1]
    return text


def parse_value(text: str, schema: Any, root: Mapping[str, Any]) -> Any:
    """The typed value of one raw ``<parameter>`` text (see the module docstring)."""
    types = _schema_types(schema, root)
    if types is not None and types <= {"string"}:
        return clean_string(text)
    stripped = text.strip()
    try:
        decoded: Any = json.loads(stripped)
    except ValueError:
        if types is not None and "boolean" in types and stripped in ("True", "False"):
            return stripped == "True"
        return clean_string(text) if types is None or "string" in types else text
    if types is None or _matches(decoded, types):
        return decoded
    if "string" in types:
        return clean_string(text)
    if isinstance(decoded, str):  # a quoted number/object: read what is inside the quotes
        return parse_value(decoded, schema, root)
    return decoded


def coerce_value(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    """An already-typed argument (from a server's tool_calls) with string noise removed.

    Strings where the schema allows only strings lose their quote noise; strings where it
    allows no string at all are read as JSON (``"42"`` for an integer becomes 42).
    """
    if not isinstance(value, str):
        return value
    types = _schema_types(schema, root)
    if types is None:
        return value
    if types <= {"string"}:
        return clean_string(value)
    return value if "string" in types else parse_value(value, schema, root)


def canonical(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    """``value`` with every object's keys in the schema's declared order (XGrammar's order)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        declared = list(props) if isinstance(props, Mapping) else []
        keys = [k for k in declared if k in value] + [k for k in value if k not in declared]
        return {k: canonical(value[k], property_schema(schema, k, root), root) for k in keys}
    if isinstance(value, list):
        items = schema.get("items")
        return [canonical(v, items, root) for v in value]
    return value


def same_value(a: Any, b: Any) -> bool:
    """JSON equality that tells ``True`` from ``1`` and ``1`` from ``1.0``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


_OPENERS = re.compile(r"<(?=tool_call>|function=|parameter=)")


def dumps_json(value: Any) -> str:
    """Compact-ish JSON (``", "``/``": "``, non-ASCII kept) with ``</`` written as ``<\\/`` and
    the ``<`` of a marker that opens a call or argument as ``\\u003c`` (no value holds one of
    :data:`VALUE_EXCLUDES`)."""
    return _OPENERS.sub(r"\\u003c", json.dumps(value, ensure_ascii=False).replace("</", "<\\/"))


def render_value(value: Any, schema: Any, root: JsonDict, *, json_strings: bool) -> str:
    """The text of one argument value; ``parse_value`` of it gives ``value`` back."""
    if isinstance(value, str) and not json_strings:
        raw_ok = not any(marker in value for marker in VALUE_EXCLUDES)
        if raw_ok and same_value(parse_value(value, schema, root), value):
            return value
    return dumps_json(canonical(value, schema, root))
