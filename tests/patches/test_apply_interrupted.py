"""``sa apply`` killed (SIGKILL) at every point of a file's apply, then run again.

Each case runs the real command line in a subprocess (``pausing_apply.py`` stops it for good at
one point), kills it there, runs ``sa apply`` again (in process) and compares the codebase and the stored
statuses with an apply of the same results that was never interrupted: every patch ends
applied exactly once (a second application would change the text), no file is corrupted, no
temporary file is left, nothing that was applied is called stale.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from structured_agents.cli.main import app
from structured_agents.jobs import JobSpec
from structured_agents.patches import Patch, apply_patches, docstring_change
from structured_agents.store import SqlStore
from structured_agents.tasks.docstring import discover_docstring_jobs

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"
PAUSING = Path(__file__).resolve().with_name("pausing_apply.py")
PAUSE_DEADLINE_S = 120.0
"""How long the subprocess may take to reach its pause point (startup included) on a loaded machine."""


def _jobs_and_patches(project: Path) -> tuple[list[JobSpec], list[Patch]]:
    """Docstring results for every target, plus one that conflicts in the first file (by path)."""
    jobs = discover_docstring_jobs(project)
    first = min(jobs, key=lambda job: job.path)
    rival = JobSpec("0" * 64, first.kind, first.path, first.qualname, first.source_hash, dict(first.inputs))
    jobs = [*jobs, rival]
    patches = []
    for index, job in enumerate(jobs):
        original = (project / job.path).read_text()
        text = f"Docs {index} of {job.qualname}."
        change = docstring_change(job.path, original, job.qualname, text, line=job.inputs["def_line"])
        patches.append(change.as_patch(job.job_id))
    return jobs, patches


def _store_batch(project: Path, db_url: str) -> tuple[str, list[Patch]]:
    jobs, patches = _jobs_and_patches(project)
    with SqlStore(db_url) as store:
        batch = store.create_batch("docstring", "1.0", str(project))
        store.add_jobs(batch.id, jobs)
        for patch in patches:
            store.save_result(
                patch.run_id,
                target_path=patch.target_path,
                original_hash=patch.original_hash,
                diff=patch.diff,
            )
    return batch.id, patches


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _statuses(db_url: str, batch_id: str) -> dict[str, str]:
    with SqlStore(db_url) as store:
        return {r.run_id: r.status for r in store.results(batch_id)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], dict[str, str]]:
    """The codebase and result statuses after an apply that was never interrupted."""
    project = Path(shutil.copytree(SAMPLE, tmp_path_factory.mktemp("reference") / "project"))
    _, patches = _jobs_and_patches(project)
    in_store_order = sorted(patches, key=lambda patch: (patch.target_path, patch.run_id))
    statuses = apply_patches(project, in_store_order).result_statuses()
    assert sorted(set(statuses.values())) == ["applied", "rejected"]  # one conflict, the rest applied
    return _tree(project), statuses


def _sa_apply(db_url: str, batch_id: str) -> Result:
    """``sa apply`` run again, in this process (nothing kills it)."""
    return CliRunner().invoke(app, ["apply", batch_id, "--yes", "--db", db_url])


def _kill_at(point: str, nth: int, marker: Path, db_url: str, batch_id: str) -> None:
    command = [sys.executable, str(PAUSING), str(marker), point, str(nth), "apply", batch_id, "--yes"]
    process = subprocess.Popen(
        [*command, "--db", db_url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + PAUSE_DEADLINE_S
        while not marker.exists():
            if process.poll() is not None:
                output = process.stdout.read() if process.stdout else ""
                pytest.fail(f"the apply ended (exit {process.returncode}) before {point} #{nth}:\n{output}")
            assert time.monotonic() < deadline, f"the apply did not reach {point} #{nth}"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=60) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


@pytest.mark.parametrize(
    ("point", "nth"),
    [
        ("mkstemp", 1),  # before anything is written
        ("before-replace", 1),  # a temporary file written, the file untouched
        ("after-replace", 1),  # the file replaced, its patches not recorded
        ("after-record", 1),  # the first file's conflict recorded, its applied patch not yet
        ("mkstemp", 3),  # between files: two written and recorded
    ],
)
def test_an_apply_killed_anywhere_is_reconciled_by_the_next(
    tmp_path: Path, reference: tuple[dict[str, bytes], dict[str, str]], point: str, nth: int
) -> None:
    expected_tree, expected_statuses = reference
    project = Path(shutil.copytree(SAMPLE, tmp_path / "project"))
    db_url = f"sqlite:///{tmp_path / 'sa.db'}"
    batch_id, _ = _store_batch(project, db_url)

    _kill_at(point, nth, tmp_path / "paused", db_url, batch_id)

    killed_tree = _tree(project)
    assert set(killed_tree) - set(expected_tree) <= {
        name for name in killed_tree if ".sa-apply-" in name
    }  # at most a temporary file more
    for name, data in killed_tree.items():  # every file is either untouched or fully applied
        if ".sa-apply-" not in name:
            assert data in ((SAMPLE / name).read_bytes(), expected_tree[name]), name
    left = [run_id for run_id, status in _statuses(db_url, batch_id).items() if status == "proposed"]
    resumed = _sa_apply(db_url, batch_id)
    refused = any(expected_statuses[run_id] != "applied" for run_id in left)
    assert resumed.exit_code == (1 if refused else 0), resumed.output
    assert _tree(project) == expected_tree
    statuses = _statuses(db_url, batch_id)
    assert statuses == expected_statuses
    assert "stale" not in statuses.values()
    again = _sa_apply(db_url, batch_id)
    assert again.exit_code == 0 and "no proposed change" in again.output
    assert _tree(project) == expected_tree
