"""Queue names, task names and routing: the one place the workers' wire names are spelled."""

from __future__ import annotations

__all__ = [
    "CONTROL_QUEUE",
    "DELAYED",
    "DISPATCH",
    "FINISH_RUN",
    "LLM_PREFIX",
    "LLM_QUEUE",
    "LLM_TURN",
    "QUEUES",
    "ROUTES",
    "START_RUN",
    "START_RUNS",
    "SWEEP",
    "TOOLS_QUEUE",
    "TOOL_CALL",
]

LLM_QUEUE = "llm"
"""Model turns; consumed by the GPU worker (one process, solo pool, one engine)."""
TOOLS_QUEUE = "tools"
"""Tool calls; consumed by CPU workers (prefork)."""
CONTROL_QUEUE = "control"
"""Run lifecycle and bookkeeping; consumed by CPU workers."""
QUEUES = (LLM_QUEUE, TOOLS_QUEUE, CONTROL_QUEUE)

START_RUN = "sa.control.start_run"
START_RUNS = "sa.control.start_runs"
FINISH_RUN = "sa.control.finish_run"
DISPATCH = "sa.control.dispatch"
SWEEP = "sa.control.sweep"
DELAYED = "sa.control.delayed"
LLM_TURN = "sa.llm.turn"
TOOL_CALL = "sa.tools.call"

LLM_PREFIX = "sa.llm."
"""The start of every task name routed to the ``llm`` queue."""

ROUTES = {
    f"{LLM_PREFIX}*": {"queue": LLM_QUEUE},
    "sa.tools.*": {"queue": TOOLS_QUEUE},
    "sa.control.*": {"queue": CONTROL_QUEUE},
}
"""Celery ``task_routes``: the queue of a task follows from its name's prefix."""
