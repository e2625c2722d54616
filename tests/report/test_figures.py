"""The report's numbers: of a real scripted batch on both dialects, and of edge cases."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from scripted_batch import Filled

from structured_agents.report import BatchReportData, compute_figures, load_report_data
from structured_agents.report.charts import draw_charts
from structured_agents.report.figures import BIN_WIDTHS_S, MAX_BINS, REASON_CHARS, failure_reason
from structured_agents.store import BatchRecord, BatchSetupRecord, EngineTurnRecord, RunSummaryRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_figures_of_a_scripted_batch(filled: Filled) -> None:
    store, batch = filled
    data = load_report_data(store, batch.batch_id)
    figures = compute_figures(data)
    summary, axis = figures.summary, figures.axis

    assert summary.runs == batch.runs
    assert summary.by_status == {"succeeded": batch.runs - len(batch.failing), "failed": len(batch.failing)}
    assert axis is not None and axis.bins <= MAX_BINS and axis.bin_s in BIN_WIDTHS_S
    assert axis.span_s <= axis.bins * axis.bin_s
    assert axis.start == min(run.started_at for run in data.runs if run.started_at)
    assert sum(figures.succeeded_per_bin) == summary.by_status["succeeded"]
    assert sum(figures.failed_per_bin) == summary.by_status["failed"]
    assert sum(figures.tokens_per_s) * axis.bin_s == pytest.approx(summary.completion_tokens)
    assert summary.completion_tokens == sum(run.completion_tokens for run in data.runs)

    mean, top = np.array(figures.batch_size_mean), np.array(figures.batch_size_max)
    called = {int((turn.ts - axis.start).total_seconds() // axis.bin_s) for turn in data.engine_turns}
    assert {int(i) for i in np.flatnonzero(np.isfinite(mean))} == {min(i, axis.bins - 1) for i in called}
    finite = np.isfinite(mean)
    assert np.all((mean[finite] >= 1) & (mean[finite] <= top[finite]) & (top[finite] <= 4))
    assert 1 <= summary.mean_batch_size <= summary.max_batch_size <= 4

    assert len(figures.durations_s) == batch.runs
    assert min(figures.durations_s) <= (summary.latency_p50_s or 0) <= max(figures.durations_s)
    assert figures.turns_per_run == {1: len(batch.submitting), 2: len(batch.retrying) + len(batch.failing)}
    assert summary.mean_turns == pytest.approx(sum(run.turns for run in data.runs) / batch.runs)
    assert (summary.tool_calls, summary.tool_errors) == (
        sum(run.tool_calls for run in data.runs),
        len(batch.retrying) + 2 * len(batch.failing),
    )
    (group,) = figures.failure_groups
    assert group.count == len(batch.failing) and set(group.run_ids) == batch.failing
    assert group.reason.startswith("the agent did not submit a result")


def _run(
    n: int, *, start_s: float | None, end_s: float | None, status: str = "succeeded"
) -> RunSummaryRecord:
    started = None if start_s is None else T0 + timedelta(seconds=start_s)
    finished = None if end_s is None else T0 + timedelta(seconds=end_s)
    duration = None if start_s is None or end_s is None else end_s - start_s
    return RunSummaryRecord(
        f"r{n}", "a.py", f"f{n}", status, 1, started, finished, duration, 1, 10, 2, 0.1, 0, 0, None
    )


def _data(*runs: RunSummaryRecord) -> BatchReportData:
    batch = BatchRecord("b", "docstring", "1.0", "/src", "running", T0, {})
    return BatchReportData(batch, BatchSetupRecord(None, (), None, ()), runs, (), (), (), {}, ())


def test_a_batch_nothing_has_started_in_has_no_time_axis() -> None:
    figures = compute_figures(_data(_run(1, start_s=None, end_s=None, status="queued")))

    assert figures.axis is None and figures.durations_s == () and figures.turns_per_run == {}
    assert figures.summary.by_status == {"queued": 1} and figures.summary.wall_s == 0
    assert figures.summary.latency_p50_s is None and figures.summary.runs_per_min == 0


@pytest.mark.parametrize(
    ("span_s", "bin_s"), [(0.0, 0.1), (3.0, 0.1), (59.0, 1), (600.0, 15), (10 * 3600.0, 900), (9e6, 86400)]
)
def test_time_bins_are_round_and_at_most_max_bins(span_s: float, bin_s: float) -> None:
    axis = compute_figures(_data(_run(1, start_s=0, end_s=span_s), _run(2, start_s=0, end_s=None))).axis

    assert axis is not None and axis.bin_s == bin_s and axis.span_s == span_s
    assert axis.bins == max(1, math.ceil(round(span_s / bin_s, 9))) and axis.bins * axis.bin_s >= span_s
    assert axis.bins <= MAX_BINS or bin_s == BIN_WIDTHS_S[-1]


def test_a_run_ending_at_the_end_of_the_span_counts_in_the_last_bin() -> None:
    figures = compute_figures(_data(_run(1, start_s=0, end_s=5.5), _run(2, start_s=0, end_s=0.0)))

    assert figures.axis is not None and (figures.axis.bins, figures.axis.bin_s) == (55, 0.1)
    assert figures.succeeded_per_bin[0] == 1 and figures.succeeded_per_bin[-1] == 1


def test_failures_group_by_the_first_line_of_their_error() -> None:
    assert failure_reason("\n  boom: it broke  \ntraceback...") == "boom: it broke"
    assert failure_reason("") == "(no error message)"
    long = failure_reason("x" * 500)
    assert len(long) == REASON_CHARS and long.endswith("…")


def test_a_long_turn_s_tokens_count_while_it_decodes_and_a_cut_one_is_counted() -> None:
    runs = (_run(1, start_s=0, end_s=60),)
    long = EngineTurnRecord(T0 + timedelta(seconds=60), 1, 60.0, 600, "length")  # decoded from 0 to 60 s
    short = EngineTurnRecord(T0 + timedelta(seconds=30), 1, 0.0, 30, "grammar")
    batch = BatchRecord("b", "docstring", "1.0", "/src", "finished", T0, {})
    data = BatchReportData(batch, BatchSetupRecord(None, (), None, ()), runs, (long, short), (), (), {}, ())
    figures = compute_figures(data)
    axis = figures.axis
    assert axis is not None
    tokens = np.array(figures.tokens_per_s) * axis.bin_s
    assert tokens.sum() == pytest.approx(630)
    assert np.count_nonzero(tokens) == axis.bins  # every bin saw the long turn's tokens
    assert tokens.max() < 600 / 2  # not all at its end
    assert figures.summary.cut_off == 1


def test_the_turns_chart_is_left_out_when_every_run_took_as_many_turns() -> None:
    figures = compute_figures(_data(_run(1, start_s=0, end_s=2), _run(2, start_s=1, end_s=3)))
    assert figures.turns_per_run == {1: 2}
    assert "turns" not in [chart.key for chart in draw_charts(figures)]
