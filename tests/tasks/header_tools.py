"""The tool of the test task's bundle (``tests/tasks/header_bundle``)."""

from __future__ import annotations

from structured_agents.tools.python import PythonRegistry

registry = PythonRegistry("python")


@registry.tool
def submit_result(header: str) -> str:
    """Submit the file's header comment.

    Args:
        header: one line saying what the file is for.
    """
    return header
