"""What the loader knows about a checked ``.pym`` script: inputs, externals, schema, code.

A :class:`PymScript` is built once per file content (and cached on disk as JSON, see
:mod:`structured_agents.pym.cache`); the runner only needs these values, never the AST.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structured_agents.types import JsonDict, ToolSchema

__all__ = ["ExternalDecl", "ExternalParam", "InputSpec", "PymScript"]


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One ``name: T = Input("name", default=..., description=...)`` declaration."""

    name: str
    """Input name; equals the assigned variable."""
    schema: JsonDict
    """JSON schema of the value (with ``default`` and ``description`` when declared)."""
    required: bool
    """True when the declaration has no ``default``."""
    default: Any = None
    """The literal default (meaningless when ``required``)."""
    line: int = 0
    """1-based line of the declaration."""

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "schema": self.schema,
            "required": self.required,
            "default": self.default,
            "line": self.line,
        }

    @classmethod
    def from_json(cls, data: JsonDict) -> InputSpec:
        return cls(data["name"], data["schema"], data["required"], data["default"], data["line"])


@dataclass(frozen=True, slots=True)
class ExternalParam:
    """One parameter of an ``@external`` declaration (or of a host function)."""

    name: str
    annotation: str
    """Annotation as source text (``"str"``); empty for host functions without one."""
    has_default: bool = False


@dataclass(frozen=True, slots=True)
class ExternalDecl:
    """One ``@external async def name(...): ...`` declaration of a host function."""

    name: str
    params: tuple[ExternalParam, ...]
    line: int
    column: int

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "params": [[p.name, p.annotation, p.has_default] for p in self.params],
            "line": self.line,
            "column": self.column,
        }

    @classmethod
    def from_json(cls, data: JsonDict) -> ExternalDecl:
        params = tuple(ExternalParam(str(n), str(a), bool(d)) for n, a, d in data["params"])
        return cls(data["name"], params, data["line"], data["column"])


@dataclass(frozen=True, slots=True)
class PymScript:
    """A checked ``.pym`` script, ready to run."""

    path: Path
    """The file it was loaded from (as given)."""
    source_hash: str
    """SHA-256 of the file content; the disk-cache key."""
    description: str
    """The module docstring, or ``"Grail tool NAME"`` when there is none."""
    inputs: tuple[InputSpec, ...]
    """Declared inputs in file order."""
    externals: tuple[ExternalDecl, ...]
    """Declared host functions in file order."""
    code: str
    """The source the sandbox runs: declarations blanked out, every other line unchanged."""

    @property
    def name(self) -> str:
        """Tool name: the file name without ``.pym``."""
        return self.path.stem

    @property
    def parameters(self) -> JsonDict:
        """JSON schema of the arguments object."""
        return {
            "type": "object",
            "properties": {spec.name: spec.schema for spec in self.inputs},
            "required": [spec.name for spec in self.inputs if spec.required],
            "additionalProperties": False,
        }

    def to_tool_schema(self) -> ToolSchema:
        """The script as a ``grail`` tool."""
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            backend="grail",
            script_path=self.path,
        )
