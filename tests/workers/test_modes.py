"""Both drivers of the run lifecycle store the same thing: one test, run embedded and distributed.

A run of a bundle without a task (jobs given explicitly) changes no file; when it succeeds its
final output is stored as the result's summary, with an empty diff, in either mode.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cluster_fixtures import BUNDLE, Cluster, write_script

from structured_agents.bundles import load_bundle
from structured_agents.engines.script_file import load_script
from structured_agents.jobs import parse_jobs
from structured_agents.runner import EmbeddedRunner
from structured_agents.store import SqlStore, Store
from structured_agents.workers.enqueue import enqueue


def _embedded(tmp_path: Path, root: Path, jobs_input: list[dict[str, object]]) -> tuple[Store, str]:
    store = SqlStore(f"sqlite:///{tmp_path / 'embedded.db'}")
    bundle = load_bundle(BUNDLE)
    engine = load_script(write_script(tmp_path / "script.json", delay_s=0.0))
    try:
        summary = asyncio.run(EmbeddedRunner(bundle, engine, store).run(root, parse_jobs(jobs_input)))
    finally:
        bundle.close()
    return store, summary.batch_id


@pytest.mark.parametrize("mode", ["embedded", "distributed"])
def test_a_run_that_changes_no_file_stores_its_output_as_an_empty_diff_result(
    mode: str, cluster: Cluster, tmp_path: Path
) -> None:
    jobs = [{"kind": "lookup", "path": "empty-diff.txt", "inputs": {"key": f"empty-diff-{mode}"}}]
    if mode == "embedded":
        store, batch_id = _embedded(tmp_path, cluster.root, jobs)
    else:
        store = cluster.store
        batch_id = enqueue(store, cluster.app, BUNDLE, cluster.root, parse_jobs(jobs)).batch_id
        cluster.wait(batch_id)
    [run] = store.list_runs(batch_id)
    [result] = store.results(batch_id)
    assert (run.status, run.error) == ("succeeded", None)
    assert (result.run_id, result.diff, result.summary, result.status) == (run.id, "", "done", "proposed")
    assert (result.target_path, result.original_hash) == ("empty-diff.txt", "")
    kinds = [event.type for event in store.events(run.id)]
    assert kinds[0] == "kernel_start" and kinds[-1] == "kernel_end" and kinds.count("turn_complete") == 2
    assert store.get_batch(batch_id).status == "finished"
