"""Core value types shared by plugins, engines, tools and the kernel.

All are frozen dataclasses: cheap to build, hashable where their fields are, and safe to
pass between threads and processes (they round-trip through ``to_dict``/``from_dict`` so
queue workers and the store can carry them as JSON).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "JsonDict",
    "Message",
    "Role",
    "TokenUsage",
    "ToolCall",
    "ToolResult",
    "ToolSchema",
    "json_type_of",
]

JsonDict = dict[str, Any]
Role = Literal["system", "user", "assistant", "tool"]


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool as the model sees it, plus where and how it runs."""

    name: str
    """Tool name the model calls; any string (grammars escape it)."""
    description: str
    """One-paragraph description shown to the model."""
    parameters: JsonDict = field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments object (``type: object``)."""
    backend: str = "python"
    """Which tool backend executes it: ``python``, ``grail``, ``mcp`` or a custom name."""
    script_path: Path | None = None
    """For ``grail`` tools: the ``.pym`` script."""
    context_providers: tuple[Path, ...] = ()
    """``.pym`` scripts whose output is prepended to this tool's result."""
    server: str | None = None
    """For ``mcp`` tools: the server (registry) that provides it."""

    @property
    def properties(self) -> dict[str, JsonDict]:
        """The argument properties of the schema (empty when there are none)."""
        props = self.parameters.get("properties", {})
        return dict(props) if isinstance(props, Mapping) else {}

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the required arguments."""
        return tuple(self.parameters.get("required", ()))

    def to_openai_format(self) -> JsonDict:
        """The tool in the OpenAI ``tools`` array format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    @classmethod
    def from_openai_format(cls, tool: Mapping[str, Any]) -> ToolSchema:
        """The tool an OpenAI ``tools`` array entry describes (the inverse of
        :meth:`to_openai_format`; a bare ``{"name", "parameters"}`` object is read too)."""
        function = tool.get("function", tool)
        return cls(
            name=str(function.get("name", "")),
            description=str(function.get("description") or ""),
            parameters=dict(function.get("parameters") or {"type": "object", "properties": {}}),
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool the model asked for."""

    name: str
    arguments: JsonDict = field(default_factory=dict)
    id: str = field(default_factory=_new_call_id)

    def to_openai_format(self) -> JsonDict:
        """The call in the OpenAI ``tool_calls`` format (arguments as a JSON string)."""
        import json

        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }

    def to_dict(self) -> JsonDict:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(name=str(data["name"]), arguments=dict(data.get("arguments") or {}), id=str(data["id"]))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned for one call; errors are results too, shown to the model."""

    call_id: str
    name: str
    output: str
    is_error: bool = False
    ban: tuple[str, ...] = ()
    """Texts the model must not write in the run's next turns (a tool that refused a copied
    text names it); the kernel adds them to the ``bad_words`` of the run's requests."""

    def to_dict(self) -> JsonDict:
        data: JsonDict = {
            "call_id": self.call_id,
            "name": self.name,
            "output": self.output,
            "is_error": self.is_error,
        }
        if self.ban:
            data["ban"] = list(self.ban)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        return cls(
            call_id=str(data["call_id"]),
            name=str(data["name"]),
            output=str(data["output"]),
            is_error=bool(data.get("is_error", False)),
            ban=tuple(str(text) for text in data.get("ban") or ()),
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. Assistant messages may carry tool calls; tool messages answer one call."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str | None, tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls(role="assistant", content=content, tool_calls=tool_calls)

    @classmethod
    def tool(cls, result: ToolResult) -> Message:
        return cls(role="tool", content=result.output, tool_call_id=result.call_id, name=result.name)

    def to_openai_format(self) -> JsonDict:
        """The message in the OpenAI chat format."""
        out: JsonDict = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai_format() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    def to_dict(self) -> JsonDict:
        return {
            "role": self.role,
            "content": self.content,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "name": self.name,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        role = data["role"]
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"Message.role must be system|user|assistant|tool, got {role!r}")
        return cls(
            role=role,
            content=data.get("content"),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts of one generation (or a sum of several)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


def json_type_of(value: Any) -> str:
    """The JSON-schema type name of a JSON value (tuples count as arrays)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list | tuple) else "object"
