"""The lifecycle's batch steps before any run: checking a batch's jobs against its bundle, and
storing it (or taking an unfinished one up again). Both drivers call these, so a job the
workers refuse is refused by ``sa run`` too."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from structured_agents.bundles import load_bundle
from structured_agents.engines import ScriptedEngine
from structured_agents.errors import StructuredAgentsError
from structured_agents.jobs import JobInputError, JobSpec
from structured_agents.lifecycle import open_batch, prepare_batch
from structured_agents.runner import EmbeddedRunner
from structured_agents.store import MemoryStore

SAMPLE = Path(__file__).parents[1] / "fixtures" / "sample_project"


def _job(job_id: str, **inputs: object) -> JobSpec:
    return JobSpec(job_id, "docstring", "shapes.py", "area", "", dict(inputs))


@pytest.mark.parametrize(
    ("inputs", "why"),
    [
        ({"path": "shapes.py", "qualname": "area"}, "'source' is undefined"),
        ({"path": "shapes.py", "qualname": "area", "source": 3}, "filter outline takes text, got int"),
    ],
)
def test_prepare_refuses_inputs_the_templates_cannot_render_naming_job_and_template(
    inputs: dict[str, object], why: str
) -> None:
    bundle = load_bundle("docstring")
    with pytest.raises(JobInputError) as refused:
        prepare_batch(bundle, SAMPLE, [_job("j1", **inputs)])
    assert "job 1 (shapes.py area)" in str(refused.value) and "docstring/prompts/user.j2:2" in str(
        refused.value
    )
    assert why in str(refused.value)


def test_prepare_discovers_jobs_and_records_the_bundle_directory_and_driver_options() -> None:
    bundle = load_bundle("docstring")
    prepared = prepare_batch(bundle, SAMPLE, extra={"engine": "scripted"})
    assert prepared.jobs and all(job.kind == "docstring" for job in prepared.jobs)
    assert prepared.options == {"bundle": str(bundle.directory.resolve()), "engine": "scripted"}
    assert prepared.root == SAMPLE.resolve()
    with pytest.raises(StructuredAgentsError, match="takes no option check"):
        prepare_batch(bundle, SAMPLE, [], task_options={"check": "pytest"})


def test_open_resumes_only_an_unfinished_batch_of_the_same_work(tmp_path: Path) -> None:
    prepared = prepare_batch(load_bundle("docstring"), SAMPLE)
    with MemoryStore() as store:
        first = open_batch(store, prepared, resume=True)
        assert not first.resumed and len(first.added.queued) == len(prepared.jobs)
        claimed = store.claim_next(first.batch.id)  # left running by a killed process
        assert claimed is not None
        again = open_batch(store, prepared, resume=True)
        assert again.resumed and again.batch.id == first.batch.id
        assert (
            store.get_run(claimed.id).status == "queued" and store.get_run(claimed.id).error == "interrupted"
        )
        assert open_batch(store, prepared).batch.id != first.batch.id  # no resume: a new batch
        store.set_batch_status(first.batch.id, "finished")
        other = prepare_batch(load_bundle("docstring"), SAMPLE, extra={"engine": "other"})
        assert open_batch(store, other, resume=True).batch.id != first.batch.id


def test_the_embedded_runner_refuses_bad_inputs_before_storing_anything(tmp_path: Path) -> None:
    bundle = load_bundle("docstring")
    engine = ScriptedEngine(lambda _key: [])
    with MemoryStore() as store:
        with pytest.raises(JobInputError, match="'source' is undefined"):
            asyncio.run(EmbeddedRunner(bundle, engine, store).run(SAMPLE, [_job("j1", path="shapes.py")]))
        assert store.list_batches() == []
