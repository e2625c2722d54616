"""The ``--check`` and ``--check-timeout`` options of ``sa run`` and ``sa enqueue``.

They become batch options of the bundle's task (the ``lint`` task keeps a proposal only when
the command still passes on a copy of the codebase with it applied); a bundle whose task takes
no check refuses them (:func:`~structured_agents.tasks.check_task_options`).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from structured_agents.tasks.check import DEFAULT_TIMEOUT_S, CheckCommand

__all__ = ["CheckOption", "CheckTimeoutOption", "task_options"]

CheckOption = Annotated[
    str | None,
    typer.Option(
        "--check",
        help="Command that must still pass with a proposal applied (lint: e.g. 'python -m pytest -q'); "
        "run with sh -c on a temporary copy of the codebase.",
    ),
]
CheckTimeoutOption = Annotated[
    float, typer.Option("--check-timeout", min=1, help="Seconds one run of --check may take.")
]


def task_options(check: str | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """The batch options ``--check`` (and its timeout) give; none without ``--check``."""
    return CheckCommand(check, timeout_s).to_options() if check is not None else {}
