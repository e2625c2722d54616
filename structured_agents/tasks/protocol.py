"""The task seam: what a bundle does over a codebase, as a plugin.

A task finds its jobs in a codebase, says what inputs its jobs carry (so a bundle's templates
and tool bindings can be checked before any job runs), may steer its runs' model turns
(:class:`Guidance`: each job's view of the tools, which candidate a turn keeps, what a run
must never write), and turns a
finished run into an :class:`Outcome`: a proposed change (a unified diff, never applied here) with a one-line
summary, or the reason the job failed. ``docstring`` and ``lint`` are one module each
(:mod:`.docstring`, :mod:`.lint`); a new task is one module plus a bundle, registered with
:func:`~structured_agents.tasks.registry.register_task`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from structured_agents.jobs.spec import JobSpec
from structured_agents.kernel.config import BadWords, Chooser, Reviewer, ToolView
from structured_agents.kernel.result import RunResult
from structured_agents.patches import ProposedChange
from structured_agents.status import ResultStatus

__all__ = ["Guidance", "Outcome", "Task"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a finished run produced."""

    succeeded: bool
    """Whether the job succeeded."""
    change: ProposedChange | None = None
    """The proposed change, when there is one to store."""
    summary: str = ""
    """One line describing the change (``sa diff``, the results' ``summary`` column), or the
    run's final output when it changes no file."""
    error: str | None = None
    """Why the job failed."""
    result_status: ResultStatus = "proposed"
    """How the change is stored: ``proposed``, or ``rejected`` when kept only to be looked at."""
    flags: tuple[str, ...] = ()
    """Why a reviewer must look at the change before it is applied (a docstring whose claims the
    code contradicts): it is stored flagged, and ``sa apply`` leaves it unless asked."""
    unique_summary: bool = False
    """Whether another target of the batch proposing the same summary for other code is a
    fault of both (a docstring's summary), flagged when the result is stored."""


@dataclass(frozen=True, slots=True)
class Guidance:
    """How a task steers its runs' model turns (each optional)."""

    tool_view: ToolView | None = None
    """How a job's run sees the tools (``KernelConfig.tool_view``)."""
    choose: Chooser | None = None
    """Which of a turn's candidates a run keeps (``KernelConfig.choose``)."""
    bad_words: BadWords | None = None
    """What a job's run must never write (``KernelConfig.job_bad_words``)."""
    review: Reviewer | None = None
    """What a job's model turns ask the engine to score their candidates by (``KernelConfig.review``)."""


class Task(Protocol):
    """One kind of job over a codebase."""

    name: str
    """The task's name: a bundle's ``task:`` and its jobs' ``kind``."""

    option_names: frozenset[str]
    """The batch options :meth:`discover` and :meth:`outcome` read (``lint``: ``check``,
    ``check_timeout_s``); a batch given another is refused
    (:func:`~structured_agents.tasks.registry.check_task_options`)."""

    def discover(
        self, root: Path, *, overwrite: bool = False, options: Mapping[str, Any] | None = None
    ) -> list[JobSpec]:
        """The jobs of this task in the codebase at ``root`` for a batch with ``options``
        (``overwrite``: redo done work too)."""
        ...

    def sample_inputs(self) -> dict[str, Any]:
        """Inputs shaped like a real job's: what a job binds, for checking templates at load."""
        ...

    def guidance(self, termination: str, fixed_texts: Sequence[str], shown_texts: Sequence[str]) -> Guidance:
        """How the task steers a bundle's model turns; ``termination`` is the bundle's
        termination tool, ``fixed_texts`` the answers every prompt of it shows (worked
        examples' calls, tool descriptions), which a grounded answer should not be copied
        from, and ``shown_texts`` every text its prompts show whatever the job (those, the
        examples' tasks, the system prompt and user template), whose words a grounded answer
        should not borrow (:mod:`structured_agents.borrowed`)."""
        ...

    def outcome(self, job: JobSpec, result: RunResult, root: Path, options: Mapping[str, Any]) -> Outcome:
        """The change a finished run proposes, given its batch's ``options``; raises
        ``TaskError`` (or ``PatchError``) to fail the job with that message. Never writes the
        user's files."""
        ...
