"""Loading files: v1 migration and its report, ``sa registry``, and bad files failing where they are."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from registry_doubles import FIXTURES
from typer.testing import CliRunner

import structured_agents.registry as registry_package
from structured_agents.cli.main import app
from structured_agents.errors import ConfigError
from structured_agents.registry import (
    Change,
    MigrationError,
    MigrationReport,
    Registry,
    RegistryError,
    SchemaRefError,
    migrate_document,
)
from structured_agents.tools import resolve_all

V1 = FIXTURES / "v1_registry.json"


def test_public_api_is_sorted_and_importable() -> None:
    assert registry_package.__all__ == sorted(registry_package.__all__)
    assert all(hasattr(registry_package, name) for name in registry_package.__all__)


def test_a_v1_file_is_migrated_and_the_report_says_what_changed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        reg = Registry.from_file(V1)
    assert reg.migration == MigrationReport(
        "1.0",
        (
            Change("schemaVersion", "1.0 -> 2.0"),
            Change("tools[0].source.target", "renamed to server ('weather-service')"),
            Change("tools[1].source.target", "renamed to server ('doc-service')"),
        ),
    )
    assert str(reg.migration) == (
        "migrated schemaVersion 1.0 -> 2.0 (3 changes)\n"
        "  schemaVersion: 1.0 -> 2.0\n"
        "  tools[0].source.target: renamed to server ('weather-service')\n"
        "  tools[1].source.target: renamed to server ('doc-service')"
    )
    [weather, search] = resolve_all(reg, ["get_weather", "search"])
    assert (weather.server, list(weather.properties)) == (
        "weather-service",
        ["city"],
    )  # undeclared: plain name
    assert search.parameters == {"type": "object", "properties": {}}
    assert caplog.records == []  # undeclared servers route by name without version warnings


def test_a_v2_document_is_not_changed() -> None:
    data = {"schemaVersion": "2.0", "tools": []}
    migrated, report = migrate_document(data)
    assert (migrated, report.migrated, str(report)) == (
        data,
        False,
        "already schemaVersion 2.0: nothing to migrate",
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"schemaVersion": "3.0"}, r"schemaVersion: unsupported schemaVersion '3.0'"),
        (
            {
                "schemaVersion": "1.0",
                "tools": [{"name": "t", "source": {"target": "a", "server": "b", "tool": "t"}}],
            },
            r"tools\[0\]\.source\.target: a v1 source has both 'target' and 'server'",
        ),
    ],
)
def test_documents_that_cannot_be_migrated(data: dict[str, Any], message: str) -> None:
    with pytest.raises(MigrationError, match=message):
        Registry.from_dict(data)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_sa_registry_migrate_writes_v2_and_prints_the_report(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"registry{suffix}"
    result = CliRunner().invoke(app, ["registry", "migrate", str(V1), str(out)])
    assert result.exit_code == 0, result.output
    assert "tools[1].source.target: renamed to server ('doc-service')" in result.output
    text = out.read_text()
    written = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    assert written["schemaVersion"] == "2.0"
    assert written["tools"][0]["source"] == {
        "server": "weather-service",
        "tool": "fetch_weather",
        "defaults": {"units": "metric"},
        "hideFields": ["units"],
    }
    again = Registry.from_file(out)  # the written file loads as v2, unchanged
    assert not again.migration.migrated and again.list_tools() == ["get_weather", "search"]


def test_sa_registry_check_lists_tools_and_fails_on_bad_files() -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["registry", "check", str(FIXTURES / "registry.yaml"), "--agent", "summarizer"]
    )
    assert result.exit_code == 0, result.output
    assert "get_doc  [mcp -> doc-service:1.2.0]  Fetch one document by id." in result.output
    assert "1 tools ok" in result.output
    result = runner.invoke(app, ["registry", "check", str(FIXTURES / "bad_ref.yaml")])
    assert result.exit_code == 1
    assert (
        "bad_ref.yaml:15:7: tools[3].inputSchema.$ref: $ref '#/schemas/Plaice' names no schema"
        in result.output
    )


def test_a_bad_yaml_file_fails_with_file_line_and_path() -> None:
    with pytest.raises(SchemaRefError) as info:
        Registry.from_file(FIXTURES / "bad_ref.yaml")
    assert info.value.loc == ("tools", 3, "inputSchema", "$ref")
    assert str(info.value) == (
        f"{FIXTURES / 'bad_ref.yaml'}:15:7: tools[3].inputSchema.$ref: "
        "$ref '#/schemas/Plaice' names no schema 'Plaice' (schemas: Place)"
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "r.yaml",
            'schemaVersion: "2.0"\ntools:\n  - name: t\n'
            '    source: {server: s, tool: t, serverVersion: "^^1"}\n',
            r"r\.yaml:4:34: tools\[0\]\.source\.serverVersion: Value error, bad version constraint '\^\^1'",
        ),
        (
            "r.yaml",
            'schemaVersion: "2.0"\ntools:\n  - name: t\n    source: {server: s, tool: t, target: s}\n',
            r"r\.yaml:4:34: tools\[0\]\.source\.target: Extra inputs are not permitted",
        ),
        (
            "r.yaml",
            'schemaVersion: "2.0"\ntools:\n  - name: t\n  - name: u\n    spec: {}\n',
            r"r\.yaml:3:5: tools\[0\]: Value error, "
            r"tool 't' needs exactly one of \['source', 'spec'\], got none "
            r"\(and 1 more problems:\n  .*r\.yaml:5:5: tools\[1\]\.spec\.pipeline: Field required\)",
        ),
        ("r.yaml", "schemaVersion: [2.0\n", r"r\.yaml:2:1: malformed YAML: expected ',' or ']'"),
        (
            "r.json",
            '{"schemaVersion": "2.0",}',
            r"r\.json:1:25: malformed JSON: Expecting property name enclosed in double quotes",
        ),
        ("r.json", "[]", r"r\.json: a registry document is a mapping, got list"),
        (
            "r.json",
            json.dumps({"schemaVersion": "2.0", "servers": [{"name": "s", "version": "1.0"}]}),
            r"r\.json: servers\[0\]\.version: Value error, '1\.0' is not a semantic version",
        ),
        (
            "r.json",
            json.dumps(
                {
                    "schemaVersion": "2.0",
                    "tools": [
                        {"name": "t", "source": {"server": "s", "tool": "t"}},
                        {"name": "t", "source": {"server": "s", "tool": "u"}},
                    ],
                }
            ),
            r"r\.json: tools\[1\]\.name: tool 't' is defined twice",
        ),
        (
            "r.json",
            json.dumps(
                {
                    "schemaVersion": "2.0",
                    "servers": [{"name": "s", "version": "1.0.0", "capabilities": {"tools": False}}],
                    "tools": [
                        {"name": "t", "source": {"server": "s", "tool": "t", "serverVersion": "1.0.0"}}
                    ],
                }
            ),
            r"tools\[0\]\.source\.server: server s:1\.0\.0 does not declare the 'tools' capability",
        ),
        (
            "r.json",
            json.dumps(
                {
                    "schemaVersion": "2.0",
                    "servers": [{"name": "s", "version": "1.0.0", "providedTools": [{"name": "a"}]}],
                    "tools": [{"name": "t", "source": {"server": "s", "tool": "b", "serverVersion": "1"}}],
                }
            ),
            r"tools\[0\]\.source\.tool: server s:1\.0\.0 provides no tool 'b' \(a\)",
        ),
        (
            "r.json",
            json.dumps(
                {
                    "schemaVersion": "2.0",
                    "agents": [
                        {
                            "name": "a",
                            "version": "1.0.0",
                            "skills": [
                                {
                                    "name": "s",
                                    "inputSchema": {"type": "object", "required": ["topic"]},
                                    "examples": [{"input": {"topic": "x"}}, {"input": {}}],
                                }
                            ],
                        }
                    ],
                }
            ),
            r"agents\[0\]\.skills\[0\]\.examples\[1\]\.input: "
            r"example input does not match the skill's input schema: "
            r"\$: 'topic' is a required property",
        ),
    ],
)
def test_bad_registry_files_fail_with_the_path_of_the_fault(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    with pytest.raises(RegistryError, match=message):
        Registry.from_file(write(tmp_path, name, text))


def test_a_missing_file_and_a_bad_output_extension(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="cannot read the registry file"):
        Registry.from_file(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"the extension must be \.json, \.yaml or \.yml"):
        registry_package.migrate_file(V1, tmp_path / "out.toml")
