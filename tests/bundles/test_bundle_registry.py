"""A bundle whose tool source is a registry file (the shipped docstring_team bundle, copied to
break on purpose): versions routed by constraint, scoping by agent, and mistakes that name the
manifest line and the registry file's own line."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from bundle_helpers import SHIPPED, edit, line_of

from structured_agents.bundles import Bundle, BundleError, load_bundle
from structured_agents.context import RunContext
from structured_agents.pym import PymRunner
from structured_agents.types import ToolCall


@pytest.fixture
def team(tmp_path: Path) -> Path:
    """A copy of docstring_team (and of the docstring bundle, whose submit tool it uses)."""
    for name in ("docstring", "docstring_team"):
        shutil.copytree(SHIPPED / name, tmp_path / name)
    return tmp_path / "docstring_team"


def _error(bundle: Path, runner: PymRunner) -> str:
    with pytest.raises(BundleError) as caught:
        load_bundle(bundle, runner=runner)
    return str(caught.value)


def _style_rules(bundle: Bundle) -> dict[str, object]:
    async def call() -> str:
        await bundle.connect()
        try:
            context = RunContext("r", inputs={"qualname": "pkg.f"})
            result = await bundle.tools.execute(ToolCall("style_rules", {}, "c"), context)
            assert not result.is_error, result.output
            return result.output
        finally:
            await bundle.aclose()

    return dict(json.loads(asyncio.run(call())))


def test_the_server_version_is_the_one_the_constraint_routes_to(team: Path, pym_runner: PymRunner) -> None:
    assert _style_rules(load_bundle(team, runner=pym_runner))["server_version"] == "2.0.0"
    edit(team / "registry.yaml", 'serverVersion: "^2"', 'serverVersion: "~1.0"')
    edit(team / "registry.yaml", 'versionConstraint: "^2"', 'versionConstraint: "^1"')
    rules = _style_rules(load_bundle(team, runner=pym_runner))
    assert rules == {
        "server_version": "1.0.0",
        "target": "pkg.f",
        "rules": ["Start with one line that says what it does, in the imperative mood."],
    }


def test_the_bundle_sees_the_registry_as_its_agent_may(team: Path, pym_runner: PymRunner) -> None:
    edit(team / "registry.yaml", "      - {agent: summarizer}\n", "")
    manifest = team / "bundle.yaml"

    async def connect() -> None:
        bundle = load_bundle(team, runner=pym_runner)
        try:
            await bundle.connect()
        finally:
            await bundle.aclose()

    with pytest.raises(BundleError) as caught:
        asyncio.run(connect())
    assert str(caught.value) == (
        f"{manifest}:{line_of(manifest, '- name: summarize_code')}:5: tools.0: "
        "registry 'team' has no tool 'summarize_code' (available: style_rules)"
    )


def test_a_fault_in_the_registry_file_names_both_files(team: Path, pym_runner: PymRunner) -> None:
    registry = team / "registry.yaml"
    edit(registry, 'serverVersion: "^2"', 'serverVersion: "^3"')

    message = _error(team, pym_runner)

    manifest = team / "bundle.yaml"
    assert message.startswith(f"{manifest}:{line_of(manifest, 'path: registry.yaml')}:5: registries.0.path: ")
    assert f"{registry}:{line_of(registry, 'serverVersion')}:" in message
    assert (
        "tools[0].source.serverVersion: tool style_rules: no version of server 'style-guide' satisfies '^3'"
        in (message)
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            '    endpoint: {command: [python, servers/style_guide.py, "2.0.0"]}\n',
            "",
            "tools[0].source.server: tool 'style_rules' is routed to server 'style-guide:2.0.0', "
            "which has no endpoint to start it",
        ),
        ("    bundle: agents/summarizer", "    bundle: .", "agents run each other as tools in a cycle: "),
        ("    bundle: agents/summarizer", "    bundle: agents/nobody", "no such bundle"),
    ],
)
def test_registry_file_mistakes(team: Path, pym_runner: PymRunner, old: str, new: str, expected: str) -> None:
    edit(team / "registry.yaml", old, new)
    assert expected in _error(team, pym_runner)


def test_an_unknown_agent_scope_names_its_line(team: Path, pym_runner: PymRunner) -> None:
    manifest = team / "bundle.yaml"
    edit(manifest, "agent: docstring-writer", "agent: nobody")
    assert _error(team, pym_runner) == (
        f"{manifest}:{line_of(manifest, 'agent: nobody')}:5: registries.0.agent: "
        "registry 'team' has no agent 'nobody' (agents: summarizer, docstring-writer)"
    )
