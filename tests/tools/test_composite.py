"""CompositeBackend routing, providers, timeout; RegistryBackendToolSource; resolve_all; the
package's export list."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import structured_agents.tools as tools_pkg
from structured_agents.context import RunContext
from structured_agents.errors import ConfigError, ToolError, ToolNotFoundError
from structured_agents.tools import (
    CompositeBackend,
    ContextProviderRunner,
    PythonBackend,
    PythonRegistry,
    RegistryBackendToolSource,
    ToolBackend,
    ToolSource,
    resolve_all,
)
from structured_agents.types import ToolCall, ToolResult, ToolSchema

pytestmark = pytest.mark.anyio

CTX = RunContext(run_id="run-7")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class TemplateRunner:
    """A real provider runner: the script file is a ``str.format`` template of the inputs."""

    def __init__(self) -> None:
        self.ran: list[Path] = []

    async def run_script(self, path: Path, inputs: dict[str, Any], context: RunContext) -> ToolResult:
        self.ran.append(path)
        try:
            text = path.read_text().format(run_id=context.run_id, **inputs)
        except (OSError, KeyError) as exc:
            return ToolResult("provider", path.stem, f"{type(exc).__name__}: {exc}", True)
        return ToolResult("provider", path.stem, text.strip())


class ShoutBackend:
    """A second backend kind: upper-cases the ``text`` argument; raises on ``explode``."""

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        if call.arguments.get("explode"):
            raise RuntimeError("shout backend broke its contract")
        await asyncio.sleep(float(call.arguments.get("delay", 0)))
        return ToolResult(call.id, call.name, str(call.arguments.get("text", "")).upper())


class SchemaRegistry:
    """A registry of given schemas (by default ``backend="shout"`` tools of the given names)."""

    def __init__(self, *names: str, name: str = "shout", schemas: Any = ()) -> None:
        self.name = name
        self._schemas = {n: ToolSchema(n, f"shout {n}", backend="shout") for n in names}
        self._schemas.update((schema.name, schema) for schema in schemas)

    def list_tools(self) -> list[str]:
        return list(self._schemas)

    def resolve(self, tool_name: str) -> ToolSchema | None:
        return self._schemas.get(tool_name)


def python_registry() -> PythonRegistry:
    registry = PythonRegistry()

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.tool
    def say(text: str) -> str:
        """Say something."""
        return text

    return registry


def test_resolve_all_lists_every_missing_name_and_refuses_two_tools_of_one_name() -> None:
    registry = SchemaRegistry("yell", "say")
    assert [s.name for s in resolve_all(registry, ["say", "yell"])] == ["say", "yell"]
    with pytest.raises(ToolNotFoundError) as info:
        resolve_all(registry, ["say", "grep", "sed"])
    assert str(info.value) == "registry 'shout' has no tool 'grep', 'sed' (available: yell, say)"
    with pytest.raises(ToolError, match=r"registry 'shout' would offer more than one tool named \['say'\]"):
        resolve_all(registry, ["say", "say"])


def test_bad_composite_configuration() -> None:
    with pytest.raises(ConfigError, match="already has a backend named 'python'"):
        CompositeBackend({"python": ShoutBackend()}).register("python", ShoutBackend())


def make_source(tmp_path: Path, timeout: float = 5.0) -> tuple[RegistryBackendToolSource, TemplateRunner]:
    (tmp_path / "style.pym").write_text("style guide for run {run_id}\n")
    (tmp_path / "about.pym").write_text("about to say {text!r}")
    python = python_registry()
    shout = SchemaRegistry("yell", "styled", "broken", "ghost")
    shout._schemas["styled"] = ToolSchema(
        "styled",
        "with providers",
        backend="shout",
        context_providers=(tmp_path / "style.pym", tmp_path / "about.pym", tmp_path / "missing.pym"),
    )
    shout._schemas["ghost"] = ToolSchema("ghost", "no backend", backend="grail")
    runner = TemplateRunner()
    backend = CompositeBackend({"python": PythonBackend(python)}, providers=runner, timeout=timeout)
    backend.register("shout", ShoutBackend())
    both = SchemaRegistry(
        name="both", schemas=[*(python.resolve(n) for n in python.list_tools()), *shout._schemas.values()]
    )
    return RegistryBackendToolSource(both, backend), runner


async def test_routing_by_backend(tmp_path: Path) -> None:
    source, _ = make_source(tmp_path)
    assert isinstance(source, ToolSource) and isinstance(source.backend, ToolBackend)
    assert [t.name for t in source.tools()] == ["add", "say", "yell", "styled", "broken", "ghost"]
    assert (await source.execute(ToolCall("add", {"a": 2, "b": 3}), CTX)).output == "5"
    assert (await source.execute(ToolCall("yell", {"text": "hi"}), CTX)).output == "HI"


async def test_unknown_backend_and_unknown_tool_are_error_results(tmp_path: Path) -> None:
    source, _ = make_source(tmp_path)
    ghost = await source.execute(ToolCall("ghost"), CTX)
    assert ghost.is_error
    assert ghost.output == "no backend 'grail' for tool ghost; registered backends: python, shout"
    unknown = await source.execute(ToolCall("grep"), CTX)
    assert unknown.is_error
    assert unknown.output == "unknown tool grep; available: add, say, yell, styled, broken, ghost"


async def test_context_providers_prepend_and_failures_become_notes(tmp_path: Path) -> None:
    source, runner = make_source(tmp_path)
    result = await source.execute(ToolCall("styled", {"text": "ok"}), CTX)
    assert runner.ran == [tmp_path / "style.pym", tmp_path / "about.pym", tmp_path / "missing.pym"]
    head, _, tool_output = result.output.rpartition("\n\n")
    lines = head.splitlines()
    assert lines[:2] == ["style guide for run run-7", "about to say 'ok'"]
    assert lines[2].startswith(f"[context provider {tmp_path / 'missing.pym'} failed: FileNotFoundError")
    assert tool_output == "OK" and not result.is_error  # the tool ran despite the failed provider


async def test_providers_without_a_runner_leave_a_note(tmp_path: Path) -> None:
    schema = ToolSchema("styled", "x", backend="shout", context_providers=(tmp_path / "style.pym",))
    backend = CompositeBackend({"shout": ShoutBackend()})
    result = await backend.execute(ToolCall("styled", {"text": "a"}), schema, CTX)
    assert result.output == (
        f"[context provider {tmp_path / 'style.pym'}: not run, no context provider runner configured]\n\nA"
    )
    assert isinstance(TemplateRunner(), ContextProviderRunner)


async def test_overall_timeout_and_raising_backend(tmp_path: Path) -> None:
    source, _ = make_source(tmp_path, timeout=0.05)
    slow = await source.execute(ToolCall("yell", {"text": "x", "delay": 5}), CTX)
    assert slow.is_error and slow.output == "yell timed out after 0.05s"
    broken = await source.execute(ToolCall("broken", {"explode": True}), CTX)
    assert (
        broken.is_error and broken.output == "broken failed: RuntimeError: shout backend broke its contract"
    )


async def test_source_with_named_tools(tmp_path: Path) -> None:
    registry = python_registry()
    source = RegistryBackendToolSource(registry, PythonBackend(registry), ["say"])
    assert [t.name for t in source.tools()] == ["say"]
    assert (
        await source.execute(ToolCall("add", {"a": 1, "b": 1}), CTX)
    ).output == "unknown tool add; available: say"
    with pytest.raises(ToolNotFoundError, match="'grep'"):
        RegistryBackendToolSource(registry, PythonBackend(registry), ["say", "grep"])


def test_export_list_is_sorted_and_importable() -> None:
    assert tools_pkg.__all__ == sorted(tools_pkg.__all__)
    for name in tools_pkg.__all__:
        assert getattr(tools_pkg, name) is not None
