"""Lint jobs: one job per Python file with ruff findings, carrying the findings.

Ruff runs as ``python -m ruff check --output-format json`` (the ruff of the running
interpreter) in the codebase root, on the files :func:`iter_source_files` yields, so the file
set follows ``.gitignore`` like every other task. The codebase's own ruff configuration applies
(rule selection, ``noqa``), and with ``--force-exclude`` so do its ``exclude`` settings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from structured_agents.jobs.errors import DiscoveryError
from structured_agents.jobs.ids import job_id
from structured_agents.jobs.source import read_source
from structured_agents.jobs.spec import JobSpec
from structured_agents.jobs.walk import iter_source_files

__all__ = ["LINT_KIND", "MODULE_QUALNAME", "discover_lint_jobs", "ruff_findings"]

LINT_KIND = "lint"
MODULE_QUALNAME = "<module>"
"""The qualified name of whole-file jobs."""
FILES_PER_RUN = 200
"""Paths passed to one ruff process (keeps the command line short)."""


def _finding(raw: dict[str, Any]) -> dict[str, Any]:
    location, end = raw.get("location") or {}, raw.get("end_location") or {}
    return {
        "code": raw.get("code") or "syntax-error",
        "message": str(raw.get("message", "")),
        "line": int(location.get("row", 0)),
        "column": int(location.get("column", 0)),
        "end_line": int(end.get("row", 0)),
        "end_column": int(end.get("column", 0)),
        "fixable": raw.get("fix") is not None,
    }


def ruff_findings(root: Path, files: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Findings of ruff on ``files`` (relative to ``root``), by file, each sorted by position."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    resolved_root = root.resolve()
    for start in range(0, len(files), FILES_PER_RUN):
        chunk = files[start : start + FILES_PER_RUN]
        command = [sys.executable, "-m", "ruff", "check", "--output-format", "json", "--exit-zero"]
        command += ["--no-cache", "--force-exclude", "--", *chunk]
        try:
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise DiscoveryError(f"could not run ruff: {exc}") from exc
        if done.returncode != 0:
            raise DiscoveryError(f"ruff failed in {root} (exit {done.returncode}): {done.stderr.strip()}")
        try:
            raw_findings = json.loads(done.stdout or "[]")
        except json.JSONDecodeError as exc:
            raise DiscoveryError(f"ruff printed no JSON in {root}: {done.stdout[:200]!r}") from exc
        for raw in raw_findings:
            path = Path(raw["filename"]).resolve().relative_to(resolved_root).as_posix()
            by_file.setdefault(path, []).append(_finding(raw))
    for findings in by_file.values():
        findings.sort(key=lambda f: (f["line"], f["column"], f["code"]))
    return by_file


def discover_lint_jobs(root: Path) -> list[JobSpec]:
    """One job per file with findings; the job's inputs hold the file's source and findings."""
    files = [path.as_posix() for path in iter_source_files(root)]
    jobs = []
    for path, findings in sorted(ruff_findings(root, files).items()):
        source = read_source(root / path)
        if source is None:
            continue
        jobs.append(
            JobSpec(
                job_id=job_id(LINT_KIND, path, MODULE_QUALNAME, source.text),
                kind=LINT_KIND,
                path=path,
                qualname=MODULE_QUALNAME,
                source_hash=source.hash,
                inputs={"path": path, "source": source.text, "findings": findings},
            )
        )
    return jobs
