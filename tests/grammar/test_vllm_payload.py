"""Grammar artifacts' vLLM payloads against the fields of vLLM's ``StructuredOutputsParams``.

vLLM is not installed here; the ``StructuredOutputsParams`` entry of ``tests/data/vllm_api.json``
is a snapshot of the dataclass read from the vLLM wheel's source by ``scripts/snapshot_vllm.py``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from structured_agents.errors import GrammarError
from structured_agents.grammar.artifacts import (
    EBNFGrammar,
    GrammarArtifact,
    JsonSchemaGrammar,
    StructuralTagGrammar,
    artifact_from_payload,
)
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins.qwen import QwenPlugin
from structured_agents.types import ToolSchema

API: dict[str, Any] = json.loads((Path(__file__).resolve().parents[1] / "data" / "vllm_api.json").read_text())
SNAPSHOT: dict[str, Any] = API["StructuredOutputsParams"]
FIELDS: list[str] = SNAPSHOT["fields"]
CONSTRAINTS: list[str] = SNAPSHOT["constraint_fields"]

_TOOL = ToolSchema(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "días": {"type": "integer"}},
        "required": ["city"],
    },
)


def _artifacts() -> dict[str, GrammarArtifact]:
    qwen = QwenPlugin()
    return {
        "ebnf": EBNFGrammar('root ::= "a" | "é"'),
        "structural_tag": qwen.build_grammar([_TOOL], GrammarConfig(mode="structural_tag")),
        "json_schema": qwen.build_grammar([_TOOL], GrammarConfig(mode="json_schema")),
        "structural_tag_literal": StructuralTagGrammar(
            {"type": "structural_tag", "format": {"type": "const_string", "value": "ok"}}
        ),
        "json_schema_literal": JsonSchemaGrammar({"type": "object", "properties": {"b": {}, "a": {}}}),
    }


ARTIFACTS = _artifacts()


def _vllm_params_class() -> type:
    """A stand-in for ``StructuredOutputsParams``: same init fields, same exactly-one check."""

    def post_init(self: Any) -> None:
        count = sum(getattr(self, name) is not None for name in CONSTRAINTS)
        if count != 1:
            raise ValueError(f"exactly one structured outputs constraint is required, got {count}")

    return dataclasses.make_dataclass(
        "StructuredOutputsParams",
        [(name, object, dataclasses.field(default=None)) for name in FIELDS],
        namespace={"__post_init__": post_init},
    )


def test_snapshot_is_sane() -> None:
    assert API["vllm_version"]
    assert set(CONSTRAINTS) <= set(FIELDS)
    assert {"json", "grammar", "structural_tag"} <= set(CONSTRAINTS)
    assert set(SNAPSHOT["field_types"]) == set(FIELDS)


@pytest.mark.parametrize("artifact", ARTIFACTS.values(), ids=ARTIFACTS.keys())
def test_payload_uses_vllm_field_names(artifact: GrammarArtifact) -> None:
    payload = artifact.to_vllm_payload()
    assert list(payload) == ["structured_outputs"]
    inner = payload["structured_outputs"]
    assert set(inner) <= set(FIELDS), set(inner) - set(FIELDS)
    assert [k for k in CONSTRAINTS if inner.get(k) is not None] == [
        {"ebnf": "grammar", "structural_tag": "structural_tag", "json_schema": "json"}[artifact.kind]
    ]
    _vllm_params_class()(**inner)  # the constructor takes it and its exactly-one check passes


@pytest.mark.parametrize("artifact", ARTIFACTS.values(), ids=ARTIFACTS.keys())
def test_payload_values_have_vllm_types(artifact: GrammarArtifact) -> None:
    inner = artifact.to_vllm_payload()["structured_outputs"]
    types = SNAPSHOT["field_types"]
    if isinstance(artifact, StructuralTagGrammar):
        assert isinstance(inner["structural_tag"], str) and "str" in types["structural_tag"]
        assert json.loads(inner["structural_tag"]) == artifact.tag
    elif isinstance(artifact, EBNFGrammar):
        assert isinstance(inner["grammar"], str) and "str" in types["grammar"]
        assert inner["grammar"] == artifact.grammar
    else:
        assert isinstance(inner["json"], dict) and "dict" in types["json"]
        assert inner["json"] == artifact.schema


@pytest.mark.parametrize("artifact", ARTIFACTS.values(), ids=ARTIFACTS.keys())
def test_artifact_from_payload_round_trips(artifact: GrammarArtifact) -> None:
    payload = artifact.to_vllm_payload()
    assert artifact_from_payload(payload) == artifact
    assert artifact_from_payload(payload["structured_outputs"]) == artifact
    over_http = json.loads(json.dumps(payload))  # as an OpenAI-compatible extra_body
    rebuilt = artifact_from_payload(over_http)
    assert rebuilt == artifact and rebuilt.cache_key == artifact.cache_key


def test_payload_keeps_property_order() -> None:
    """XGrammar reads properties in declared order, so the payload must not sort keys."""
    artifact = ARTIFACTS["json_schema_literal"]
    assert isinstance(artifact, JsonSchemaGrammar)
    assert list(artifact.to_vllm_payload()["structured_outputs"]["json"]["properties"]) == ["b", "a"]
    assert artifact.schema_json.index('"b"') < artifact.schema_json.index('"a"')


@pytest.mark.parametrize(
    "inner",
    [{}, {"grammar": "root ::= x", "json": {}}, {"regex": "a+"}, {"structural_tag": "[1]"}, {"json": "3"}],
)
def test_artifact_from_payload_rejects_other_shapes(inner: dict[str, Any]) -> None:
    with pytest.raises(GrammarError):
        artifact_from_payload({"structured_outputs": inner})
