"""The style-guide MCP server of the docstring_team bundle, in the version its argument names.

    python servers/style_guide.py 2.0.0       # stdio transport

Its one tool, ``docstring_rules(qualname)``, answers with the rules a docstring of the project
follows and the version that answered (so a caller can see where it was routed). Version 2
adds the rules about parameters.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

VERSION = sys.argv[1] if len(sys.argv) > 1 else "1.0.0"
RULES = {
    "1": ["Start with one line that says what it does, in the imperative mood."],
    "2": [
        "Start with one line that says what it does, in the imperative mood.",
        "Describe only the parameters the function takes, in its signature's order.",
    ],
}

server: MCPServer = MCPServer("style-guide", log_level="WARNING")


@server.tool()
def docstring_rules(qualname: str) -> dict[str, object]:
    """The docstring rules of the project for the target ``qualname``."""
    return {"server_version": VERSION, "target": qualname, "rules": RULES[VERSION.split(".")[0]]}


if __name__ == "__main__":
    server.run("stdio")
