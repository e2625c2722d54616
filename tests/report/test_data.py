"""The store's report queries (``store/report.py``) against a real scripted batch, on both dialects."""

from __future__ import annotations

from datetime import timedelta

import pytest
from scripted_batch import Filled

from structured_agents.jobs.spec import JobSpec
from structured_agents.report import load_report_data
from structured_agents.store import RecordNotFoundError, Store


def test_run_summaries_match_what_each_run_did(filled: Filled) -> None:
    store, batch = filled
    runs = {run.run_id: run for run in load_report_data(store, batch.batch_id).runs}

    assert set(runs) == batch.submitting | batch.retrying | batch.failing
    for run_id, run in runs.items():
        expected = (
            ("failed", 2, 2, 2) if run_id in batch.failing
            else ("succeeded", 2, 2, 1) if run_id in batch.retrying
            else ("succeeded", 1, 1, 0)
        )  # fmt: skip
        assert (run.status, run.turns, run.tool_calls, run.tool_errors) == expected, run_id
        assert run.result_status == (None if run_id in batch.failing else "proposed")
        assert run.started_at is not None and run.finished_at is not None
        assert run.duration_s == pytest.approx((run.finished_at - run.started_at).total_seconds(), abs=1e-3)
        assert run.completion_tokens > 0 and run.prompt_tokens > run.completion_tokens
        assert 0 < run.model_latency_s <= run.duration_s
    ends = [run.finished_at for run in load_report_data(store, batch.batch_id).runs]
    assert ends == sorted(ends)


def test_engine_turns_are_every_model_answer_in_time_order(filled: Filled) -> None:
    store, batch = filled
    data = load_report_data(store, batch.batch_id)

    assert len(data.engine_turns) == sum(run.turns for run in data.runs)
    assert sum(turn.completion_tokens for turn in data.engine_turns) == sum(
        run.completion_tokens for run in data.runs
    )
    stamps = [turn.ts for turn in data.engine_turns]
    assert stamps == sorted(stamps)
    first = min(run.started_at for run in data.runs if run.started_at)
    last = max(run.finished_at for run in data.runs if run.finished_at)
    assert first <= stamps[0] and stamps[-1] <= last + timedelta(seconds=1)
    assert all(1 <= turn.batch_size <= 4 for turn in data.engine_turns)  # concurrency 4
    assert all(turn.latency_s > 0 and turn.finish_reason == "stop" for turn in data.engine_turns)


def test_tool_stats_failures_setup_and_results_of_the_batch(filled: Filled) -> None:
    store, batch = filled
    data = load_report_data(store, batch.batch_id, diff_sample=3)

    (submit,) = data.tools
    assert (submit.name, submit.calls, submit.errors, submit.runs) == (
        "submit_result",
        len(batch.submitting) + 2 * len(batch.retrying) + 2 * len(batch.failing),
        len(batch.retrying) + 2 * len(batch.failing),
        batch.runs,
    )
    assert submit.error_rate == pytest.approx(submit.errors / submit.calls)
    assert 0 <= submit.avg_duration_s <= submit.max_duration_s

    assert {failure.run_id for failure in data.failures} == batch.failing
    for failure in data.failures:
        assert "did not submit" in failure.error and "description is empty" in failure.error
        assert (failure.turns, failure.last_event, failure.attempts) == (2, "kernel_end", 1)

    assert data.setup.plugin == "function_gemma" and data.setup.max_turns == 2
    assert data.setup.tools == ("submit_result",)
    assert data.setup.grammars == ("ebnf",)

    assert data.result_counts == {"proposed": len(batch.submitting) + len(batch.retrying)}
    assert len(data.result_sample) == 3
    paths = [result.target_path for result in data.result_sample]
    files = sorted({r.target_path for r in store.results(batch.batch_id) if r.diff})
    assert paths == files[:3] if len(files) >= 3 else set(paths) == set(files)  # one of each file first
    for result in data.result_sample:
        added = [line for line in result.diff.splitlines() if line.startswith("+") and "+++" not in line]
        assert any("what the name says." in line for line in added), result.diff


def test_figures_of_one_batch_leave_other_batches_out(filled: Filled) -> None:
    store, batch = filled
    before = load_report_data(store, batch.batch_id)
    other = store.create_batch("other", "1", "/elsewhere")
    _one_failed_run(store, other.id)

    after = load_report_data(store, batch.batch_id)
    assert (after.runs, after.engine_turns, after.tools) == (before.runs, before.engine_turns, before.tools)
    assert (after.failures, after.result_counts) == (before.failures, before.result_counts)
    mine = load_report_data(store, other.id)
    assert [(t.name, t.calls, t.errors) for t in mine.tools] == [("lookup", 1, 1)]
    assert [(t.batch_size, t.completion_tokens, t.finish_reason) for t in mine.engine_turns] == [
        (7, 5, "length")
    ]
    assert [(f.error, f.turns, f.last_event) for f in mine.failures] == [("cut off", 1, "model_response")]
    assert mine.setup.plugin is None and mine.setup.grammars == ()


def _one_failed_run(store: Store, batch_id: str) -> None:
    job = JobSpec(
        job_id=f"other-{batch_id}", kind="docstring", path="x.py", qualname="f", source_hash="0" * 64
    )
    store.add_jobs(batch_id, [job])
    assert store.claim(job.job_id) is not None
    store.record_turn(job.job_id, 1, completion_tokens=5, batch_size=7)
    store.record_tool_call(job.job_id, 1, f"call-{batch_id}", "lookup", {}, "boom", is_error=True)
    store.record_event(
        {
            "type": "model_response",
            "run_id": job.job_id,
            "turn": 1,
            "batch_size": 7,
            "latency_s": 0.5,
            "usage": {"prompt_tokens": 3, "completion_tokens": 5},
            "finish_reason": "length",
        }
    )
    store.finish(job.job_id, "failed", error="cut off")


def test_an_unknown_batch_is_refused(filled: Filled) -> None:
    store, _ = filled
    with pytest.raises(RecordNotFoundError, match="nope"):
        load_report_data(store, "nope")
    assert store.run_summaries("nope") == [] and store.batch_tool_stats("nope") == []
