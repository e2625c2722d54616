"""Per-call overhead of a trivial ``.pym`` tool run warm through :class:`GrailBackend`.

Compares, in one process and one event loop:

* ``direct``: calling the equivalent Python function (the baseline),
* ``runner``: :meth:`PymRunner.run` on the loaded script (input preparation + sandbox run),
* ``backend``: :meth:`GrailBackend.execute` (script lookup, limits, runner, ``ToolResult``),
* ``backend + external``: the same with one ``await read_file(...)`` host call.

Every sandbox run checks out a fresh Monty session from the warm pool. Run:
``python benchmarks/bench_pym.py [--calls N]``; prints ms/call and the ratio to ``direct``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from structured_agents.context import RunContext
from structured_agents.pym import PymCache, PymRunner, ScriptLoader
from structured_agents.tools.grail import GrailBackend, GrailRegistry
from structured_agents.tools.resolve import resolve_all
from structured_agents.types import ToolCall

TRIVIAL = 'from grail import Input\n\na: int = Input("a")\nb: int = Input("b", default=1)\n\na + b\n'
WITH_EXTERNAL = (
    'from grail import Input, external\n\npath: str = Input("path")\n\n'
    "@external\nasync def read_file(path: str) -> str: ...\n\nlen(await read_file(path))\n"
)


def add(a: int, b: int = 1) -> int:
    """The trivial tool as a plain function."""
    return a + b


async def measure(calls: int, step: Callable[[int], Awaitable[object]]) -> float:
    """Seconds per call of ``step`` after a warm-up of a tenth of the calls."""
    for i in range(max(calls // 10, 1)):
        await step(i)
    start = time.perf_counter()
    for i in range(calls):
        await step(i)
    return (time.perf_counter() - start) / calls


async def main(calls: int, folder: Path) -> None:
    (folder / "add.pym").write_text(TRIVIAL)
    (folder / "size.pym").write_text(WITH_EXTERNAL)
    (folder / "data.txt").write_text("hello\n")
    loader = ScriptLoader(PymCache(folder / "cache"))
    registry = GrailRegistry(folder, loader=loader)
    add_tool, size_tool = resolve_all(registry, ["add", "size"])
    context = RunContext(run_id="bench", workspace=folder)
    runner = PymRunner()
    backend = GrailBackend(runner=runner, loader=loader)
    script = loader.load(folder / "add.pym")

    async def direct(i: int) -> object:
        return add(i)

    async def run(i: int) -> object:
        return await runner.run(script, {"a": i})

    async def execute(i: int) -> object:
        result = await backend.execute(ToolCall("add", {"a": i}), add_tool, context)
        assert not result.is_error and result.output == str(i + 1), result.output
        return result

    async def execute_external(i: int) -> object:
        result = await backend.execute(ToolCall("size", {"path": "data.txt"}), size_tool, context)
        assert result.output == "6", result.output
        return result

    try:
        timings = {
            "direct": await measure(calls * 100, direct),
            "runner": await measure(calls, run),
            "backend": await measure(calls, execute),
            "backend + external": await measure(calls, execute_external),
        }
    finally:
        backend.close()
    base = timings["direct"]
    print(f"{'path':<20} {'ms/call':>10} {'x direct':>12}")
    for name, seconds in timings.items():
        print(f"{name:<20} {seconds * 1000:>10.4f} {seconds / base:>12.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per measured path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(args.calls, Path(tmp)))
