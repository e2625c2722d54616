"""Coercion rules, default filling and validation of a call's arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from structured_agents.pym import PymInputError, load_source
from structured_agents.pym.inputs import coerce, prepare_inputs

FIXTURES = Path(__file__).parent / "fixtures"
KINDS = load_source((FIXTURES / "tools" / "kinds.pym").read_text(), FIXTURES / "tools" / "kinds.pym")

COERCIONS: list[tuple[Any, dict[str, Any], Any]] = [
    ("3", {"type": "integer"}, 3),
    (" -7 ", {"type": "integer"}, -7),
    (3.0, {"type": "integer"}, 3),
    ("3.5", {"type": "integer"}, "3.5"),
    (True, {"type": "integer"}, True),
    ("2.5", {"type": "number"}, 2.5),
    ("4", {"type": "number"}, 4),
    ("nan", {"type": "number"}, "nan"),
    ("TRUE", {"type": "boolean"}, True),
    ("false", {"type": "boolean"}, False),
    (1, {"type": "boolean"}, 1),
    (3, {"type": "string"}, "3"),
    (False, {"type": "string"}, False),
    ('["a", 1]', {"type": "array", "items": {"type": "string"}}, ["a", "1"]),
    (("1", "2"), {"type": "array", "items": {"type": "integer"}}, [1, 2]),
    ('{"a": "1"}', {"type": "object", "additionalProperties": {"type": "integer"}}, {"a": 1}),
    ("5", {"type": ["integer", "null"]}, 5),
    (None, {"type": ["integer", "null"]}, None),
    ("2", {"anyOf": [{"type": "array"}, {"type": "integer"}]}, 2),
    ("1", {"enum": [1, 2]}, 1),
    ("fast", {"type": "string", "enum": ["fast", "slow"]}, "fast"),
]


@pytest.mark.parametrize(("value", "schema", "expected"), COERCIONS)
def test_coerce(value: Any, schema: dict[str, Any], expected: Any) -> None:
    result = coerce(value, schema)
    assert result == expected and type(result) is type(expected)


def test_defaults_are_filled_and_copied() -> None:
    first = prepare_inputs(KINDS, {"name": "a"})
    assert first == {
        "name": "a",
        "count": 1,
        "ratio": 0.5,
        "verbose": False,
        "tags": [],
        "scores": {},
        "note": None,
        "mode": "fast",
        "level": None,
    }
    first["tags"].append("mutated")
    assert prepare_inputs(KINDS, {"name": "a"})["tags"] == []


def test_null_for_a_non_nullable_input_with_default_means_default() -> None:
    assert prepare_inputs(KINDS, {"name": "a", "count": None})["count"] == 1


def test_every_problem_is_reported() -> None:
    with pytest.raises(PymInputError) as info:
        prepare_inputs(KINDS, {"count": "many", "mode": "medium", "extra": 1})
    message = str(info.value)
    assert message.startswith(f"{KINDS.path}: invalid arguments for kinds: ")
    for part in [
        "'name' is a required property",
        "input 'count': 'many' is not of type 'integer'",
        "input 'mode': 'medium' is not one of ['fast', 'slow']",
        "'extra' was unexpected",
    ]:
        assert part in message
