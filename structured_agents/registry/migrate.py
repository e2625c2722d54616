"""Migration of v1 registry documents to v2, with a report of every change.

A v1 document (``schemaVersion`` ``1.x``, or none) differs from v2 in two ways the seed's
migration guide names: ``schemaVersion`` becomes ``"2.0"``, and ``SourceTool.target`` is
renamed ``server``. Everything else a v1 file holds is valid v2 (no schemas, servers or
agents; tools without ``serverVersion`` route to the latest server version). A v2 document is
returned unchanged with an empty report; any other version is a :class:`MigrationError`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from structured_agents.registry.errors import MigrationError, format_loc

__all__ = ["CURRENT_VERSION", "Change", "MigrationReport", "migrate_document"]

CURRENT_VERSION = "2.0"
"""The ``schemaVersion`` this package reads and writes."""


@dataclass(frozen=True, slots=True)
class Change:
    """One change made to a document."""

    path: str
    """JSON path of what changed, in the source document (``tools[2].source.target``)."""
    description: str
    """What was done (``renamed to server``)."""

    def __str__(self) -> str:
        return f"{self.path}: {self.description}"


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What a migration changed; empty for a document that already was v2."""

    source_version: str
    """The document's ``schemaVersion`` as found (``"(none)"`` when it had none)."""
    changes: tuple[Change, ...] = ()

    @property
    def migrated(self) -> bool:
        """True when the document was not v2."""
        return bool(self.changes)

    def __str__(self) -> str:
        if not self.changes:
            return f"already schemaVersion {CURRENT_VERSION}: nothing to migrate"
        lines = [
            f"migrated schemaVersion {self.source_version} -> {CURRENT_VERSION} ({len(self.changes)} changes)"
        ]
        return "\n".join([*lines, *(f"  {change}" for change in self.changes)])


def migrate_document(data: Mapping[str, Any]) -> tuple[dict[str, Any], MigrationReport]:
    """The v2 form of a registry document (a new dict) and the report of what changed."""
    out = copy.deepcopy(dict(data))
    key = "schema_version" if "schema_version" in out and "schemaVersion" not in out else "schemaVersion"
    found = out.get(key)
    version = "(none)" if found is None else str(found)
    if version == CURRENT_VERSION:
        return out, MigrationReport(version)
    if found is not None and not (version == "1" or version.startswith("1.")):
        raise MigrationError(
            f"unsupported schemaVersion {found!r}: this registry reads {CURRENT_VERSION!r} and migrates 1.x",
            (key,),
        )
    changes: list[Change] = []
    out.pop(key, None)
    out = {"schemaVersion": CURRENT_VERSION, **out}
    changes.append(Change(key, f"{version} -> {CURRENT_VERSION}"))
    tools = out.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        source = tool.get("source") if isinstance(tool, dict) else None
        if not isinstance(source, dict) or "target" not in source:
            continue
        loc = ("tools", index, "source", "target")
        if "server" in source:
            raise MigrationError("a v1 source has both 'target' and 'server'; keep one", loc)
        tool["source"] = {("server" if k == "target" else k): v for k, v in source.items()}
        changes.append(Change(format_loc(loc), f"renamed to server ({source['target']!r})"))
    return out, MigrationReport(version, tuple(changes))
