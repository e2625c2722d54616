"""Jobs as a client gives them (a JSON Lines file, ``POST /batches``), checked field by field.

One bad job refuses them all with a :class:`~structured_agents.jobs.JobInputError` naming each
bad job (the first :data:`MAX_REPORTED`, then a count). Whether their inputs fit a bundle's
templates is the batch's check (:func:`structured_agents.lifecycle.check_inputs`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from structured_agents.jobs.errors import JobInputError
from structured_agents.jobs.ids import job_id
from structured_agents.jobs.spec import JobSpec

__all__ = ["MAX_REPORTED", "JobInput", "parse_jobs", "read_jobs_file", "refused"]

MAX_REPORTED = 20
"""Problems listed in a :class:`JobInputError` before the rest are only counted."""


class JobInput(BaseModel):
    """One job as a client submits it (JSON Lines file, ``POST /batches``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(min_length=1, max_length=64)
    """The task (``docstring``, ``lint`` or a bundle's own kind)."""
    path: str = Field(min_length=1)
    """Target file, relative to the batch's root."""
    qualname: str = "<module>"
    """Qualified name of the target."""
    inputs: dict[str, Any] = {}
    """Variables of the bundle's user template."""
    source_hash: str = Field(default="", max_length=64)
    """SHA-256 of the target file as read (empty when the job reads no file)."""
    job_id: str | None = Field(default=None, min_length=1, max_length=64)
    """Stable id; by default derived from kind, path, qualname and inputs."""

    def to_spec(self) -> JobSpec:
        """The job as a :class:`JobSpec`."""
        segment = json.dumps(self.inputs, sort_keys=True, default=str)
        return JobSpec(
            job_id=self.job_id or job_id(self.kind, self.path, self.qualname, segment),
            kind=self.kind,
            path=self.path,
            qualname=self.qualname,
            source_hash=self.source_hash,
            inputs=dict(self.inputs),
        )


def refused(problems: list[str], total: int) -> JobInputError:
    """The error refusing ``total`` jobs for ``problems`` (one line each)."""
    shown = "\n".join(problems[:MAX_REPORTED])
    more = f"\n... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
    return JobInputError(f"{len(problems)} of {total} jobs are malformed:\n{shown}{more}")


def parse_jobs(items: Iterable[Mapping[str, Any]], where: str = "job") -> list[JobSpec]:
    """Validate raw job objects; :class:`JobInputError` names every malformed one."""
    jobs: list[JobSpec] = []
    problems: list[str] = []
    total = 0
    for number, item in enumerate(items, 1):
        total += 1
        try:
            jobs.append(JobInput.model_validate(item).to_spec())
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(part) for part in err["loc"]) or "(job)"
                problems.append(f"{where} {number}: {field}: {err['msg']}")
    if problems:
        raise refused(problems, total)
    return jobs


def read_jobs_file(path: Path) -> list[JobSpec]:
    """The jobs of a JSON Lines file (one object per line; blank lines skipped)."""
    items: list[Any] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise JobInputError(f"cannot read jobs file {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                raise JobInputError(f"{path}:{number}: not a JSON object: {exc}") from exc
    return parse_jobs(items, where=f"{path} job")
