"""Schema inference from input annotations, defaults, descriptions and docstrings."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from structured_agents.pym import PymScript, load_source
from structured_agents.pym.schema import UnsupportedAnnotation, annotation_schema

FIXTURES = Path(__file__).parent / "fixtures"

CASES: list[tuple[str, dict[str, Any]]] = [
    ("str", {"type": "string"}),
    ("int", {"type": "integer"}),
    ("float", {"type": "number"}),
    ("bool", {"type": "boolean"}),
    ("list", {"type": "array"}),
    ("dict", {"type": "object"}),
    ("Any", {}),
    ("typing.Any", {}),
    ("list[int]", {"type": "array", "items": {"type": "integer"}}),
    ("List[str]", {"type": "array", "items": {"type": "string"}}),
    ("dict[str, float]", {"type": "object", "additionalProperties": {"type": "number"}}),
    (
        "Dict[str, list[int]]",
        {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}},
    ),
    ("Optional[str]", {"type": ["string", "null"]}),
    ("int | None", {"type": ["integer", "null"]}),
    ("Union[int, str, None]", {"type": ["integer", "string", "null"]}),
    ("list[int] | None", {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}),
    ("Optional[int | str]", {"type": ["integer", "string", "null"]}),
    ("Literal['a', 'b']", {"type": "string", "enum": ["a", "b"]}),
    ("Literal[1, 'x']", {"enum": [1, "x"]}),
    ("'list[str]'", {"type": "array", "items": {"type": "string"}}),
]


@pytest.mark.parametrize(("annotation", "expected"), CASES, ids=[c[0] for c in CASES])
def test_annotation_schema(annotation: str, expected: dict[str, Any]) -> None:
    assert annotation_schema(ast.parse(annotation, mode="eval").body) == expected


@pytest.mark.parametrize(
    "annotation", ["set[int]", "tuple[int, int]", "dict[int, str]", "MyType", "Literal[1.5]"]
)
def test_unsupported_annotation(annotation: str) -> None:
    with pytest.raises(UnsupportedAnnotation):
        annotation_schema(ast.parse(annotation, mode="eval").body)


def test_tool_schema_of_fixture() -> None:
    path = FIXTURES / "tools" / "kinds.pym"
    script = load_source(path.read_text(), path)
    params = script.parameters
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert params["required"] == ["name"]
    assert params["properties"]["count"] == {"type": "integer", "default": 1}
    assert params["properties"]["note"] == {"type": ["string", "null"], "default": None}
    assert params["properties"]["mode"] == {"type": "string", "enum": ["fast", "slow"], "default": "fast"}
    assert params["properties"]["scores"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "default": {},
    }
    tool = script.to_tool_schema()
    assert (tool.name, tool.backend, tool.script_path) == ("kinds", "grail", path)
    assert tool.description == "Echo every kind of input back, to show defaults and coercion."


def test_description_from_input_and_fallback_tool_description(
    make_script: Callable[[str, str], PymScript],
) -> None:
    script = make_script(
        'from grail import Input\nq: str = Input("q", description="The query.")\nq\n', "search"
    )
    assert script.parameters["properties"]["q"] == {"type": "string", "description": "The query."}
    assert script.description == "Grail tool search"
