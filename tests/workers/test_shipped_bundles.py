"""The shipped bundles through the cluster, as ``sa enqueue docstring PATH`` runs them.

The bundle's prompt files, worked examples and ``.pym`` context provider must reach the
workers: the scripted GPU worker answers with a docstring only when the rendered system prompt
holds the style the provider detected, so a worker that built the prompt another way fails
every run. The results are the same patches the embedded runner stores, and apply cleanly.
Both docstring bundles run: the default (the model writes the docstring) and docstring_calls
(it calls submit_result). The lint bundle's check command runs on the worker that finishes the
run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cluster_fixtures import SCRIPTED_DOCSTRING, Cluster

from structured_agents.patches import apply_patches
from structured_agents.tasks.check import CheckCommand
from structured_agents.tasks.docstring import discover_docstring_jobs, find_docstring_targets
from structured_agents.workers.enqueue import enqueue

SAMPLE_PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"


@pytest.mark.parametrize("bundle", ["docstring", "docstring_calls"])
def test_docstring_bundle_runs_through_the_workers(cluster: Cluster, tmp_path: Path, bundle: str) -> None:
    project = shutil.copytree(SAMPLE_PROJECT, tmp_path / "project")
    targets = discover_docstring_jobs(project)

    # both bundles run on one store: each bundle's discovery gives its jobs ids of its own
    batch_id = enqueue(cluster.store, cluster.app, bundle, project).batch_id
    cluster.wait(batch_id)

    failed = {run.qualname: run.error for run in cluster.store.list_runs(batch_id, "failed")}
    assert failed == {}
    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": len(targets)}
    results = cluster.store.results(batch_id)
    assert len(results) == len(targets) and all(result.diff for result in results)
    first = cluster.store.list_runs(batch_id)[0]
    kinds = [event.type for event in cluster.store.events(first.id)]
    assert kinds.count("model_request") == 1 and kinds[-1] == "kernel_end"

    report = apply_patches(project, results)

    assert len(report.run_ids("applied")) == len(targets)
    for path in {job.path for job in targets}:
        found = find_docstring_targets((project / path).read_text(), include_documented=True)
        documented = {target.qualname: target.docstring for target in found}
        assert all(documented[job.qualname] == SCRIPTED_DOCSTRING for job in targets if job.path == path)


def test_lint_bundle_runs_its_check_on_the_workers(cluster: Cluster, tmp_path: Path) -> None:
    project = shutil.copytree(SAMPLE_PROJECT, tmp_path / "project")
    check = CheckCommand("! grep -q 'email is None' lint_me.py")  # fails with ruff's unsafe fix

    batch_id = enqueue(cluster.store, cluster.app, "lint", project, task_options=check.to_options()).batch_id
    cluster.wait(batch_id)

    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": 1}
    [result] = cluster.store.results(batch_id)
    assert result.summary.splitlines()[0] == (
        "ruff 2 -> 1 (ruff --fix alone: 1); fixes tried: 1 proposed, 0 kept, 1 failed the check "
        "(E711 line 9: exit 1); check ran 2x; left: E711"
    )
    assert apply_patches(project, [result]).run_ids("applied") == [result.run_id]
    text = (project / "lint_me.py").read_text()
    assert "import os" not in text and "email == None" in text
