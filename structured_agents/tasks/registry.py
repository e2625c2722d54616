"""Task registry: tasks by name, built-ins loaded lazily, no if/else on names."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.protocol import Task

__all__ = ["available_tasks", "get_task", "register_task"]

TaskFactory = Callable[[], Task]

# Built-ins as "module:attribute", imported on first use.
_BUILTINS: dict[str, str] = {
    "docstring": "structured_agents.tasks.docstring:DocstringTask",
    "lint": "structured_agents.tasks.lint:LintTask",
}
_registered: dict[str, TaskFactory] = {}
_lock = threading.Lock()


def register_task(name: str, factory: TaskFactory, *, replace: bool = False) -> None:
    """Register a task factory (a class or any zero-argument callable) under ``name``."""
    key = name.strip().lower()
    if not key:
        raise ValueError("task name must not be empty")
    with _lock:
        if not replace and (key in _registered or key in _BUILTINS):
            raise ValueError(f"a task named {key!r} is already registered (pass replace=True)")
        _registered[key] = factory


def available_tasks() -> list[str]:
    """Names of every task that ``get_task`` can build."""
    return sorted(set(_BUILTINS) | set(_registered))


def get_task(name: str) -> Task:
    """A new instance of the task registered as ``name`` (case-insensitive); ``TaskError``
    naming the known tasks otherwise."""
    key = name.strip().lower()
    factory = _registered.get(key)
    if factory is None and key in _BUILTINS:
        module_name, _, attr = _BUILTINS[key].partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
    if factory is None:
        raise TaskError(f"unknown task {name!r}; known tasks: {', '.join(available_tasks())}")
    return factory()
