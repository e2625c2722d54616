"""Task registry: tasks by name, built-ins loaded lazily, no if/else on names."""

from __future__ import annotations

from collections.abc import Callable

from structured_agents.named import Named
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.protocol import Task

__all__ = ["available_tasks", "get_task", "register_task"]

TaskFactory = Callable[[], Task]

_TASKS: Named[Task] = Named(
    "task",
    {
        "docstring": "structured_agents.tasks.docstring:DocstringTask",
        "lint": "structured_agents.tasks.lint:LintTask",
    },
    lambda name, known: TaskError(f"unknown task {name!r}; known tasks: {', '.join(known)}"),
)


def register_task(name: str, factory: TaskFactory, *, replace: bool = False) -> None:
    """Register a task factory (a class or any zero-argument callable) under ``name``."""
    _TASKS.register(name, factory, replace=replace)


def available_tasks() -> list[str]:
    """Names of every task that ``get_task`` can build."""
    return _TASKS.names()


def get_task(name: str) -> Task:
    """A new instance of the task registered as ``name`` (case-insensitive); ``TaskError``
    naming the known tasks otherwise."""
    return _TASKS.get(name)
