"""A registry file's servers opened from their endpoints (a ``.pym`` folder, a Python module)
and bound: tools take their schema from their server, bound fields come from the run's inputs,
overrides change only what the model sees, and a tool the server lacks is a load error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from structured_agents.context import RunContext
from structured_agents.pym import PymCache, PymRunner, ScriptLoader
from structured_agents.pym.host_functions import default_externals
from structured_agents.registry import Registry, RegistryError
from structured_agents.registry.endpoints import ServerSet
from structured_agents.tools.grail import GrailBackend
from structured_agents.types import ToolCall

pytestmark = pytest.mark.anyio

SHOUT = '''"""Shout a text."""

from grail import Input

text: str = Input("text", description="What to shout.")

text.upper()
'''


@pytest.fixture(scope="module")
def pym_runner() -> Iterator[PymRunner]:
    with PymRunner() as runner:
        yield runner


def write(tmp_path: Path, tools: list[dict[str, Any]]) -> Path:
    (tmp_path / "scripts").mkdir(exist_ok=True)
    (tmp_path / "scripts" / "shout.pym").write_text(SHOUT)
    document = {
        "schemaVersion": "2.0",
        "servers": [
            {"name": "scripts", "version": "1.0.0", "endpoint": {"pym": "scripts"}},
            {"name": "funcs", "version": "1.0.0", "endpoint": {"python": "registry_doubles"}},
        ],
        "tools": tools,
    }
    path = tmp_path / "registry.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def opened(path: Path) -> tuple[Registry, ServerSet]:
    registry = Registry.from_file(path)
    servers = ServerSet(loader=ScriptLoader(PymCache()), externals=default_externals(), grants=())
    servers.open_routes(registry)
    return registry.bind(servers.servers), servers


TOOLS: list[dict[str, Any]] = [
    {
        "name": "shout",
        "source": {"server": "scripts", "tool": "shout", "serverVersion": "^1", "bind": ["text"]},
    },
    {
        "name": "plus",
        "source": {"server": "funcs", "tool": "add", "serverVersion": "^1"},
        "inputsOverride": {"a": {"type": "integer", "description": "The number to start from."}},
    },
]


async def test_pym_and_python_servers_run_their_tools(tmp_path: Path, pym_runner: PymRunner) -> None:
    registry, servers = opened(write(tmp_path, TOOLS))
    source = registry.tool_source(servers.backend(GrailBackend(runner=pym_runner)))

    shout, plus = source.tools()
    assert (shout.backend, shout.server, shout.parameters["properties"]) == ("grail", "scripts:1.0.0", {})
    assert (plus.backend, plus.description) == ("python:funcs:1.0.0", "Add two integers.")
    assert plus.properties["a"] == {"type": "integer", "description": "The number to start from."}
    assert plus.properties["b"]["description"] == "the second."  # the server's own schema
    context = RunContext("r", inputs={"text": "hi"})
    assert (await source.execute(ToolCall("shout", {}, "1"), context)).output == '"HI"'
    assert (await source.execute(ToolCall("plus", {"a": 2, "b": 3}, "2"), context)).output == "5"
    lacking = await source.execute(ToolCall("shout", {}, "3"), RunContext("r"))
    assert (lacking.is_error, lacking.output) == (
        True,
        "shout needs the job input(s) text, which this job lacks",
    )


def test_a_tool_its_server_lacks_names_the_line_of_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path, [{"name": "minus", "source": {"server": "funcs", "tool": "sub", "serverVersion": "^1"}}]
    )
    with pytest.raises(RegistryError) as caught:
        opened(path)
    assert str(caught.value).startswith(f"{path}:")
    assert "tools[0].source.tool: registry 'doubles' has no tool 'sub' (available: add)" in str(caught.value)
