"""Tasks: what a bundle does over a codebase (``docstring``, ``lint``), as plugins by name."""

from __future__ import annotations

from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.protocol import Outcome, Task
from structured_agents.tasks.registry import available_tasks, check_task_options, get_task, register_task

__all__ = [
    "Outcome",
    "Task",
    "TaskError",
    "available_tasks",
    "check_task_options",
    "get_task",
    "register_task",
]
