"""A bundle whose tools come from an MCP server (tests/tools/mcp_server.py over stdio)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from bundle_helpers import REPO, edit

from structured_agents.bundles import BundleError, load_bundle
from structured_agents.context import RunContext
from structured_agents.errors import ConfigError
from structured_agents.pym import PymRunner
from structured_agents.types import ToolCall

SERVER = REPO / "tests" / "tools" / "mcp_server.py"


def _mcp_bundle(docstring_copy: Path, tool: str) -> Path:
    manifest = docstring_copy / "bundle.yaml"
    server = f"  - type: mcp\n    name: calc\n    command: [{sys.executable}, {SERVER}]\n"
    edit(manifest, "  - type: grail\n    path: tools\n", f"  - type: grail\n    path: tools\n{server}")
    edit(
        manifest,
        "  - name: submit_result\n    bind: [parameter_names]\n",
        f"  - name: submit_result\n    bind: [parameter_names]\n  - name: {tool}\n    registry: calc\n",
    )
    return docstring_copy


def test_mcp_tools_are_resolved_when_the_bundle_connects(docstring_copy: Path, pym_runner: PymRunner) -> None:
    bundle = load_bundle(_mcp_bundle(docstring_copy, "add"), runner=pym_runner)
    with pytest.raises(ConfigError, match=r"await bundle\.connect"):
        bundle.tools  # noqa: B018

    async def use() -> tuple[list[str], str]:
        await bundle.connect()
        try:
            result = await bundle.tools.execute(ToolCall("add", {"a": 2, "b": 3}, "c"), RunContext("r"))
            return [tool.name for tool in bundle.tools.tools()], result.output
        finally:
            await bundle.aclose()

    names, output = asyncio.run(use())

    assert names == ["submit_result", "add"]
    assert output == "5"


def test_a_missing_mcp_tool_names_its_manifest_line(docstring_copy: Path, pym_runner: PymRunner) -> None:
    bundle = load_bundle(_mcp_bundle(docstring_copy, "multiply"), runner=pym_runner)

    async def connect() -> None:
        try:
            await bundle.connect()
        finally:
            await bundle.aclose()

    with pytest.raises(BundleError, match=r"bundle.yaml:\d+:\d+: tools.1: .*multiply"):
        asyncio.run(connect())
