"""MCPRegistry + MCPBackend against a real MCP server (tests/tools/mcp_server.py), over stdio
and streamable HTTP."""

from __future__ import annotations

import asyncio
import selectors
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import mcp_types
import pytest

from structured_agents.context import RunContext
from structured_agents.errors import ToolError, ToolNotFoundError
from structured_agents.tools.mcp import MCPBackend, MCPRegistry, render_call_result
from structured_agents.tools.resolve import resolve_all
from structured_agents.tools.source import RegistryBackendToolSource
from structured_agents.types import ToolCall, ToolSchema

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("mcp_server.py")
CTX = RunContext(run_id="run-mcp")
TOOLS = ["add", "echo", "fail", "slow", "point"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def stdio_registry() -> AsyncIterator[MCPRegistry]:
    async with MCPRegistry.stdio("local", sys.executable, [str(SERVER)], connect_timeout=20) as registry:
        yield registry


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(timeout=20), "the HTTP MCP server did not print its port within 20 s"
        line = proc.stdout.readline()
        assert line.startswith("PORT "), f"unexpected first line from the server: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


async def test_discovery_over_stdio(stdio_registry: MCPRegistry) -> None:
    assert stdio_registry.connected and stdio_registry.list_tools() == TOOLS
    add = stdio_registry.resolve("add")
    assert add is not None
    assert (add.backend, add.server, add.description) == ("mcp", "local", "Add two integers.")
    assert add.required == ("a", "b") and add.properties["a"]["type"] == "integer"
    assert stdio_registry.resolve("nope") is None
    with pytest.raises(ToolNotFoundError, match="registry 'local' has no tool 'nope', 'grep'"):
        resolve_all(stdio_registry, ["add", "nope", "grep"])


async def test_calls_through_a_tool_source(stdio_registry: MCPRegistry) -> None:
    source = RegistryBackendToolSource(stdio_registry, MCPBackend([stdio_registry], timeout=0.5))
    assert [t.name for t in source.tools()] == TOOLS

    async def call(name: str, **arguments: object) -> tuple[str, bool]:
        result = await source.execute(ToolCall(name, dict(arguments)), CTX)
        return result.output, result.is_error

    assert await call("add", a=2, b=40) == ("42", False)
    assert await call("echo", text="héllo") == ("héllo", False)
    assert await call("point", x=1, y=2) == ('{\n  "x": 1,\n  "y": 2\n}', False)
    assert await call("fail") == ("Error executing tool fail: fail was asked to fail", True)
    output, is_error = await call("add", a="x", b=1)
    assert is_error and "validation error" in output
    assert await call("slow", seconds=5) == ("slow timed out after 0.5s", True)
    assert await call("add", a=1, b=1) == ("2", False)  # the connection survives a timed-out call
    assert await call("grep") == (f"unknown tool grep; available: {', '.join(TOOLS)}", True)


async def test_concurrent_calls_share_one_connection(stdio_registry: MCPRegistry) -> None:
    backend = MCPBackend([stdio_registry])
    schema = resolve_all(stdio_registry, ["add"])[0]
    results = await asyncio.gather(
        *(backend.execute(ToolCall("add", {"a": i, "b": i}), schema, CTX) for i in range(8))
    )
    assert [r.output for r in results] == [str(2 * i) for i in range(8)]


async def test_unknown_server_and_refresh(stdio_registry: MCPRegistry) -> None:
    schema = ToolSchema("add", "x", backend="mcp", server="elsewhere")
    result = await MCPBackend([stdio_registry]).execute(ToolCall("add"), schema, CTX)
    assert result.is_error and result.output == "no MCP server 'elsewhere' for tool add; known servers: local"
    await stdio_registry.refresh()
    assert stdio_registry.list_tools() == TOOLS


async def test_streamable_http(http_url: str) -> None:
    registry = MCPRegistry.http("web", http_url, connect_timeout=20)
    await registry.aconnect()
    try:
        assert registry.list_tools() == TOOLS
        source = RegistryBackendToolSource(registry, MCPBackend([registry]), ["add"])
        assert (await source.execute(ToolCall("add", {"a": 3, "b": 4}), CTX)).output == "7"
    finally:
        await registry.aclose()


async def test_lifecycle_across_tasks_and_errors() -> None:
    registry = MCPRegistry.stdio("local", sys.executable, [str(SERVER)], connect_timeout=20)
    with pytest.raises(ToolError, match="MCP registry 'local' is not connected; call aconnect"):
        registry.list_tools()
    await asyncio.create_task(registry.aconnect())  # connect in one task ...
    with pytest.raises(ToolError, match="already connected"):
        await registry.aconnect()
    assert registry.list_tools() == TOOLS
    await asyncio.create_task(registry.aclose())  # ... close in another
    assert not registry.connected
    await registry.aclose()  # closing twice does nothing
    schema = ToolSchema("add", "x", backend="mcp", server="local")
    result = await MCPBackend([registry]).execute(ToolCall("add", {"a": 1, "b": 1}), schema, CTX)
    assert result.is_error and "not connected" in result.output


async def test_connect_failures_are_tool_errors(tmp_path: Path) -> None:
    missing = MCPRegistry.stdio("ghost", str(tmp_path / "no-such-server"))
    with pytest.raises(ToolError, match=r"cannot connect to MCP server 'ghost': .*Error"):
        await missing.aconnect()
    dies = MCPRegistry.stdio("dies", sys.executable, ["-c", "import sys; sys.exit(3)"], connect_timeout=10)
    with pytest.raises(ToolError, match="cannot connect to MCP server 'dies'"):
        await dies.aconnect()
    assert not dies.connected
    mute = MCPRegistry.stdio(
        "mute", sys.executable, ["-c", "import time; time.sleep(30)"], connect_timeout=0.3
    )
    with pytest.raises(ToolError, match=r"cannot connect to MCP server 'mute': timed out after 0\.3s"):
        await mute.aconnect()


def test_render_call_result_content_kinds() -> None:
    blocks: list[mcp_types.ContentBlock] = [
        mcp_types.TextContent(text="first"),
        mcp_types.ImageContent(data="AAAA", mime_type="image/png"),
        mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="body")),
        mcp_types.EmbeddedResource(resource=mcp_types.BlobResourceContents(uri="file:///b.bin", blob="AA==")),
        mcp_types.ResourceLink(uri="file:///c.txt", name="c"),
    ]
    text = render_call_result(mcp_types.CallToolResult(content=blocks))
    assert text.splitlines() == [
        "first",
        "[image image/png]",
        "body",
        "[resource file:///b.bin]",
        "[resource link file:///c.txt]",
    ]
    structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1})
    assert render_call_result(structured) == '{"n":1}'
    assert render_call_result(mcp_types.CallToolResult(content=[])) == ""
