"""The one way a list of tool names becomes schemas, with the one error for names that are missing.

Every registry (a ``.pym`` folder, Python functions, an MCP server, a registry document or
one agent's view of it) answers ``list_tools`` and ``resolve``; :func:`resolve_all` does the
rest for all of them, so a missing tool reads the same wherever it is asked for::

    registry 'grail' has no tool 'read_type_hint' (available: read_type_hints, submit_result)
"""

from __future__ import annotations

from collections.abc import Sequence

from structured_agents.errors import ToolError, ToolNotFoundError
from structured_agents.tools.protocol import ToolRegistry
from structured_agents.types import ToolSchema

__all__ = ["missing_tools_message", "resolve_all"]


def missing_tools_message(registry: ToolRegistry, missing: Sequence[str]) -> str:
    """``registry 'NAME' has no tool 'a', 'b' (available: ...)``."""
    available = ", ".join(registry.list_tools()) or "none"
    names = ", ".join(map(repr, missing))
    return f"registry {registry.name!r} has no tool {names} (available: {available})"


def resolve_all(registry: ToolRegistry, tool_names: Sequence[str]) -> list[ToolSchema]:
    """The schemas of ``tool_names`` in order.

    Raises :class:`ToolNotFoundError` naming every missing tool and what the registry has, and
    :class:`ToolError` when two names resolve to tools of the same name (the model could not
    tell them apart). Errors ``resolve`` raises (a broken ``.pym`` script) propagate.
    """
    found = [(name, registry.resolve(name)) for name in tool_names]
    missing = [name for name, schema in found if schema is None]
    if missing:
        raise ToolNotFoundError(missing_tools_message(registry, missing))
    schemas = [schema for _, schema in found if schema is not None]
    names = [schema.name for schema in schemas]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ToolError(f"registry {registry.name!r} would offer more than one tool named {twice}")
    return schemas
