"""The docstring task in embedded mode with a scripted model: results, batching, events, reruns
(the docstring_calls bundle, whose calls the scripted model writes; the default bundle runs in
test_cli_run.py)."""

from __future__ import annotations

import ast
import filecmp
from pathlib import Path

from runner_helpers import (
    SAMPLE_PROJECT,
    docstring_parts,
    expected_docstring,
    run_embedded,
    scripted,
    submit_docstring,
    target_of,
)
from scripted_docstrings import opening_of

from structured_agents.bundles import Bundle
from structured_agents.engines import GenerationRequest
from structured_agents.patches import apply_patches
from structured_agents.store import Run, Store
from structured_agents.tasks.docstring import (
    code_without_docstrings,
    discover_docstring_jobs,
    find_docstring_targets,
)
from structured_agents.types import ToolCall


def _docstrings(source: str) -> dict[str, str | None]:
    """qualname -> docstring of every definition, as discovery names them."""
    return {t.qualname: t.docstring for t in find_docstring_targets(source, include_documented=True)}


def test_every_target_gets_a_docstring_patch_that_only_changes_docstrings(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    targets = docstring_bundle.discover_jobs(project)
    engine = scripted(docstring_bundle)

    summary = run_embedded(docstring_bundle, engine, store, project)

    assert (summary.discovered, summary.succeeded, summary.failed) == (len(targets), len(targets), 0)
    assert max(summary.batch_sizes) > 1, "concurrent runs must share engine batches"
    assert not filecmp.dircmp(SAMPLE_PROJECT, project).diff_files, "a run must not touch the codebase"
    results = store.results(summary.batch_id)
    assert sorted(r.run_id for r in results) == sorted(job.job_id for job in targets)
    assert all(r.status == "proposed" and r.diff.startswith("--- a/") for r in results)

    originals = {path: (project / path).read_text() for path in {job.path for job in targets}}
    report = apply_patches(project, results)
    assert len(report.run_ids("applied")) == len(targets)
    for path, original in originals.items():
        patched = (project / path).read_text()
        assert code_without_docstrings(patched) == code_without_docstrings(original)
        documented = _docstrings(patched)
        for job in (j for j in targets if j.path == path):
            assert documented[job.qualname] == expected_docstring(job.inputs)


def test_every_event_turn_and_tool_call_is_recorded(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    summary = run_embedded(docstring_bundle, scripted(docstring_bundle), store, project)

    for run in store.list_runs(summary.batch_id):
        types = [event.type for event in store.events(run.id)]
        assert types == [
            "kernel_start",
            "model_request",
            "model_response",
            "tool_call",
            "tool_result",
            "turn_complete",
            "kernel_end",
        ]
        assert [turn.turn for turn in store.turns(run.id)] == [1]
        assert [call.name for call in store.tool_calls(run.id)] == ["submit_result"]
        assert run.status == "succeeded" and run.error is None


def test_a_second_run_does_no_work(docstring_bundle: Bundle, store: Store, project: Path) -> None:
    engine = scripted(docstring_bundle)
    first = run_embedded(docstring_bundle, engine, store, project)
    requests = len(engine.requests)

    second = run_embedded(docstring_bundle, engine, store, project)

    assert (second.ran, second.skipped, second.discovered) == (0, first.discovered, first.discovered)
    assert len(engine.requests) == requests
    assert store.batch_counts(second.batch_id).total == 0


def test_overwrite_redoes_only_the_documented_targets(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    engine = scripted(docstring_bundle)
    first = run_embedded(docstring_bundle, engine, store, project)

    again = run_embedded(docstring_bundle, engine, store, project, overwrite=True)

    documented = len(discover_docstring_jobs(project, include_documented=True)) - first.discovered
    assert documented > 0
    assert (again.succeeded, again.skipped) == (documented, first.discovered)


def _empty(request: GenerationRequest) -> list[ToolCall]:
    """An empty description where the job's grammar allows one (a target that hands nothing
    back; another's summary must open on ``Return``): such a target submits at once."""
    if opening_of(request):
        return submit_docstring(request)
    return [ToolCall("submit_result", {**docstring_parts(request), "description": ""})]


def _quiet(store: Store, batch_id: str) -> list[Run]:
    """The runs of targets that hand nothing back."""
    return [run for run in store.list_runs(batch_id) if not run.inputs.get("gives")]


def test_an_empty_description_is_refused_and_submitted_again(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    engine = scripted(docstring_bundle, _empty, submit_docstring)

    summary = run_embedded(docstring_bundle, engine, store, project)

    assert summary.failed == 0
    run = _quiet(store, summary.batch_id)[0]
    calls = store.tool_calls(run.id)
    assert [(c.turn, c.is_error) for c in calls] == [(1, True), (2, False)]
    assert "empty" in calls[0].output


def test_a_job_that_never_submits_fails_with_the_reason(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    summary = run_embedded(docstring_bundle, scripted(docstring_bundle, _empty, _empty), store, project)

    runs = _quiet(store, summary.batch_id)
    assert 0 < summary.failed == len(runs) and summary.succeeded == summary.discovered - len(runs)
    (error,) = {run.error for run in runs}
    assert error is not None
    assert error.startswith(
        "the agent did not submit a result (the run ended by max_turns; last tool error: "
    )
    assert error.endswith("ValueError: the description is empty: write one line saying what the code does)")
    assert {result.run_id for result in store.results(summary.batch_id)}.isdisjoint(run.id for run in runs)


def test_each_jobs_submit_result_takes_its_targets_own_parameters(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    engine = scripted(docstring_bundle)
    run_embedded(docstring_bundle, engine, store, project)

    jobs = {(job.qualname, job.path): job for job in discover_docstring_jobs(project)}
    for request in engine.requests:
        job = jobs[target_of(request)]
        [submit] = [t["function"] for t in request.tools if t["function"]["name"] == "submit_result"]
        properties = submit["parameters"]["properties"]
        assert job.inputs["style"] == "plain"  # the sample project's docstrings are one-liners
        assert list(properties) == ["description"]
        assert request.sampling.n == 2 and request.grammar is not None


def test_in_a_sectioned_style_the_tool_takes_the_targets_parameters_and_what_it_gives(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    (project / "styled.py").write_text(
        'def documented(a):\n    """Do.\n\n    Args:\n        a: A.\n    """\n\n\n'
        "def scale(value, *factors):\n    return value\n"
    )
    engine = scripted(docstring_bundle)
    summary = run_embedded(docstring_bundle, engine, store, project)

    assert summary.failed == 0
    [request] = [r for r in engine.requests if target_of(r) == ("scale", "styled.py")]
    [submit] = [t["function"] for t in request.tools if t["function"]["name"] == "submit_result"]
    properties = submit["parameters"]["properties"]
    assert list(properties) == ["description", "parameters", "returns"]
    assert list(properties["parameters"]["properties"]) == ["value", "factors"]
    [job] = [j for j in discover_docstring_jobs(project) if (j.qualname, j.path) == ("scale", "styled.py")]
    assert job.inputs["style"] == "google"


def test_the_scripted_model_sees_each_target_once(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    engine = scripted(docstring_bundle)
    run_embedded(docstring_bundle, engine, store, project)

    seen = sorted(target_of(request) for request in engine.requests)
    expected = sorted((job.qualname, job.path) for job in discover_docstring_jobs(project))
    assert seen == expected
    assert ast.parse((project / "utils.py").read_text())  # still the original, still valid
