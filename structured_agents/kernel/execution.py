"""Run one turn's tool calls concurrently, results in call order, failures as error results."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence

from structured_agents.context import RunContext
from structured_agents.tools.protocol import ToolSource
from structured_agents.types import ToolCall, ToolResult

__all__ = ["TimedResult", "execute_calls"]

TimedResult = tuple[ToolResult, float]
"""A result and the wall time of its call in seconds."""


async def _execute_one(
    source: ToolSource, call: ToolCall, context: RunContext, limit: asyncio.Semaphore
) -> TimedResult:
    async with limit:
        started = time.perf_counter()
        try:
            result = await source.execute(call, context)
        except Exception as exc:  # sources should not raise; if one does, the model sees why
            result = ToolResult(
                call_id=call.id,
                name=call.name,
                output=f"{type(exc).__name__}: {exc}",
                is_error=True,
            )
        if result.call_id != call.id:  # the kernel pairs results with calls by id
            result = dataclasses.replace(result, call_id=call.id)
        return result, time.perf_counter() - started


async def execute_calls(
    source: ToolSource, calls: Sequence[ToolCall], context: RunContext, *, concurrency: int
) -> list[TimedResult]:
    """Execute ``calls`` with at most ``concurrency`` at a time; the i-th result answers the i-th call."""
    limit = asyncio.Semaphore(concurrency)
    return list(await asyncio.gather(*(_execute_one(source, call, context, limit) for call in calls)))
