"""EBNF for FunctionGemma argument values, typed by each tool's JSON schema.

``escaped_strings`` writes strings as ``<escape>...<escape>`` and keys bare (the native
format); ``json`` writes strings and keys as JSON strings. Schema keywords read:

* ``type`` (a name or a list of names), ``const``, ``enum`` (alternatives of the rendered
  values), ``anyOf``/``oneOf`` (alternatives of the branches), a one-branch ``allOf``;
* objects: ``properties`` and ``required``. Keys come in FunctionGemma's order (sorted
  case-insensitively, see :func:`sorted_keys`); required keys must appear, optional keys may
  be left out, unknown keys are rejected. An object schema without ``properties`` or
  ``required`` takes any keys unless ``additionalProperties`` is ``false``;
* arrays: ``items`` (one schema) and ``minItems`` (unrolled, at most :data:`MAX_MIN_ITEMS`;
  ``maxItems`` is not enforced);
* ``$ref`` to a JSON pointer in the tool's own schema (``#/$defs/...``), recursion allowed;
* strings: a ``pattern`` of the form ``^[^CHARS]*$`` (none of ``CHARS``), or
  ``^[^FIRST][^CHARS]*$`` (a first character that is none of ``FIRST``, then none of
  ``CHARS``; ``^(...)?$``: or the empty string; ``^Return [^FIRST]...``: after literal
  opening words), where both sets include ``<`` (so no marker
  can stand in the text either), in the ``escaped_strings`` style: a string the model cannot
  fill with call syntax (``{``, ``:``) or markup (``<``), nor open on punctuation. Other
  patterns are left to the tool's own validation.

Anything else (``not``, ``if``, ``patternProperties``, string formats, numeric ranges) falls
back to the generic value, or is left to the tool's own validation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from structured_agents.errors import GrammarConfigError
from structured_agents.grammar.ebnf import (
    JSON_INTEGER,
    JSON_NUMBER,
    JSON_STRING,
    RuleSet,
    char_class,
    ebnf_literal,
    text_excluding,
)
from structured_agents.grammar.patterns import none_of
from structured_agents.grammar.refs import resolve_ref
from structured_agents.plugins.function_gemma.format import (
    ESCAPE,
    MARKERS_IN_STRINGS,
    RenderStyle,
    render_value,
    sorted_keys,
)

__all__ = ["MAX_MIN_ITEMS", "ValueGrammar"]

MAX_MIN_ITEMS = 1024
"""The largest ``minItems`` written out: an array item per required item, and ``minItems`` of
10 million made an 80 MB grammar text in ``sa serve`` (10 GB of memory) before its size was
checked."""


def _seq(*parts: str) -> str:
    return " ".join(p for p in parts if p) or '""'


def _alts(options: Sequence[str]) -> str:
    unique = list(dict.fromkeys(options))
    return unique[0] if len(unique) == 1 else "(" + " | ".join(unique) + ")"


class ValueGrammar:
    """Writes the rules of argument values per JSON schema into one :class:`RuleSet`."""

    def __init__(self, rules: RuleSet, style: RenderStyle) -> None:
        self.rules = rules
        self.style: RenderStyle = style

    def string(self) -> str:
        """The rule of one string value in this style."""
        if self.style == "json":
            return self.rules.memo("json_string", "str", lambda: JSON_STRING)
        return self.rules.memo(
            "escaped_string",
            "str",
            lambda: _seq(
                ebnf_literal(ESCAPE),
                text_excluding(self.rules, ESCAPE, *MARKERS_IN_STRINGS),
                ebnf_literal(ESCAPE),
            ),
        )

    def _patterned(self, pattern: object) -> str:
        """The rule of a string matching ``pattern`` where it is one this grammar enforces
        (see the module docstring), else of any string."""
        found = none_of(pattern)
        if found is None or self.style != "escaped_strings":
            return self.string()
        optional, opening, first, rest = found.optional, found.opening, found.first, found.rest
        if "<" not in rest or (first is not None and "<" not in first):
            return self.string()
        body = f"{char_class(rest, negated=True)}*"
        if first is not None:
            body = f"{char_class(first, negated=True)} {body}"
        if opening:
            body = f"{ebnf_literal(opening)} {body}"
        if optional:
            body = f"({body})?"
        return self.rules.memo(
            ("none_of", optional, opening, first, rest),
            "prose",
            lambda: _seq(ebnf_literal(ESCAPE), body, ebnf_literal(ESCAPE)),
        )

    def generic(self) -> str:
        """The rule of any value (strings in this style, objects with any keys)."""
        return self.rules.memo(("generic", self.style), "value", self._generic_body)

    def _generic_body(self) -> str:
        number = self.rules.memo("number", "num", lambda: JSON_NUMBER)
        obj = self.rules.memo(("any_object", self.style), "obj", lambda: f'"{{" {self._any_members()} "}}"')
        arr = f'"[" ({self.generic()} ("," {self.generic()})*)? "]"'
        return f'{self.string()} | {number} | "true" | "false" | "null" | {obj} | {arr}'

    def _any_members(self) -> str:
        key = self.string() if self.style == "json" else "[A-Za-z_] [A-Za-z0-9_.\\-]*"
        pair = f'{key} ":" {self.generic()}'
        return f'({pair} ("," {pair})*)?'

    def literal(self, value: Any) -> str:
        """One fixed value (a ``const`` or an ``enum`` member) as an EBNF literal."""
        return ebnf_literal(render_value(value, self.style))

    def value(self, schema: Any, root: Any) -> str:
        """An EBNF expression for one value of ``schema``; ``$ref`` resolves against ``root``."""
        if not isinstance(schema, Mapping):
            return self.generic()
        if isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            target = resolve_ref(root, ref)
            if target is None:
                return self.generic()
            return self.rules.memo(("ref", id(root), ref), "ref", lambda: self.value(target, root))
        if "const" in schema:
            return self.literal(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return _alts([self.literal(v) for v in schema["enum"]])
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list) and branches:
                return _alts([self.value(b, root) for b in branches])
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.value(all_of[0], root)
        types = schema.get("type")
        if isinstance(types, str):
            types = [types]
        elif types is None:
            types = ["object"] if "properties" in schema else ["array"] if "items" in schema else []
        if not isinstance(types, list) or not types:
            return self.generic()
        return _alts([self._typed(str(t), schema, root) for t in types])

    def _typed(self, type_name: str, schema: Mapping[str, Any], root: Any) -> str:
        if type_name == "string":
            return self._patterned(schema.get("pattern"))
        if type_name == "integer":
            return self.rules.memo("integer", "int", lambda: JSON_INTEGER)
        if type_name == "number":
            return self.rules.memo("number", "num", lambda: JSON_NUMBER)
        if type_name == "boolean":
            return '("true" | "false")'
        if type_name == "null":
            return '"null"'
        key = (type_name, self.style, id(root), json.dumps(schema, sort_keys=True, default=str))
        if type_name == "object":
            return self.rules.memo(key, "obj", lambda: f'"{{" {self.members(schema, root)} "}}"')
        if type_name == "array":
            return self.rules.memo(key, "arr", lambda: self._array(schema, root))
        return self.generic()

    def _array(self, schema: Mapping[str, Any], root: Any) -> str:
        items = schema.get("items", True)
        item = self.value(items, root) if isinstance(items, Mapping) else self.generic()
        min_items = schema.get("minItems", 0)
        count = min_items if isinstance(min_items, int) and not isinstance(min_items, bool) else 0
        if count > MAX_MIN_ITEMS:
            raise GrammarConfigError(
                f"function_gemma: minItems {count} is more items than a grammar writes out "
                f"(at most {MAX_MIN_ITEMS})"
            )
        if count <= 0:
            return f'"[" ({item} ("," {item})*)? "]"'
        required = " ".join([item] + [f'"," {item}'] * (count - 1))
        return f'"[" {required} ("," {item})* "]"'

    def members(self, schema: Any, root: Any) -> str:
        """An EBNF expression for the inside of ``{...}`` of an object ``schema`` (see module doc)."""
        if not isinstance(schema, Mapping):
            return self._any_members()
        props = schema.get("properties")
        required = schema.get("required")
        if not isinstance(props, Mapping) and not isinstance(required, list):
            return '""' if schema.get("additionalProperties") is False else self._any_members()
        props = props if isinstance(props, Mapping) else {}
        must = {str(k) for k in required} if isinstance(required, list) else set()
        names = sorted_keys({str(k) for k in props} | must)
        made: dict[tuple[int, bool], str] = {}

        def rest(index: int, first: bool) -> str:
            """The keys from ``names[index]`` on; ``first``: no key written before them."""
            if index == len(names):
                return ""
            if (index, first) not in made:
                name = names[index]
                key = name if self.style == "escaped_strings" else json.dumps(name, ensure_ascii=False)
                value = self.value(props.get(name), root)
                member = _seq("" if first else '","', ebnf_literal(key + ":"), value)
                take = _seq(member, rest(index + 1, False))
                body = take if name in must else f"{take} | {_seq(rest(index + 1, first))}"
                made[(index, first)] = self.rules.define("members", body)
            return made[(index, first)]

        return rest(0, True) or '""'
