"""Named schemas: nested and shared refs, versions, pointers, cycles, missing refs, validation."""

from __future__ import annotations

from typing import Any

import pytest
from registry_doubles import fixture_registry

from structured_agents.errors import ToolExecutionError
from structured_agents.registry import Registry, SchemaCycleError, SchemaRefError
from structured_agents.registry.errors import RegistryError


def registry(schemas: list[dict[str, Any]], input_schema: dict[str, Any]) -> Registry:
    return Registry.from_dict(
        {
            "schemaVersion": "2.0",
            "schemas": schemas,
            "tools": [{"name": "t", "source": {"server": "s", "tool": "t"}, "inputSchema": input_schema}],
        }
    )


def test_nested_and_shared_refs_are_inlined_for_the_model() -> None:
    trip = fixture_registry().resolve("plan_trip")
    assert trip is not None
    place = {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1}, "country": {"type": "string"}},
        "required": ["city"],
    }
    assert trip.parameters == {
        "type": "object",
        "properties": {
            "from": place,  # Place -> City, nested
            "to": {**place, "description": "Where the trip ends."},  # shared, with a sibling keyword
            "via": {"type": "string", "minLength": 1},  # a pointer into a schema
        },
        "required": ["from", "to"],
    }


def test_versioned_refs_pin_the_version_asked_for() -> None:
    schemas = [
        {"name": "Units", "version": "1.0.0", "schema": {"enum": ["metric"]}},
        {"name": "Units", "version": "1.1.0", "schema": {"enum": ["metric", "kelvin"]}},
        {"name": "Units", "version": "2.0.0", "schema": {"enum": ["si"]}},
    ]
    props = {
        "latest": {"$ref": "#/schemas/Units"},
        "exact": {"$ref": "#/schemas/Units@1.0.0"},
        "caret": {"$ref": "#/schemas/Units@^1.0"},
        "tilde": {"$ref": "#/schemas/Units@~1.0.0"},
    }
    schema = registry(schemas, {"type": "object", "properties": props}).resolve("t")
    assert schema is not None
    assert schema.properties == {
        "latest": {"enum": ["si"]},
        "exact": {"enum": ["metric"]},
        "caret": {"enum": ["metric", "kelvin"]},
        "tilde": {"enum": ["metric"]},
    }


def test_inputs_are_validated_through_the_referencing_registry() -> None:
    reg = fixture_registry()
    trip = reg.compiled("plan_trip")
    assert trip is not None and trip.input_validator is not None
    # the validator keeps the refs (pinned, absolute) and resolves them in the referencing registry
    assert trip.input_validator.schema == {"$ref": "urn:structured-agents:registry#/schemas/TripInput"}
    assert trip.arguments({"from": {"city": "Oslo"}, "to": {"city": "Rome"}}) == {
        "from": {"city": "Oslo"},
        "to": {"city": "Rome"},
    }
    with pytest.raises(
        ToolExecutionError, match=r"invalid arguments for plan_trip: \$\.to\.city: '' should be non-empty"
    ):
        trip.arguments({"from": {"city": "Oslo"}, "to": {"city": ""}})


def test_a_cycle_is_an_error_naming_the_cycle_and_where_it_closes() -> None:
    schemas = [
        {"name": "Node", "schema": {"type": "object", "properties": {"kids": {"$ref": "#/schemas/Kids"}}}},
        {"name": "Kids", "schema": {"type": "array", "items": {"$ref": "#/schemas/Node"}}},
    ]
    with pytest.raises(SchemaCycleError) as info:
        registry(schemas, {"$ref": "#/schemas/Node"})
    assert info.value.cycle == ("Node", "Kids", "Node")
    assert info.value.loc == ("schemas", 1, "schema", "items", "$ref")
    assert str(info.value).startswith(
        "<dict>: schemas[1].schema.items.$ref: schema reference cycle Node -> Kids"
    )


def test_a_schema_may_refer_to_its_own_parts_without_recursing() -> None:
    schemas = [
        {
            "name": "A",
            "schema": {
                "$defs": {"T": {"type": "string"}},
                "type": "object",
                "properties": {"x": {"$ref": "#/schemas/A/$defs/T"}},
            },
        }
    ]
    schema = registry(schemas, {"$ref": "#/schemas/A"}).resolve("t")
    assert schema is not None and schema.properties == {"x": {"type": "string"}}


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("#/schemas/Nope", r"names no schema 'Nope' \(schemas: Place\)"),
        ("#/schemas/Place@2.0", r"schema 'Place' has no version '2.0' \(1.0.0\)"),
        ("#/schemas/Place/properties/zip", r"the registry schemas have no 'Place@1.0.0/properties/zip'"),
        ("#/definitions/Place", r"unsupported \$ref '#/definitions/Place'"),
        ("https://example.com/place.json", r"unsupported \$ref"),
    ],
)
def test_a_missing_ref_names_the_json_path_where_it_occurs(ref: str, message: str) -> None:
    schemas = [{"name": "Place", "version": "1.0.0", "schema": {"type": "object"}}]
    with pytest.raises(SchemaRefError, match=message) as info:
        registry(schemas, {"type": "object", "properties": {"to": {"items": [{"$ref": ref}]}}})
    assert str(info.value).startswith("<dict>: tools[0].inputSchema.properties.to.items[0].$ref: ")


def test_refs_inside_data_keywords_are_data() -> None:
    reg = registry([], {"type": "object", "properties": {"x": {"const": {"$ref": "#/schemas/Nope"}}}})
    assert reg.compiled("t") is not None


def test_an_invalid_schema_names_the_bad_keyword() -> None:
    with pytest.raises(
        RegistryError, match=r"tools\[0\]\.inputSchema\.properties\.x\.type: not a valid JSON schema"
    ):
        registry([], {"type": "object", "properties": {"x": {"type": "strin"}}})


def test_duplicate_schema_versions_are_errors() -> None:
    schemas = [
        {"name": "A", "version": "1.0.0", "schema": {}},
        {"name": "A", "version": "1.0.0", "schema": {}},
    ]
    with pytest.raises(
        RegistryError, match=r"schemas\[1\]\.name: schema 'A' is defined more than once at version"
    ):
        registry(schemas, {"type": "object"})
