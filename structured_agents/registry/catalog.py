"""What the parts that run a registry's tools need of it: the :class:`ToolCatalog` protocol.

The backends (:mod:`.backend`, :mod:`.pipelines`) and the scoped view (:mod:`.scoping`) read
a registry through this protocol, so they do not import the module that builds registries
(:mod:`.registry`), which imports them.
"""

from __future__ import annotations

from typing import Protocol

from structured_agents.registry.compiled import CompiledTool
from structured_agents.registry.plans import PipelinePlan
from structured_agents.types import ToolSchema

__all__ = ["ToolCatalog"]


class ToolCatalog(Protocol):
    """A checked registry: its tools by name, ready to run."""

    name: str

    def list_tools(self) -> list[str]:
        """Every tool, in document order."""
        ...

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The schema the model sees, or None."""
        ...

    def compiled(self, tool_name: str) -> CompiledTool | None:
        """A tool ready to run, or None."""
        ...

    def pipeline(self, tool_name: str) -> PipelinePlan | None:
        """The plan of a pipeline tool, or None."""
        ...
