"""Task registry: tasks by name, built-ins loaded lazily, no if/else on names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from structured_agents.named import Named
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.protocol import Task

__all__ = ["available_tasks", "check_task_options", "get_task", "register_task"]

TaskFactory = Callable[[], Task]

_TASKS: Named[[], Task] = Named(
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


def check_task_options(task: str | None, options: Mapping[str, Any]) -> None:
    """``TaskError`` naming each of ``options`` the task ``task`` does not read (any, for a
    bundle without a task: ``task`` None)."""
    if not options:
        return
    names = get_task(task).option_names if task is not None else frozenset()
    unknown = sorted(set(options) - names)
    if unknown:
        who = f"the {task} task" if task is not None else "a bundle without a task"
        takes = ", ".join(sorted(names)) or "none"
        raise TaskError(f"{who} takes no option {', '.join(unknown)} (it takes: {takes})")
