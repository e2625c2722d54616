"""Versions, constraints and ``server:version`` routing with fallback."""

from __future__ import annotations

import logging

import pytest
from registry_doubles import fixture_registry

from structured_agents.registry import Registry, RoutingError, ServerRouter, Version, VersionConstraint
from structured_agents.registry.errors import VersionError
from structured_agents.registry.models import ServerDefinition
from structured_agents.tools import resolve_all

ROUTING_LOGGER = "structured_agents.registry.routing"
VERSIONS = ["0.9.0", "1.0.0", "1.2.0", "1.2.5", "1.3.0", "2.0.0-rc.1", "2.0.0", "2.1.0"]


def allowed(constraint: str) -> list[str]:
    parsed = VersionConstraint.parse(constraint)
    return [v for v in VERSIONS if parsed.allows(Version.parse(v))]


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("^1.2", ["1.2.0", "1.2.5", "1.3.0"]),
        ("~1.2.3", ["1.2.5"]),
        (">=1.0,<2", ["1.0.0", "1.2.0", "1.2.5", "1.3.0"]),
        (">=1.0 <2", ["1.0.0", "1.2.0", "1.2.5", "1.3.0"]),
        ("1.2.0", ["1.2.0"]),
        ("=1.2.0", ["1.2.0"]),
        ("1.2", ["1.2.0", "1.2.5"]),
        ("^0.9", ["0.9.0"]),
        (">1.2", ["1.3.0", "2.0.0", "2.1.0"]),
        ("<=1.2", ["0.9.0", "1.0.0", "1.2.0", "1.2.5"]),
        ("!=1.2.0,^1", ["1.0.0", "1.2.5", "1.3.0"]),
        ("*", ["0.9.0", "1.0.0", "1.2.0", "1.2.5", "1.3.0", "2.0.0", "2.1.0"]),
        (">=2.0.0-rc.1", ["2.0.0-rc.1", "2.0.0", "2.1.0"]),  # a pre-release only when asked for
    ],
)
def test_constraints(constraint: str, expected: list[str]) -> None:
    assert allowed(constraint) == expected


def test_semver_precedence_and_bad_versions() -> None:
    ordered = ["1.0.0-1", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0", "1.0.1", "1.10.0"]
    assert [str(v) for v in sorted(Version.parse(v) for v in reversed(ordered))] == ordered
    for bad in ("1.2", "01.2.3", "1.2.3.4", "v"):
        with pytest.raises(VersionError, match="is not a semantic version"):
            Version.parse(bad)
    with pytest.raises(VersionError, match=r"cannot read '\^\^1'"):
        VersionConstraint.parse("^^1")


def router() -> ServerRouter:
    versions = ["1.0.0", "1.2.0", "1.4.1", "2.0.0"]
    return ServerRouter([ServerDefinition(name="svc", version=v) for v in versions])


@pytest.mark.parametrize(
    ("key", "routed"),
    [
        ("svc:^1.2", "svc:1.4.1"),
        ("svc:~1.2.0", "svc:1.2.0"),
        ("svc:>=1.0,<2", "svc:1.4.1"),
        ("svc:1.2.0", "svc:1.2.0"),
    ],
)
def test_routing_by_constraint_logs_nothing(key: str, routed: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=ROUTING_LOGGER):
        route = router().route_key(key)
    assert route.key == routed and not route.fallback
    assert caplog.records == []


def test_an_absent_exact_version_falls_back_to_the_latest_compatible(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger=ROUTING_LOGGER):
        route = router().route("svc", "1.3.0", caller="tool t")
    assert (route.key, route.fallback) == ("svc:1.4.1", True)  # ^1.3.0: not 2.0.0, not 1.2.0
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "tool t: server 'svc' has no version 1.3.0; falling back to the latest compatible version, 1.4.1"
    )


def test_no_version_routes_to_the_latest_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=ROUTING_LOGGER):
        assert router().route_key("svc").key == "svc:2.0.0"
    assert "version-unaware call of server 'svc' routed to the latest version, 2.0.0" in caplog.text


def test_nothing_compatible_is_a_routing_error() -> None:
    with pytest.raises(
        RoutingError, match=r"no version of server 'svc' satisfies '2.5.0' \(1.0.0, 1.2.0, 1.4.1, 2.0.0\)"
    ):
        router().route("svc", "2.5.0")
    with pytest.raises(RoutingError, match=r"satisfies '\^3'"):
        router().route("svc", "^3")
    with pytest.raises(RoutingError, match="server 'other' is not declared in servers"):
        router().route("other", "^1")
    assert router().route("other", None).key == "other"  # a v1 tool of an undeclared server


def test_registry_tools_are_routed_when_loaded(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=ROUTING_LOGGER):
        reg = fixture_registry()
    assert {schema.name: schema.server for schema in resolve_all(reg, reg.list_tools())} == {
        "get_weather": "weather-service:1.4.1",
        "search_docs": "doc-service:1.2.0",
        "get_doc": "doc-service:1.2.0",
        "plan_trip": "weather-service:1.0.0",
        "search_and_summarize": None,
    }
    assert caplog.records == []
    assert reg.route("doc-service:^1").key == "doc-service:1.2.0"


def test_a_fallback_while_loading_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    doc = {
        "schemaVersion": "2.0",
        "servers": [{"name": "svc", "version": "1.0.0"}, {"name": "svc", "version": "1.1.0"}],
        "tools": [{"name": "t", "source": {"server": "svc", "tool": "x", "serverVersion": "1.0.5"}}],
    }
    with caplog.at_level(logging.WARNING, logger=ROUTING_LOGGER):
        reg = Registry.from_dict(doc)
    [schema] = resolve_all(reg, ["t"])
    assert schema.server == "svc:1.1.0"
    assert "tool t: server 'svc' has no version 1.0.5; falling back" in caplog.text
