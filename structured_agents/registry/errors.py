"""Errors of the v2 tool registry, each naming where in which document the fault is.

They hang under the package's one tree (``structured_agents.errors``)::

    ConfigError
    └── RegistryError           a registry document is invalid (file, line, JSON path)
        ├── VersionError        a version or version constraint does not parse
        ├── SchemaRefError      a ``$ref`` names no schema (or an unsupported target)
        ├── SchemaCycleError    schemas refer to themselves through ``$ref`` (names the cycle)
        ├── RoutingError        no declared server version satisfies a constraint
        └── MigrationError      a document is of a version that cannot be migrated
    ToolExecutionError
    └── PipelineError           a pipeline step failed (becomes an error ToolResult)

The location of a fault is a JSON path in the document's wire names, as written in the file:
``tools[3].inputSchema.$ref``.
"""

from __future__ import annotations

from collections.abc import Sequence

from structured_agents.errors import ConfigError, ToolExecutionError

__all__ = [
    "Loc",
    "MigrationError",
    "PipelineError",
    "RegistryError",
    "RoutingError",
    "SchemaCycleError",
    "SchemaRefError",
    "VersionError",
    "format_loc",
]

Loc = tuple[str | int, ...]
"""A location inside a document: keys and list indices from the root."""


def format_loc(loc: Sequence[str | int]) -> str:
    """``("tools", 3, "inputSchema", "$ref")`` as ``tools[3].inputSchema.$ref`` (``$`` for the root)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "$"


class RegistryError(ConfigError):
    """A registry document is invalid; ``loc`` is where, ``source`` the file (or ``<dict>``)."""

    def __init__(self, message: str, loc: Sequence[str | int] = (), source: str | None = None) -> None:
        self.detail = message
        self.loc: Loc = tuple(loc)
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [*([self.source] if self.source else []), *([format_loc(self.loc)] if self.loc else [])]
        return ": ".join([*parts, self.detail])

    def located(self, source: str) -> RegistryError:
        """The same error naming ``source`` (``file`` or ``file:line:col``) in its message."""
        self.source = source
        self.args = (self._render(),)
        return self


class VersionError(RegistryError):
    """A version (``1.2.0``) or constraint (``^1.2``, ``>=1.0,<2``) is malformed."""


class SchemaRefError(RegistryError):
    """A ``$ref`` points at no schema, at a missing schema version, or outside the registry."""


class SchemaCycleError(RegistryError):
    """Named schemas refer to themselves through ``$ref``; ``cycle`` lists the schemas in order."""

    def __init__(self, cycle: Sequence[str], loc: Sequence[str | int] = ()) -> None:
        self.cycle = tuple(cycle)
        super().__init__(
            f"schema reference cycle {' -> '.join(self.cycle)}: recursive schemas cannot be inlined "
            "into the flat schemas grammars are built from",
            loc,
        )


class RoutingError(RegistryError):
    """No version of a server satisfies a constraint (or the server is not declared)."""


class MigrationError(RegistryError):
    """A document's ``schemaVersion`` is neither ``1.x`` (migrated) nor ``2.0``."""


class PipelineError(ToolExecutionError):
    """A pipeline step failed; the message names the pipeline and the step."""
