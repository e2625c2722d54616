"""Python callables as tools: a registry that derives schemas, a backend that runs them.

The argument schema of a function comes from its signature and type hints through a pydantic
model built with :func:`pydantic.create_model`; the same model validates the arguments at call
time, so what the model is shown and what is checked cannot drift apart. Descriptions come
from a Google-style docstring: the text before the first section is the tool description,
the ``Args:`` entries describe the parameters.

A parameter annotated :class:`~structured_agents.context.RunContext` (of any name) is not part
of the schema: the backend passes the run context into it.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints, overload

import pydantic
import pydantic_core

from structured_agents.context import RunContext
from structured_agents.errors import ConfigError
from structured_agents.types import JsonDict, ToolCall, ToolResult, ToolSchema

__all__ = ["PythonBackend", "PythonRegistry", "PythonTool"]

F = TypeVar("F", bound=Callable[..., Any])

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns?|Yields?|Raises|Examples?|Notes?|Attributes):\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class PythonTool:
    """A registered callable with the schema and validator derived from it."""

    name: str
    """Tool name the model calls."""
    func: Callable[..., Any]
    """The function (sync or async) that runs the tool."""
    schema: ToolSchema
    """The schema shown to the model (``backend="python"``)."""
    arguments: type[pydantic.BaseModel]
    """Pydantic model of the arguments; validates a call's arguments before it runs."""
    context_param: str | None
    """Name of the parameter that receives the :class:`RunContext`, if any."""
    is_async: bool
    """Whether calling ``func`` returns a coroutine (then it runs on the loop, not in a thread)."""


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (text before the first section) and the ``Args:`` entries of a docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        header = _SECTION.match(line.strip()) if not line.startswith(" ") else None
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters") and line.strip():
            entry = _ARG_LINE.match(line.strip())
            indent = len(line) - len(line.lstrip())
            if entry and (arg_indent is None or indent <= arg_indent):
                current, arg_indent = entry.group(1).lstrip("*"), indent
                params[current] = entry.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params


def _strip_titles(schema: JsonDict) -> JsonDict:
    """Drop pydantic's generated ``title`` keys (noise for the model and the grammar)."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    for sub in schema.get("$defs", {}).values():
        if isinstance(sub, dict):
            _strip_titles(sub)
    return schema


def build_tool(
    func: Callable[..., Any], name: str | None = None, description: str | None = None
) -> PythonTool:
    """Derive a :class:`PythonTool` from a function; raises ConfigError if it cannot be a tool."""
    tool_name = name or getattr(func, "__name__", "")
    if not tool_name:
        raise ConfigError(f"tool name is required for {func!r} (it has no __name__)")
    summary, arg_docs = _parse_docstring(func.__doc__)
    try:
        hints = get_type_hints(func, include_extras=True)
        signature = inspect.signature(func)
    except (NameError, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot read the signature of tool {tool_name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ConfigError(f"tool {tool_name!r}: parameter {param.name!r} must be a keyword parameter")
        annotation = hints.get(param.name, Any)
        if annotation is RunContext:
            context_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, pydantic.Field(default, description=arg_docs.get(param.name)))
    try:
        model = pydantic.create_model(
            f"{tool_name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
        parameters = _strip_titles(model.model_json_schema())
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise ConfigError(f"tool {tool_name!r}: cannot build an argument schema: {exc}") from exc
    parameters.setdefault("properties", {})
    schema = ToolSchema(
        name=tool_name,
        description=description or summary or f"Python function {tool_name}",
        parameters=parameters,
        backend="python",
    )
    is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)
    return PythonTool(tool_name, func, schema, model, context_param, is_async)


class PythonRegistry:
    """Tools backed by Python callables, registered with :meth:`register` or ``@registry.tool``."""

    def __init__(self, name: str = "python") -> None:
        self.name = name
        self._tools: dict[str, PythonTool] = {}

    def register(
        self, func: Callable[..., Any], name: str | None = None, description: str | None = None
    ) -> PythonTool:
        """Register ``func`` as a tool; ConfigError if the name is taken or the signature unusable."""
        tool = build_tool(func, name, description)
        if tool.name in self._tools:
            raise ConfigError(f"registry {self.name!r} already has a tool named {tool.name!r}")
        self._tools[tool.name] = tool
        return tool

    @overload
    def tool(self, func: F, /) -> F: ...

    @overload
    def tool(
        self, func: None = None, /, *, name: str | None = None, description: str | None = None
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        func: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Any:
        """Decorator form of :meth:`register`: ``@registry.tool`` or ``@registry.tool(name=...)``."""

        def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
            self.register(f, name, description)
            return f

        return decorate(func) if func is not None else decorate

    def get(self, tool_name: str) -> PythonTool | None:
        """The registered tool (callable, validator, schema), or None."""
        return self._tools.get(tool_name)

    def list_tools(self) -> list[str]:
        """Names of the registered tools, in registration order."""
        return list(self._tools)

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The schema of one tool, or None."""
        tool = self._tools.get(tool_name)
        return tool.schema if tool else None


def format_validation_error(exc: pydantic.ValidationError) -> str:
    """A compact, model-readable list of what is wrong with the arguments."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = "" if err["type"] == "missing" else f" (got {err['input']!r})"
        parts.append(f"{where}: {err['msg']}{got}")
    return "; ".join(parts)


def to_output(value: Any) -> str:
    """A tool's return value as the text the model sees: strings as-is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return pydantic_core.to_json(value).decode()
    except pydantic_core.PydanticSerializationError:
        return str(value)


class PythonBackend:
    """Runs :class:`PythonRegistry` tools: validate, inject the context, call, convert the result.

    Sync functions run in a worker thread (``asyncio.to_thread``), async ones on the loop. A call
    that exceeds ``timeout`` seconds becomes an error result; a sync function's thread cannot be
    interrupted and finishes in the background, its result discarded.
    """

    def __init__(self, registry: PythonRegistry, timeout: float = 30.0) -> None:
        if timeout <= 0:
            raise ConfigError(f"PythonBackend.timeout must be > 0, got {timeout!r}")
        self.registry = registry
        self.timeout = timeout

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run one call; every failure is an error result naming the tool."""
        tool = self.registry.get(schema.name)
        if tool is None:
            return ToolResult(
                call.id, call.name, f"registry {self.registry.name!r} has no tool {schema.name!r}", True
            )
        try:
            validated = tool.arguments.model_validate(call.arguments)
        except pydantic.ValidationError as exc:
            return ToolResult(
                call.id, call.name, f"invalid arguments for {tool.name}: {format_validation_error(exc)}", True
            )
        kwargs = dict(validated)
        if tool.context_param is not None:
            kwargs[tool.context_param] = context
        deadline = asyncio.timeout(self.timeout)  # like wait_for, without a task per call
        try:
            async with deadline:
                if tool.is_async:
                    value = await tool.func(**kwargs)
                else:
                    value = await asyncio.to_thread(tool.func, **kwargs)
        except Exception as exc:
            if deadline.expired():
                return ToolResult(call.id, call.name, f"{tool.name} timed out after {self.timeout:g}s", True)
            return ToolResult(call.id, call.name, f"{type(exc).__name__}: {exc}", True)
        return ToolResult(call.id, call.name, to_output(value))
