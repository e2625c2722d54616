"""Turns, tool calls, events, results and the report views, on SQLite, PostgreSQL and in memory
(the README's SQL on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text
from store_helpers import make_jobs, start_run

from structured_agents.jobs import JobSpec
from structured_agents.observer.events import KernelEnd, KernelStart, ToolResultEvent
from structured_agents.store import BatchSetupRecord, SqlStore, Store, StoreError
from structured_agents.store.names import SHARED_SUMMARY
from structured_agents.types import TokenUsage


def test_record_turn_is_idempotent(store: Store) -> None:
    run_id = start_run(store)
    assert store.record_turn(run_id, 1, prompt_tokens=10, completion_tokens=5, raw_text="a", latency_s=0.5)
    assert not store.record_turn(run_id, 1, prompt_tokens=99, raw_text="redelivered")
    assert store.record_turn(run_id, 2, prompt_tokens=12, completion_tokens=3, finish_reason="stop")
    turns = store.turns(run_id)
    assert [(t.turn, t.prompt_tokens, t.raw_text) for t in turns] == [(1, 10, "a"), (2, 12, "")]
    assert turns[1].finish_reason == "stop"


def test_record_tool_call_is_idempotent(store: Store) -> None:
    run_id = start_run(store)
    args = {"path": "pkg/a.py", "nested": {"lines": [1, 2]}}
    assert store.record_tool_call(run_id, 1, "call-a", "read_file", args, "text", duration_s=0.01)
    assert not store.record_tool_call(run_id, 1, "call-a", "read_file", {}, "again")
    assert store.record_tool_call(run_id, 1, "call-b", "submit", {"doc": "x"}, "bad", is_error=True)
    calls = store.tool_calls(run_id)
    assert [(c.call_id, c.arguments, c.output, c.is_error) for c in calls] == [
        ("call-a", args, "text", False),
        ("call-b", {"doc": "x"}, "bad", True),
    ]


def test_turn_of_an_unknown_run_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="record turn 1 of run ghost"):
        store.record_turn("ghost", 1)


def test_events_round_trip_in_the_observer_shape(store: Store) -> None:
    run_id = start_run(store)
    emitted = [
        KernelStart(
            run_id=run_id, turn=0, plugin="qwen", tools=("read", "submit"), max_turns=4, initial_messages=2
        ),
        ToolResultEvent(
            run_id=run_id, turn=1, call_id="c1", name="read", output="ok", is_error=False, duration_s=0.1
        ),
        KernelEnd(run_id=run_id, turn=1, reason="termination_tool", usage=TokenUsage(3, 4), duration_s=1.5),
    ]
    assert store.record_events(event.to_dict() for event in emitted) == 3
    stored = store.events(run_id)
    assert [e.type for e in stored] == ["kernel_start", "tool_result", "kernel_end"]
    for event, record in zip(emitted, stored, strict=True):
        back, original = record.to_dict(), event.to_dict()
        assert back.pop("timestamp") == pytest.approx(original.pop("timestamp"), abs=1e-5)
        assert back == original
    assert [e.type for e in store.events(run_id, after_id=stored[0].id)] == ["tool_result", "kernel_end"]
    with pytest.raises(StoreError, match="needs a 'type'"):
        store.record_event({"run_id": run_id})


def test_results_upsert_list_and_status(store: Store) -> None:
    run_id = start_run(store)
    batch_id = store.get_run(run_id).batch_id
    store.save_result(run_id, target_path="pkg/a.py", original_hash="h1", diff="--- a\n", summary="first")
    store.save_result(run_id, target_path="pkg/a.py", original_hash="h1", diff="--- b\n", summary="second")
    (result,) = store.results(batch_id)
    assert (result.diff, result.summary, result.status) == ("--- b\n", "second", "proposed")
    assert store.set_result_status([run_id, "unknown"], "applied") == 1
    assert store.results(batch_id, "proposed") == []
    assert store.results(batch_id, "applied")[0].run_id == run_id
    with pytest.raises(StoreError, match="result status"):
        store.set_result_status([run_id], "merged")  # type: ignore[arg-type]


def synthetic_batches(store: Store) -> tuple[str, str]:
    """Two finished runs in two batches: one succeeded after two turns, one failed."""
    ok = start_run(store, "ok", batch_id="batch-1")
    store.record_turn(ok, 1, prompt_tokens=100, completion_tokens=20, latency_s=0.5)
    store.record_turn(ok, 2, prompt_tokens=130, completion_tokens=10, latency_s=0.25)
    store.record_tool_call(ok, 1, "c1", "read_file", {}, "src", duration_s=0.5)
    store.record_tool_call(ok, 2, "c2", "submit", {}, "done", duration_s=0.25)
    store.save_result(ok, target_path="a.py", original_hash="h", diff="d")
    store.finish(ok, "succeeded")
    bad = start_run(store, "bad", batch_id="batch-2")
    store.record_turn(bad, 1, prompt_tokens=90, completion_tokens=30)
    store.record_tool_call(bad, 1, "c3", "read_file", {}, "no such file", is_error=True, duration_s=1.5)
    store.record_event({"type": "kernel_end", "run_id": bad, "turn": 1, "reason": "error"})
    store.finish(bad, "failed", error="ParseError: no tool call")
    return ok, bad


def test_views_report_a_synthetic_batch(store: Store) -> None:
    ok, bad = synthetic_batches(store)

    summary = {row["run_id"]: row for row in store.view("run_summary")}
    assert summary[ok]["turns"] == 2 and summary[ok]["prompt_tokens"] == 230
    assert summary[ok]["completion_tokens"] == 30 and summary[ok]["tool_calls"] == 2
    assert summary[ok]["result_status"] == "proposed" and summary[ok]["duration_s"] >= 0
    assert summary[bad]["tool_errors"] == 1 and summary[bad]["result_status"] is None
    assert [row["run_id"] for row in store.view("run_summary", batch_id="batch-2")] == [bad]

    stats = {row["name"]: row for row in store.view("tool_stats")}
    assert stats["read_file"]["calls"] == 2 and stats["read_file"]["errors"] == 1
    assert stats["read_file"]["error_rate"] == pytest.approx(0.5)
    assert stats["read_file"]["avg_duration_s"] == pytest.approx(1.0)
    assert stats["submit"]["runs"] == 1

    (failure,) = store.view("failures")
    assert failure["run_id"] == bad and failure["error"].startswith("ParseError")
    assert failure["turns"] == 1 and failure["last_event"] == "kernel_end"

    throughput = store.view("throughput_by_minute")
    assert sum(row["runs_finished"] for row in throughput) == 2
    assert sum(row["runs_succeeded"] for row in throughput) == 1
    assert sum(row["turns"] for row in throughput) == 3
    assert sum(row["completion_tokens"] for row in throughput) == 60
    assert {row["batch_id"] for row in throughput} == {"batch-1", "batch-2"}

    with pytest.raises(StoreError, match="unknown view"):
        store.view("runs; DROP TABLE runs")


def test_the_report_figures_of_one_batch(store: Store) -> None:
    ok, bad = synthetic_batches(store)
    late, early, noop = (make_jobs(1, prefix=prefix)[0].job_id for prefix in ("z", "m", "n"))
    for run_id in (late, early, noop):  # one add each: created in an order that is not the ids'
        store.add_jobs("batch-1", make_jobs(1, prefix=run_id[:1]))
        assert store.claim(run_id) is not None
    store.record_tool_call(early, 1, "c4", "submit", {}, "bad", is_error=True, duration_s=0.75)
    store.save_result(early, target_path="a.py", original_hash="h", diff="d2")
    store.save_result(late, target_path="c.py", original_hash="h", diff="d3", flags=["vacuous: x"])
    store.save_result(noop, target_path="b.py", original_hash="h", diff="")
    assert store.set_result_status([late], "rejected") == 1
    usage = {"prompt_tokens": 130, "completion_tokens": 10}
    store.record_events(
        [
            {"type": "kernel_start", "run_id": ok, "timestamp": 1.0, "plugin": "qwen", "max_turns": 4}
            | {"tools": ["read_file", "submit"]},
            {"type": "kernel_start", "run_id": early, "timestamp": 1.5, "plugin": "other"},
            {"type": "model_request", "run_id": ok, "turn": 1, "timestamp": 2.0, "grammar": "ebnf"},
            {
                "type": "model_request",
                "run_id": early,
                "turn": 1,
                "timestamp": 2.0,
                "grammar": "structural_tag",
            },
            {"type": "model_request", "run_id": early, "turn": 2, "timestamp": 2.0, "grammar": "ebnf"},
            {"type": "model_request", "run_id": early, "turn": 3, "timestamp": 2.0},
            {"type": "model_response", "run_id": ok, "turn": 2, "timestamp": 4.0, "batch_size": 3}
            | {"latency_s": 0.25, "usage": usage, "finish_reason": "stop", "model": "gemma"},
            {"type": "model_response", "run_id": ok, "turn": 1, "timestamp": 3.0, "model": "later"},
        ]
    )
    (worse,) = make_jobs(1, prefix="worse")
    store.add_jobs("batch-2", [worse])
    assert store.claim(worse.job_id) is not None
    assert store.finish(worse.job_id, "failed", error="Timeout")

    summaries = store.run_summaries("batch-1")
    assert [row.run_id for row in summaries] == [ok, early, noop, late]  # finished first, then by id
    first, *_, last = summaries
    assert (first.status, first.turns, first.prompt_tokens, first.completion_tokens) == (
        "succeeded",
        2,
        230,
        30,
    )
    assert (first.tool_calls, first.tool_errors, first.result_status, first.result_flags) == (
        2,
        0,
        "proposed",
        (),
    )
    assert first.model_latency_s == pytest.approx(0.75) and first.duration_s is not None
    assert first.finished_at is not None and first.finished_at.tzinfo is not None
    assert (last.status, last.finished_at, last.duration_s) == ("running", None, None)
    assert (last.result_status, last.result_flags, last.turns) == ("rejected", ("vacuous: x",), 0)

    turns = store.engine_turns("batch-1")  # in time order, not in the order recorded
    assert [(t.ts.timestamp(), t.batch_size, t.completion_tokens, t.finish_reason) for t in turns] == [
        (3.0, 1, 0, None),
        (4.0, 3, 10, "stop"),
    ]
    assert [t.latency_s for t in turns] == [0.0, 0.25] and store.engine_turns("batch-2") == []

    stats = [(s.name, s.calls, s.errors, s.runs) for s in store.batch_tool_stats("batch-1")]
    assert stats == [("submit", 2, 1, 2), ("read_file", 1, 0, 1)]  # most called first
    submit, read = store.batch_tool_stats("batch-1")
    assert (submit.error_rate, submit.avg_duration_s, submit.max_duration_s) == pytest.approx(
        (0.5, 0.5, 0.75)
    )
    assert (read.error_rate, read.avg_duration_s, read.max_duration_s) == pytest.approx((0.0, 0.5, 0.5))

    failures = store.batch_failures("batch-2")  # the last finished first
    assert [(f.run_id, f.error, f.attempts, f.turns, f.last_event) for f in failures] == [
        (worse.job_id, "Timeout", 1, 0, None),
        (bad, "ParseError: no tool call", 1, 1, "kernel_end"),
    ]
    assert all(f.finished_at is not None for f in failures) and store.batch_failures("batch-1") == []

    setup = store.batch_setup("batch-1")  # the first run's start, every grammar, the first answer's model
    assert setup == BatchSetupRecord("qwen", ("read_file", "submit"), 4, ("ebnf", "structural_tag"), "gemma")
    assert store.batch_setup("batch-2") == BatchSetupRecord(None, (), None, (), None)

    assert store.result_counts("batch-1") == {"proposed": 3, "rejected": 1}
    assert store.result_counts("batch-2") == {}
    sample = store.result_sample("batch-1", 10)  # the first of each file, then the second...
    assert [(r.run_id, r.target_path) for r in sample] == [(early, "a.py"), (late, "c.py"), (ok, "a.py")]
    assert [r.run_id for r in store.result_sample("batch-1", 2)] == [early, late]
    assert store.run_summaries("nope") == [] and store.result_sample("nope", 3) == []


def test_the_readme_queries_run(sql_store: SqlStore) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sql\n", 1)[1].split("```", 1)[0]
    queries = [q.strip() for q in block.split(";") if q.strip()]
    synthetic_batches(sql_store)

    answers = []
    with sql_store.engine.connect() as conn:
        for query in queries:
            params = {"batch": "batch-1"} if ":batch" in query else {}
            answers.append(list(conn.execute(text(query), params)))

    assert len(queries) == 6
    slowest, errors, tools, batch_sizes, cut_off, review = answers
    assert [(row[0], row[2], row[3]) for row in slowest] == [("func_0", 2, 30)]
    assert errors == [("ParseError: no tool call", 1)]
    assert tools[0][0] == "read_file"
    assert sorted(row[0] for row in batch_sizes) == ["batch-1", "batch-2"]
    assert cut_off == []
    assert review == []  # batch-1's result is clean


def test_flagged_results_keep_their_reasons_and_the_summary_view_shows_them(store: Store) -> None:
    run_id = start_run(store)
    batch_id = store.get_run(run_id).batch_id
    store.save_result(
        run_id, target_path="pkg/a.py", original_hash="h", diff="d", flags=["vacuous: says nothing"]
    )
    (result,) = store.results(batch_id)
    assert result.flags == ("vacuous: says nothing",) and result.flagged
    (row,) = store.view("run_summary", batch_id=batch_id)
    flags = row["result_flags"]  # JSON: text on SQLite, decoded by psycopg on PostgreSQL
    assert row["needs_review"] == 1 and (json.loads(flags) if isinstance(flags, str) else flags) == [
        "vacuous: says nothing"
    ]
    store.save_result(run_id, target_path="pkg/a.py", original_hash="h", diff="d")  # a clean retry
    assert not store.results(batch_id)[0].flagged
    assert store.view("run_summary", batch_id=batch_id)[0]["needs_review"] == 0


def test_a_summary_two_targets_with_other_code_share_flags_both(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src")
    jobs = make_jobs(3, prefix="s")
    twin = JobSpec("s-twin", "docstring", "pkg/other.py", "twin", "0" * 64, dict(jobs[0].inputs))
    store.add_jobs(batch.id, [*jobs, twin])
    for job in [*jobs, twin]:
        assert store.claim(job.job_id) is not None
    save = {"target_path": "pkg/a.py", "original_hash": "h", "diff": "d", "unique_summary": True}
    store.save_result(jobs[0].job_id, summary="Return the value.", **save)
    store.save_result(jobs[1].job_id, summary="Return the other value.", **save)
    assert not any(r.flagged for r in store.results(batch.id))
    store.save_result(jobs[2].job_id, summary="Return the value.", flags=["vacuous: x"], **save)
    store.save_result(twin.job_id, summary="Return the value.", **save)  # the same code as jobs[0]
    flags = {r.run_id: r.flags for r in store.results(batch.id)}
    assert flags[jobs[0].job_id] == (SHARED_SUMMARY,)
    assert flags[jobs[1].job_id] == ()
    assert flags[jobs[2].job_id] == ("vacuous: x", SHARED_SUMMARY)
    assert flags[twin.job_id] == (SHARED_SUMMARY,)  # shares with jobs[2], whose code differs
