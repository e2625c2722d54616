"""Server tools: hidden fields and defaults, output transforms, validation, the SourceBackend."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from registry_doubles import FunctionServers, fixture_registry

from structured_agents.context import RunContext
from structured_agents.registry import JsonPath, Registry, RegistryError, SourceBackend
from structured_agents.tools import MCPBackend, MCPRegistry, RegistryBackendToolSource
from structured_agents.types import ToolCall, ToolSchema

pytestmark = pytest.mark.anyio

CTX = RunContext(run_id="run-1")
MCP_SERVER = Path(__file__).parents[1] / "tools" / "mcp_server.py"


def weather(place: dict[str, Any], units: str, apiKey: str) -> dict[str, Any]:
    return {"data": {"temp": 3.5 if units == "metric" else 38.3, "weather": f"snow in {place['city']}"}}


def source(handlers: dict[str, Any]) -> tuple[RegistryBackendToolSource, FunctionServers]:
    reg = fixture_registry()
    servers = FunctionServers(handlers)
    return RegistryBackendToolSource(reg, SourceBackend(reg, servers)), servers


def test_hidden_fields_are_not_shown_and_defaulted_fields_are_optional() -> None:
    schema = fixture_registry().resolve("get_weather")
    assert schema is not None
    assert list(schema.properties) == ["place", "units"]  # apiKey is hidden
    assert schema.required == ("place",)  # apiKey hidden, units has a default
    assert (schema.backend, schema.server) == ("mcp", "weather-service:1.4.1")
    # the input schema comes from the routed server version's providedTools
    assert schema.properties["units"] == {"type": "string", "enum": ["metric", "imperial"]}


async def test_defaults_are_merged_hidden_fields_forced_and_the_output_transformed() -> None:
    tools, servers = source({"weather-service:1.4.1/fetch_weather": weather})
    result = await tools.execute(
        ToolCall("get_weather", {"place": {"city": "Oslo"}, "apiKey": "stolen"}, id="c1"), CTX
    )
    assert servers.calls == [
        (
            "weather-service:1.4.1",
            "fetch_weather",
            {"apiKey": "secret-key", "units": "metric", "place": {"city": "Oslo"}},
        )
    ]
    assert (result.call_id, result.name, result.is_error) == ("c1", "get_weather", False)
    assert json.loads(result.output) == {"temperature": 3.5, "conditions": "snow in Oslo"}
    result = await tools.execute(
        ToolCall("get_weather", {"place": {"city": "Oslo"}, "units": "imperial"}), CTX
    )
    assert json.loads(result.output)["temperature"] == 38.3  # a visible default can be overridden


async def test_invalid_arguments_never_reach_the_server() -> None:
    tools, servers = source({})
    result = await tools.execute(ToolCall("get_weather", {"place": {"city": ""}}), CTX)
    assert result.is_error and servers.calls == []
    assert result.output == "invalid arguments for get_weather: $.place.city: '' should be non-empty"


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (
            {"data": {"weather": "fog"}},
            "get_weather returned an invalid output: $: 'temperature' is a required property",
        ),
        ("not json", "get_weather returned no JSON to transform or validate: 'not json'"),
    ],
)
async def test_bad_outputs_are_error_results(returned: Any, message: str) -> None:
    tools, _ = source({"weather-service:1.4.1/fetch_weather": lambda **_: returned})
    result = await tools.execute(ToolCall("get_weather", {"place": {"city": "Oslo"}}), CTX)
    assert (result.is_error, result.output) == (True, message)


async def test_server_errors_keep_the_registry_tool_name() -> None:
    tools, _ = source({})
    result = await tools.execute(ToolCall("search_docs", {"query": "x"}, id="c9"), CTX)
    assert (result.call_id, result.name, result.is_error) == ("c9", "search_docs", True)
    assert result.output == "no handler for doc-service:1.2.0/search_documents"


async def test_other_schemas_pass_through_to_the_wrapped_backend() -> None:
    servers = FunctionServers({"plain/echo": lambda text: text})
    backend = SourceBackend(fixture_registry(), servers)
    schema = ToolSchema(name="echo", description="echo", backend="mcp", server="plain")
    result = await backend.execute(ToolCall("echo", {"text": "hi"}), schema, CTX)
    assert result.output == "hi" and servers.calls == [("plain", "echo", {"text": "hi"})]


def test_transform_paths() -> None:
    doc = {"data": {"items": [{"a": 1}, {"a": 2}], "odd key": 5}}
    assert JsonPath.parse("$.data.items[*].a").first(doc) == (True, [1, 2])
    assert JsonPath.parse("$.data.items[-1].a").first(doc) == (True, 2)
    assert JsonPath.parse("$['data']['odd key']").first(doc) == (True, 5)
    assert JsonPath.parse("$.data.nope").first(doc) == (False, None)
    with pytest.raises(RegistryError, match=r"cannot read '\.\.b' \(at character 3\)"):
        JsonPath.parse("$.a..b")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            {"hideFields": ["nope"]},
            r"tools\[0\]\.source\.hideFields\[0\]: hidden field 'nope' is not a property",
        ),
        (
            {"hideFields": ["q"]},
            r"tools\[0\]\.source\.hideFields\[0\]: hidden field 'q' is required and has no default",
        ),
    ],
)
def test_hidden_fields_must_be_optional_properties(source: dict[str, Any], message: str) -> None:
    doc = {
        "schemaVersion": "2.0",
        "tools": [
            {
                "name": "t",
                "source": {"server": "s", "tool": "t", **source},
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            }
        ],
    }
    with pytest.raises(RegistryError, match=message):
        Registry.from_dict(doc)


async def test_a_registry_tool_on_a_real_mcp_server() -> None:
    """The MCP server of the tool tests, registered under its route key, behind a SourceBackend."""
    reg = Registry.from_dict(
        {
            "schemaVersion": "2.0",
            "servers": [
                {"name": "test-tools", "version": "1.0.0", "capabilities": {"stdio": True, "tools": True}}
            ],
            "tools": [
                {
                    "name": "x_of_point",
                    "description": "The x of a point whose y is fixed.",
                    "source": {
                        "server": "test-tools",
                        "tool": "point",
                        "serverVersion": "^1",
                        "defaults": {"y": 7},
                        "hideFields": ["y"],
                    },
                    "inputSchema": {
                        "type": "object",
                        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                        "required": ["x", "y"],
                    },
                    "outputTransform": {"mappings": {"px": "$.x", "py": "$.y"}},
                }
            ],
        }
    )
    async with MCPRegistry.stdio(
        "test-tools:1.0.0", sys.executable, [str(MCP_SERVER)], connect_timeout=20
    ) as mcp:
        tools = reg.tool_source(MCPBackend([mcp]))
        [schema] = tools.tools()
        assert schema.required == ("x",)
        result = await tools.execute(ToolCall("x_of_point", {"x": 3}), CTX)
    assert (result.is_error, json.loads(result.output)) == (False, {"px": 3, "py": 7})
