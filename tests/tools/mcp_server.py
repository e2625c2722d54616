"""A small real MCP server the tool tests start as a subprocess.

Tools: ``add(a, b)``, ``echo(text)``, ``fail()`` (raises), ``slow(seconds)`` and ``point(x, y)``
(structured output). Run it as::

    python tests/tools/mcp_server.py            # stdio transport
    python tests/tools/mcp_server.py --http     # streamable HTTP on 127.0.0.1, free port

With ``--http`` it binds the socket itself, prints ``PORT <n>`` on stdout before serving, and
serves ``/mcp`` until killed: the test reads the port from that line, so there is no race for
a port number.
"""

from __future__ import annotations

import asyncio
import socket
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server: MCPServer = MCPServer("test-tools", log_level="WARNING")


class Point(BaseModel):
    """A point in the plane."""

    x: int
    y: int


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail() -> str:
    """Always fail (a ToolError's message reaches the client; other exceptions are hidden)."""
    raise ToolError("fail was asked to fail")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then say how long."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def point(x: int, y: int) -> Point:
    """Build a point (structured output)."""
    return Point(x=x, y=y)


async def _serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # before the port is printed: a client that connects early waits in the backlog
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        asyncio.run(_serve_http())
    else:
        server.run("stdio")
