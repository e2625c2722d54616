"""Tools of the distributed tests' bundle (imported by the workers as ``dist_tools``)."""

from __future__ import annotations

import time

from structured_agents.tools.python import PythonRegistry

registry = PythonRegistry("python")


@registry.tool
def lookup(key: str) -> str:
    """Look up the value of a key.

    Args:
        key: the key to look up.
    """
    return f"value-of-{key}"


@registry.tool
def slow_lookup(key: str, seconds: float) -> str:
    """Look up the value of a key, slowly.

    Args:
        key: the key to look up.
        seconds: how long the lookup takes.
    """
    time.sleep(seconds)
    return f"slow-value-of-{key}"


@registry.tool
def submit_result(summary: str) -> str:
    """Submit the run's result.

    Args:
        summary: what the run found.
    """
    return summary
