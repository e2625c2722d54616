"""The shipped bundles with the real small model on CPU: one batched run each.

Slow (minutes on two cores), so marked ``model``. The docstring run checks what must hold for
any model output the grammar allows: every target gets a docstring patch that parses, applying
the patches changes nothing but docstrings, and running again does no work. The lint run is a
smoke test: the job ends, and a proposal is only ever kept when ruff finds less.
"""

from __future__ import annotations

import filecmp
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from runner_helpers import SAMPLE_PROJECT, run_embedded
from services import require_model_stack

from structured_agents.bundles import Bundle
from structured_agents.jobs import discover_docstring_jobs, find_docstring_targets
from structured_agents.patches import apply_patches
from structured_agents.runner.lint_fixes import ruff_codes
from structured_agents.runner.tasks import code_without_docstrings
from structured_agents.store import Store

if TYPE_CHECKING:
    from pathlib import Path

    from structured_agents.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def model() -> Iterator[TransformersEngine]:
    require_model_stack()
    from structured_agents.engines.transformers_engine import TransformersEngine

    yield TransformersEngine(device="cpu", max_batch_size=8)


def test_docstrings_for_the_whole_sample_project(
    model: TransformersEngine, docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    targets = discover_docstring_jobs(project)
    originals = {job.path: (project / job.path).read_text() for job in targets}

    summary = run_embedded(docstring_bundle, model, store, project, concurrency=8)

    failures = {run.qualname: run.error for run in store.list_runs(summary.batch_id, "failed")}
    assert failures == {}
    assert summary.succeeded == len(targets) and max(summary.batch_sizes) > 1
    assert not filecmp.dircmp(SAMPLE_PROJECT, project).diff_files
    results = store.results(summary.batch_id)
    assert len(results) == len(targets)

    again = run_embedded(docstring_bundle, model, store, project)
    assert (again.ran, again.skipped, again.batch_sizes) == (0, len(targets), ())

    report = apply_patches(project, results)

    assert len(report.run_ids("applied")) == len(targets)
    for path, original in originals.items():
        patched = (project / path).read_text()
        assert code_without_docstrings(patched) == code_without_docstrings(original)
        documented = {
            t.qualname: t.docstring for t in find_docstring_targets(patched, include_documented=True)
        }
        assert all(documented[job.qualname] for job in targets if job.path == path)


def test_lint_smoke(model: TransformersEngine, lint_bundle: Bundle, store: Store, project: Path) -> None:
    before = ruff_codes(project, "lint_me.py", (project / "lint_me.py").read_text())

    summary = run_embedded(lint_bundle, model, store, project)

    assert summary.ran == 1
    assert not filecmp.dircmp(SAMPLE_PROJECT, project).diff_files
    for result in store.results(summary.batch_id):
        if result.status == "proposed":
            apply_patches(project, [result])
            assert len(ruff_codes(project, "lint_me.py", (project / "lint_me.py").read_text())) < len(before)
