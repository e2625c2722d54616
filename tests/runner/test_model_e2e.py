"""The shipped bundles with the real small model on CPU: one batched run each.

Slow (minutes on two cores), so marked ``model``. The docstring run checks what must hold for
any model output the grammar allows, on any CPU, thread count and batch size
(``--model-batch-size``): every job ends, a failed one only for a reason a well-formed output
can have (the model never submitted an acceptable docstring, or the token limit cut it off:
the grammar fixes the form, not the content or the length), never an error of ours; most
targets succeed (a rate with a margin, not one model output); applying the patches changes
nothing but docstrings; running again redoes only the failures. The lint runs check what the
grammar guarantees: every call names a tool with one of the job's own fix ids or lines, the run
ends by submitting, and a proposal is only ever kept when ruff then finds less.
"""

from __future__ import annotations

import asyncio
import filecmp
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from runner_helpers import SAMPLE_PROJECT, run_embedded
from services import require_model_stack

from structured_agents.bundles import Bundle, load_bundle
from structured_agents.harness import run_harness
from structured_agents.patches import apply_patches
from structured_agents.store import Store
from structured_agents.tasks.docstring import (
    code_without_docstrings,
    discover_docstring_jobs,
    find_docstring_targets,
)
from structured_agents.tasks.ruff import ruff_codes

if TYPE_CHECKING:
    from pathlib import Path

    from structured_agents.engines.transformers_engine import TransformersEngine
    from structured_agents.pym import PymRunner

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def model(model_batch_size: int) -> Iterator[TransformersEngine]:
    require_model_stack()
    from structured_agents.engines.transformers_engine import TransformersEngine

    yield TransformersEngine(device="cpu", max_batch_size=model_batch_size)


@pytest.fixture(params=["docstring", "docstring_calls"])
def any_docstring_bundle(request: pytest.FixtureRequest, pym_runner: PymRunner) -> Iterator[Bundle]:
    """Each shipped docstring bundle: the docstring written as code (the default, the
    python_docstring plugin), and tool calls (FunctionGemma's format)."""
    bundle = load_bundle(request.param, runner=pym_runner)
    yield bundle
    bundle.close()


TASK_FAILURES = ("the agent did not submit a result", "cut off at max_new_tokens")
"""What a failed docstring job's error may say: the model's output was well formed but not
acceptable, or too long. Anything else (an exception of ours) fails the test."""


def test_docstrings_for_the_whole_sample_project(
    model: TransformersEngine, any_docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    docstring_bundle = any_docstring_bundle
    targets = discover_docstring_jobs(project)
    originals = {job.path: (project / job.path).read_text() for job in targets}

    summary = run_embedded(docstring_bundle, model, store, project, concurrency=model.max_batch_size)

    failures = {run.qualname: run.error or "" for run in store.list_runs(summary.batch_id, "failed")}
    assert all(any(reason in error for reason in TASK_FAILURES) for error in failures.values()), failures
    assert summary.ran == len(targets) and summary.succeeded >= 0.8 * len(targets), failures
    assert max(summary.batch_sizes) <= model.max_batch_size
    assert max(summary.batch_sizes) > 1 or model.max_batch_size == 1  # the loops' turns were batched
    assert not filecmp.dircmp(SAMPLE_PROJECT, project).diff_files
    results = store.results(summary.batch_id)
    assert len(results) == summary.succeeded

    again = run_embedded(docstring_bundle, model, store, project)
    assert (again.ran, again.skipped) == (len(failures), summary.succeeded)

    report = apply_patches(project, results)

    assert len(report.run_ids("applied")) == len(results)
    documented_targets = {(result.target_path, store.get_run(result.run_id).qualname) for result in results}
    for path, original in originals.items():
        patched = (project / path).read_text()
        assert code_without_docstrings(patched) == code_without_docstrings(original)
        documented = {
            t.qualname: t.docstring for t in find_docstring_targets(patched, include_documented=True)
        }
        assert all(documented[name] for target, name in documented_targets if target == path)


def test_harness_grammar_on_gives_only_well_formed_calls(
    model: TransformersEngine, any_docstring_bundle: Bundle, project: Path
) -> None:
    on, off = asyncio.run(run_harness([any_docstring_bundle], model, project, prompts=4))

    assert (on.grammar, on.prompts, off.grammar, off.prompts) == ("ebnf", 4, None, 4)
    assert [on.count(v) for v in ("parse_failure", "no_call", "invalid_call")] == [0, 0, 0], on.to_dict()
    assert on.count("valid") >= 3 and on.count("valid") + on.count("cut_off") == 4
    assert on.tokens_per_s > 0 and off.completion_tokens > 0


LINT_TARGET = """import os


def summarize(values, flag):
    count = len(values)
    if (flag > 0) == True:
        return None
    if values == None:
        return 0
    if (flag < 0) == False:
        return 1
    try:
        total = sum(v * v for v in values)
    except:
        total = 0
    return total
"""
"""A file with findings ruff's safe fixes leave: unsafe fixes to decide (F841, E712 twice on
comparisons, whose truth tests keep them, E711)
and a finding ruff has no fix for but a candidate (E722: ``except Exception:``)."""


def test_lint_smoke(model: TransformersEngine, lint_bundle: Bundle, store: Store, project: Path) -> None:
    before = ruff_codes(project, "lint_me.py", (project / "lint_me.py").read_text())

    summary = run_embedded(lint_bundle, model, store, project)

    assert summary.ran == 1
    assert not filecmp.dircmp(SAMPLE_PROJECT, project).diff_files
    for result in store.results(summary.batch_id):
        if result.status == "proposed":
            apply_patches(project, [result])
            assert len(ruff_codes(project, "lint_me.py", (project / "lint_me.py").read_text())) < len(before)


def test_lint_calls_name_only_real_candidates(
    model: TransformersEngine, lint_bundle: Bundle, store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "code"
    root.mkdir()
    (root / "ruff.toml").write_text('[lint]\nselect = ["E4", "E7", "E9", "F"]\n')
    (root / "stats.py").write_text(LINT_TARGET)
    [job] = lint_bundle.discover_jobs(root)
    fix_ids = job.inputs["fix_ids"]
    assert len(fix_ids) >= 5 and "E722" in {f["code"] for f in job.inputs["findings"]}  # a candidate too
    by_ruff = ruff_codes(root, "stats.py", job.inputs["source"])

    summary = run_embedded(lint_bundle, model, store, root)

    [run] = store.list_runs(summary.batch_id)
    assert run.status == "succeeded" or "nothing changes the file" in (run.error or ""), run.error
    calls = store.tool_calls(run.id)
    assert calls and calls[-1].name == "submit_result"  # every turn parsed; the run ended by submitting
    decided = []  # the grammar's enums: only the job's own ids, one at a time, in order
    for call in calls:
        if call.name in ("accept_fix", "reject_fix"):
            assert call.arguments["id"] in fix_ids
            decided.append(call.arguments["id"])
        else:
            assert (call.name, call.arguments) == ("submit_result", {})
    assert decided == fix_ids, decided  # every fix decided, in order, before the submission
    for result in store.results(summary.batch_id):  # kept only when ruff finds less than alone
        apply_patches(root, [result])
        left = ruff_codes(root, "stats.py", (root / "stats.py").read_text())
        assert len(left) <= len(by_ruff) and result.summary.startswith(f"ruff 6 -> {len(left)} ")
