"""Dependency-scoped discovery: each caller sees the tools its dependencies declare."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from registry_doubles import FunctionServers, fixture_registry

from structured_agents.errors import ConfigError, ToolNotFoundError
from structured_agents.registry import Registry, RegistryError, RoutingError
from structured_agents.tools import ToolRegistry, resolve_all

SCOPING_LOGGER = "structured_agents.registry.scoping"


def test_two_callers_see_different_tools() -> None:
    reg = fixture_registry()
    researcher = reg.scoped_for("researcher")
    summarizer = reg.scoped_for("summarizer")
    assert isinstance(researcher, ToolRegistry) and researcher.name == reg.name
    assert researcher.grants == {
        "get_weather": "tool get_weather",
        "search_docs": "server doc-service >=1.0.0",
        "get_doc": "server doc-service >=1.0.0",
        "search_and_summarize": "agent summarizer",  # the pipeline exposing the agent it depends on
    }
    assert summarizer.list_tools() == ["get_doc"]
    assert [s.name for s in resolve_all(summarizer, ["get_doc"])] == ["get_doc"]
    assert "plan_trip" not in researcher.list_tools()  # on weather-service, which it does not depend on


def test_undeclared_tools_are_refused_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    summarizer = fixture_registry().scoped_for("summarizer")
    with caplog.at_level(logging.WARNING, logger=SCOPING_LOGGER):
        assert summarizer.resolve("get_weather") is None
        assert summarizer.resolve("no_such_tool") is None  # not an access attempt: nothing logged
    [record] = caplog.records
    assert record.getMessage() == (
        "agent 'summarizer' asked for tool 'get_weather' of registry 'registry', "
        "which is not among its declared dependencies"
    )
    with pytest.raises(
        ToolNotFoundError,
        match=r"registry 'registry' has no tool 'get_weather', 'nope' \(available: get_doc\)",
    ):
        resolve_all(summarizer, ["get_doc", "get_weather", "nope"])


def test_a_scoped_tool_source_offers_only_granted_tools() -> None:
    reg = fixture_registry()
    offered = reg.tool_source(FunctionServers({}), caller="summarizer").tools()
    assert [schema.name for schema in offered] == ["get_doc"]
    assert len(reg.tool_source(FunctionServers({})).tools()) == len(reg.list_tools())


def test_unknown_caller_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"has no agent 'ghost' \(agents: summarizer, researcher\)"):
        fixture_registry().scoped_for("ghost")


def document(dependency: dict[str, Any]) -> dict[str, Any]:
    return {
        "schemaVersion": "2.0",
        "servers": [{"name": "svc", "version": "1.0.0"}],
        "tools": [{"name": "t", "source": {"server": "svc", "tool": "t", "serverVersion": "1"}}],
        "agents": [{"name": "a", "version": "1.0.0", "dependencies": [{"tool": "t"}, dependency]}],
    }


@pytest.mark.parametrize(
    ("dependency", "error", "message"),
    [
        ({"tool": "u"}, RegistryError, r"agents\[0\]\.dependencies\[1\]\.tool: depends on tool 'u'"),
        ({"agent": "b"}, RegistryError, r"agents\[0\]\.dependencies\[1\]\.agent: depends on agent 'b'"),
        (
            {"server": {"name": "x"}},
            RoutingError,
            r"dependencies\[1\]\.server: depends on server 'x', which is not",
        ),
        (
            {"server": {"name": "svc", "versionConstraint": "^2"}},
            RoutingError,
            r"dependencies\[1\]\.server\.versionConstraint: "
            r"no declared version of server 'svc' satisfies \^2",
        ),
        (
            {"tool": "t", "agent": "a"},
            RegistryError,
            r"dependencies\[1\]: Value error, a dependency needs exactly one",
        ),
    ],
)
def test_dependencies_must_name_what_the_registry_defines(
    dependency: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Registry.from_dict(document(dependency))
