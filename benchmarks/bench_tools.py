"""Per-call overhead of the tool layer for a trivial Python tool.

Compares, in one process and one event loop:

* ``direct``: calling the function itself (the baseline),
* ``backend sync``: :class:`PythonBackend` on a sync function (validation + worker thread),
* ``backend async``: :class:`PythonBackend` on the same function written ``async def``,
* ``source sync`` / ``source async``: the same through :class:`RegistryBackendToolSource`,
* ``composite``: the sync tool through a :class:`CompositeBackend` (routing + overall timeout).

Run: ``python benchmarks/bench_tools.py [--calls N]``; prints ms/call and the ratio to ``direct``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

from structured_agents.context import RunContext
from structured_agents.tools import (
    CompositeBackend,
    PythonBackend,
    PythonRegistry,
    RegistryBackendToolSource,
    resolve_all,
)
from structured_agents.types import ToolCall


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def add_async(a: int, b: int) -> int:
    """Add two integers, on the loop."""
    return a + b


async def measure(calls: int, step: Callable[[int], Awaitable[object]]) -> float:
    """Seconds per call of ``step`` after a warm-up of a tenth of the calls."""
    for i in range(max(calls // 10, 1)):
        await step(i)
    start = time.perf_counter()
    for i in range(calls):
        await step(i)
    return (time.perf_counter() - start) / calls


async def main(calls: int) -> None:
    registry = PythonRegistry()
    registry.register(add)
    registry.register(add_async)
    backend = PythonBackend(registry)
    source = RegistryBackendToolSource(registry, backend)
    composite = CompositeBackend({"python": backend})
    context = RunContext(run_id="bench")
    sync_schema, async_schema = resolve_all(registry, ["add", "add_async"])

    async def direct(i: int) -> object:
        return add(a=i, b=1)

    async def backend_sync(i: int) -> object:
        return await backend.execute(ToolCall("add", {"a": i, "b": 1}), sync_schema, context)

    async def backend_async(i: int) -> object:
        return await backend.execute(ToolCall("add_async", {"a": i, "b": 1}), async_schema, context)

    async def source_sync(i: int) -> object:
        return await source.execute(ToolCall("add", {"a": i, "b": 1}), context)

    async def source_async(i: int) -> object:
        return await source.execute(ToolCall("add_async", {"a": i, "b": 1}), context)

    async def composite_sync(i: int) -> object:
        return await composite.execute(ToolCall("add", {"a": i, "b": 1}), sync_schema, context)

    cases: list[tuple[str, Callable[[int], Awaitable[object]]]] = [
        ("direct", direct),
        ("backend sync", backend_sync),
        ("backend async", backend_async),
        ("source sync", source_sync),
        ("source async", source_async),
        ("composite sync", composite_sync),
    ]
    baseline = 0.0
    print(f"{'case':<16}{'ms/call':>12}{'x direct':>12}   ({calls} calls each)")
    for name, step in cases:
        seconds = await measure(calls, step)
        baseline = baseline or seconds
        print(f"{name:<16}{seconds * 1000:>12.4f}{seconds / baseline:>12.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="timed calls per case")
    asyncio.run(main(parser.parse_args().calls))
