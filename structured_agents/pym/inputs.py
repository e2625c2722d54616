"""Prepare a call's arguments for a script: coerce, fill defaults, validate (jsonschema).

Coercion rules, applied before validation and only towards a declared type (a value that
already validates is never changed):

- ``integer``: ``"3"``/``"-3"`` -> ``3``; ``3.0`` -> ``3``. Not from ``bool`` or ``"3.5"``.
- ``number``: a finite numeric string -> ``int`` or ``float`` (``"2.5"`` -> ``2.5``).
- ``boolean``: ``"true"``/``"false"`` (any case) -> ``True``/``False``. Not from numbers.
- ``string``: ``int``/``float`` -> ``str`` (``3`` -> ``"3"``). Not from ``bool``.
- ``array``/``object``: a string holding JSON of that kind is parsed; tuples become lists;
  items and values are then coerced by the ``items``/``additionalProperties`` schema.
- unions (``type`` lists, ``anyOf``) and ``enum``: the first member the coerced value fits.
- ``None`` for an input that does not accept null but has a default: the default.

Missing inputs with a default get a copy of it. Then the arguments are validated against the
script's schema, which forbids unknown arguments; every problem is reported at once.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

from structured_agents.pym.errors import PymInputError
from structured_agents.pym.model import PymScript
from structured_agents.types import JsonDict, json_type_of

__all__ = ["coerce", "prepare_inputs"]

_INT = re.compile(r"^\s*[+-]?\d+\s*$")
_validators: dict[str, Draft202012Validator] = {}


def _to_type(value: Any, kind: str, schema: JsonDict) -> Any:
    """``value`` converted towards JSON type ``kind``; unchanged when no rule applies."""
    if kind == "integer" and isinstance(value, str) and _INT.match(value):
        return int(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "number" and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        if math.isfinite(number):
            return int(value) if _INT.match(value) else number
    if kind == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind in ("array", "object") and isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if kind == "array" and isinstance(value, list | tuple):
        items = schema.get("items")
        return [coerce(v, items) for v in value] if isinstance(items, dict) else list(value)
    if kind == "object" and isinstance(value, dict):
        extra = schema.get("additionalProperties")
        return {k: coerce(v, extra) for k, v in value.items()} if isinstance(extra, dict) else value
    return value


def _fits(value: Any, schema: JsonDict) -> bool:
    return bool(Draft202012Validator(schema).is_valid(value))


def coerce(value: Any, schema: JsonDict) -> Any:
    """``value`` coerced towards ``schema`` by the module's rules."""
    if "anyOf" in schema:
        if _fits(value, schema):
            return value
        for member in schema["anyOf"]:
            candidate = coerce(value, member)
            if _fits(candidate, member):
                return candidate
        return value
    if "enum" in schema and value not in schema["enum"]:
        for kind in dict.fromkeys(json_type_of(v) for v in schema["enum"]):
            candidate = _to_type(value, kind, schema)
            if candidate in schema["enum"] and json_type_of(candidate) == kind:
                return candidate
        return value
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if json_type_of(value) in kinds or (json_type_of(value) == "integer" and "number" in kinds):
        return _to_type(value, json_type_of(value), schema)  # recurse into containers
    for kind in kinds:
        candidate = _to_type(value, kind, schema)
        if json_type_of(candidate) == kind or (kind == "number" and json_type_of(candidate) == "integer"):
            return candidate
    return value


def _validator(script: PymScript) -> Draft202012Validator:
    validator = _validators.get(script.source_hash)
    if validator is None:
        validator = _validators[script.source_hash] = Draft202012Validator(script.parameters)
    return validator


def prepare_inputs(script: PymScript, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The script's inputs from a call's arguments; PymInputError listing every problem."""
    values = dict(arguments)
    for spec in script.inputs:
        if spec.name in values:
            value = coerce(values[spec.name], spec.schema)
            if value is None and not spec.required and not _fits(None, spec.schema):
                value = copy.deepcopy(spec.default)
            values[spec.name] = value
        elif not spec.required:
            values[spec.name] = copy.deepcopy(spec.default)
    errors = sorted(_validator(script).iter_errors(values), key=lambda e: list(e.absolute_path))
    if errors:
        problems = []
        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path)
            problems.append(f"input {where!r}: {error.message}" if where else error.message)
        raise PymInputError(
            f"invalid arguments for {script.name}: " + "; ".join(problems), path=str(script.path)
        )
    return values
