"""PythonRegistry schemas from signatures and docstrings; PythonBackend runs, validates, times out."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Literal

import pytest

from structured_agents.context import RunContext
from structured_agents.errors import ConfigError, ToolNotFoundError
from structured_agents.tools.python import PythonBackend, PythonRegistry, build_tool
from structured_agents.tools.resolve import resolve_all
from structured_agents.types import ToolCall, ToolResult

pytestmark = pytest.mark.anyio

CTX = RunContext(run_id="run-1", turn=2, inputs={"target": "pkg/mod.py"})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def search(
    query: str, limit: int = 10, mode: Literal["exact", "fuzzy"] = "exact", *, context: RunContext
) -> str:
    """Search the code base for a string.

    Matches are returned one per line.

    Args:
        query: Text to look for; a long description
            that continues on a second line.
        limit (int): Most matches to return.

    Returns:
        The matches.
    """
    return f"{context.run_id}:{query}:{limit}:{mode}"


@dataclass
class Hit:
    path: str
    line: int


def make_registry() -> PythonRegistry:
    registry = PythonRegistry()
    registry.register(search)

    @registry.tool
    async def hits(path: str, count: int = 2) -> list[Hit]:
        """Fake hits in a file."""
        await asyncio.sleep(0)
        return [Hit(path, i) for i in range(count)]

    @registry.tool(name="crash", description="Always raises.")
    def boom(reason: str) -> None:
        raise ValueError(f"boom: {reason}")

    @registry.tool
    async def nap(seconds: float) -> str:
        """Sleep on the loop."""
        await asyncio.sleep(seconds)
        return "rested"

    @registry.tool
    def block(seconds: float) -> str:
        """Sleep in the worker thread."""
        time.sleep(seconds)
        return threading.current_thread().name

    return registry


async def run(registry: PythonRegistry, name: str, timeout: float = 5.0, **arguments: object) -> ToolResult:
    schema = registry.resolve(name)
    assert schema is not None
    return await PythonBackend(registry, timeout=timeout).execute(
        ToolCall(name, dict(arguments)), schema, CTX
    )


def test_schema_from_signature_and_docstring() -> None:
    schema = make_registry().resolve("search")
    assert schema is not None and schema.backend == "python"
    assert schema.description == "Search the code base for a string.\n\nMatches are returned one per line."
    assert schema.required == ("query",)
    assert schema.parameters["additionalProperties"] is False
    assert schema.properties == {
        "query": {
            "type": "string",
            "description": "Text to look for; a long description that continues on a second line.",
        },
        "limit": {"type": "integer", "default": 10, "description": "Most matches to return."},
        "mode": {"type": "string", "enum": ["exact", "fuzzy"], "default": "exact"},
    }
    assert "context" not in schema.properties  # injected, not shown to the model


def test_decorator_forms_names_and_descriptions() -> None:
    registry = make_registry()
    assert registry.list_tools() == ["search", "hits", "crash", "nap", "block"]
    crash = registry.resolve("crash")
    assert crash is not None and crash.description == "Always raises."
    assert registry.resolve("boom") is None
    no_doc = build_tool(lambda x: x, name="ident")
    assert no_doc.schema.description == "Python function ident"
    assert no_doc.schema.properties == {"x": {}}  # unannotated: any JSON value


def test_registration_errors() -> None:
    registry = make_registry()
    with pytest.raises(ConfigError, match="already has a tool named 'search'"):
        registry.register(search)

    def star(*args: int) -> None: ...

    with pytest.raises(ConfigError, match="parameter 'args' must be a keyword parameter"):
        registry.register(star)


def test_resolve_all_names_every_missing_tool_and_the_registry() -> None:
    registry = make_registry()
    assert [s.name for s in resolve_all(registry, ["nap", "search"])] == ["nap", "search"]
    with pytest.raises(ToolNotFoundError) as info:
        resolve_all(registry, ["search", "grep", "sed"])
    assert "registry 'python' has no tool 'grep', 'sed'" in str(info.value)


async def test_sync_tool_gets_context_and_coerced_arguments() -> None:
    result = await run(make_registry(), "search", query="todo", limit="3")
    assert result == ToolResult(result.call_id, "search", "run-1:todo:3:exact", False)


async def test_async_tool_result_is_json() -> None:
    result = await run(make_registry(), "hits", path="a.py")
    assert not result.is_error
    assert result.output == '[{"path":"a.py","line":0},{"path":"a.py","line":1}]'


async def test_validation_error_is_shown_to_the_model() -> None:
    result = await run(make_registry(), "search", limit="many", mode="regex", extra=1)
    assert result.is_error
    assert result.output.startswith("invalid arguments for search: query: Field required; limit:")
    assert "mode: Input should be 'exact' or 'fuzzy' (got 'regex')" in result.output
    assert "extra: Extra inputs are not permitted" in result.output


async def test_exception_becomes_error_result() -> None:
    result = await run(make_registry(), "crash", reason="disk full")
    assert result.is_error and result.output == "ValueError: boom: disk full"
    registry = PythonRegistry()

    @registry.tool
    async def locked() -> None:
        """A tool's own TimeoutError is an exception, not the backend's timeout."""
        raise TimeoutError("lock wait")

    assert (await run(registry, "locked")).output == "TimeoutError: lock wait"


async def test_timeouts_async_and_sync() -> None:
    registry = make_registry()
    slow = await run(registry, "nap", timeout=0.05, seconds=5)
    assert slow.is_error and slow.output == "nap timed out after 0.05s"
    blocked = await run(registry, "block", timeout=0.05, seconds=0.3)
    assert blocked.is_error and "timed out" in blocked.output
    fine = await run(registry, "block", seconds=0)
    assert fine.output != threading.current_thread().name  # ran in a worker thread


async def test_schema_from_another_registry_is_an_error_result() -> None:
    other = PythonRegistry("other")
    schema = other.register(lambda: 1, name="one").schema
    result = await PythonBackend(make_registry()).execute(ToolCall("one"), schema, CTX)
    assert result.is_error and result.output == "registry 'python' has no tool 'one'"


def test_backend_rejects_bad_timeout() -> None:
    with pytest.raises(ConfigError, match="timeout must be > 0"):
        PythonBackend(PythonRegistry(), timeout=0)
