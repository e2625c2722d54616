"""Tools of the distributed tests' bundle (imported by the workers as ``dist_tools``)."""

from __future__ import annotations

import os
import signal
import time

from structured_agents.context import RunContext
from structured_agents.tools.python import PythonRegistry

EXECUTIONS_LOG = "tool-executions.log"
"""File in the run's workspace where ``counted_lookup`` appends one line (the run id) per execution."""

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
def crashing_lookup(key: str, context: RunContext) -> str:
    """Look up the value of a key; for the crash keys it kills the process it runs in.

    Args:
        key: the key to look up.
    """
    if str(context.inputs.get("key", "")).startswith("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)  # a tool that crashes its worker (segfault, OOM kill)
    return f"value-of-{key}"


@registry.tool
def counted_lookup(key: str, seconds: float, context: RunContext) -> str:
    """Look up the value of a key slowly, noting each execution in the workspace.

    Args:
        key: the key to look up.
        seconds: how long the lookup takes.
    """
    if context.workspace is not None:  # the outside effect: one line per execution, before the work
        with (context.workspace / EXECUTIONS_LOG).open("a", encoding="utf-8") as log:
            log.write(f"{context.run_id}\n")
    time.sleep(seconds)
    return f"counted-value-of-{key}"


@registry.tool
def submit_result(summary: str) -> str:
    """Submit the run's result.

    Args:
        summary: what the run found.
    """
    return summary
