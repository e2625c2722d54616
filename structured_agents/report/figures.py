"""The numbers a report shows, computed from a batch's records (no drawing, no HTML here).

Time series share one :class:`TimeAxis`: equal bins from the batch's first start to its last
event, of a round width (0.1 s up to a day) chosen so the batch spans at most ``MAX_BINS``.
Failures are grouped by reason: the first line of the run's error.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from structured_agents.report.data import BatchReportData
from structured_agents.status import RUN_STATUSES
from structured_agents.store import RunSummaryRecord, ToolStatsRecord

__all__ = ["FailureGroup", "ReportFigures", "Summary", "TimeAxis", "compute_figures", "failure_reason"]

MAX_BINS = 60
BIN_WIDTHS_S = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)
"""Round bin widths, smallest first; the last one is used for longer batches too."""
REASON_CHARS = 200


@dataclass(frozen=True, slots=True)
class TimeAxis:
    """Equal time bins from ``start``; positions are shown in ``unit`` (s, min or h) since ``start``."""

    start: datetime
    """The first run's start."""
    span_s: float
    """Seconds from ``start`` to the last run's end or the last engine answer, whichever is later."""
    bin_s: float
    bins: int

    @property
    def unit(self) -> str:
        """Unit of the positions: ``s`` up to 2 minutes, ``min`` up to 2 hours, ``h`` beyond."""
        span = self.bin_s * self.bins
        return "s" if span <= 120 else "min" if span <= 7200 else "h"

    @property
    def scale(self) -> float:
        """Seconds per ``unit``."""
        return {"s": 1.0, "min": 60.0, "h": 3600.0}[self.unit]

    def index(self, offsets_s: np.ndarray) -> np.ndarray:
        """Bin of each offset (seconds since ``start``); the end of the last bin falls in it."""
        return np.clip((offsets_s // self.bin_s).astype(np.int64), 0, self.bins - 1)

    def lefts(self) -> np.ndarray:
        """Left edge of each bin, in ``unit``."""
        return np.arange(self.bins) * self.bin_s / self.scale

    def centres(self) -> np.ndarray:
        """Middle of each bin, in ``unit``."""
        return self.lefts() + self.bin_s / self.scale / 2


@dataclass(frozen=True, slots=True)
class Summary:
    """The batch in a few numbers."""

    runs: int
    by_status: dict[str, int]
    wall_s: float
    """From the first run's start to the last run's end (or the last engine answer)."""
    runs_per_min: float
    """Runs finished per minute of ``wall_s``."""
    prompt_tokens: int
    completion_tokens: int
    tokens_per_s: float
    """Completion tokens per second of ``wall_s``."""
    engine_calls: int
    mean_batch_size: float
    """Mean requests per engine call (weighted by request: what a request saw)."""
    max_batch_size: int
    latency_p50_s: float | None
    """Median duration of a finished run."""
    latency_p95_s: float | None
    mean_turns: float
    tool_calls: int
    tool_errors: int
    cut_off: int = 0
    """Model turns that ended on the token limit (``finish_reason: length``)."""


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """Failed runs that share a reason."""

    reason: str
    count: int
    run_ids: tuple[str, ...]
    example: str
    """One full error message of the group."""


@dataclass(frozen=True, slots=True)
class ReportFigures:
    """Everything a report draws, as numbers."""

    summary: Summary
    axis: TimeAxis | None
    """None when no run has a start time yet."""
    succeeded_per_bin: tuple[int, ...]
    failed_per_bin: tuple[int, ...]
    """Other final statuses (cancelled) are counted with the failed ones."""
    batch_size_mean: tuple[float, ...]
    """Mean requests per engine call in each bin; NaN where the engine was not called."""
    batch_size_max: tuple[float, ...]
    tokens_per_s: tuple[float, ...]
    """Completion tokens the engine returned per second, in each bin."""
    durations_s: tuple[float, ...]
    """Duration of every finished run."""
    turns_per_run: dict[int, int]
    """Finished runs by their number of turns."""
    tools: tuple[ToolStatsRecord, ...]
    failure_groups: tuple[FailureGroup, ...]
    """Most frequent first."""
    review: ReviewFigures


@dataclass(frozen=True, slots=True)
class ReviewFigures:
    """How many stored changes are clean and how many need review, and why."""

    clean: int
    flagged: int
    reasons: tuple[tuple[str, int], ...]
    """Flags by their code (``return-claim``, ``unknown-words``...), most frequent first."""


def review_figures(runs: Sequence[RunSummaryRecord]) -> ReviewFigures:
    """The review figures of the runs' stored changes."""
    stored = [run for run in runs if run.result_status is not None]
    flagged = [run for run in stored if run.result_flags]
    reasons = Counter(flag.split(":", 1)[0] for run in flagged for flag in run.result_flags)
    ranked = tuple(sorted(reasons.items(), key=lambda item: (-item[1], item[0])))
    return ReviewFigures(len(stored) - len(flagged), len(flagged), ranked)


def failure_reason(error: str) -> str:
    """The reason a failure is grouped by: the first line of its error, at most ``REASON_CHARS``."""
    first = next((line.strip() for line in error.splitlines() if line.strip()), "(no error message)")
    return first if len(first) <= REASON_CHARS else first[: REASON_CHARS - 1] + "…"


def _axis(data: BatchReportData) -> TimeAxis | None:
    starts = [run.started_at for run in data.runs if run.started_at is not None]
    if not starts:
        return None
    ends = [run.finished_at for run in data.runs if run.finished_at is not None]
    ends += [turn.ts for turn in data.engine_turns[-1:]]
    start = min(starts)
    span = max([(end - start).total_seconds() for end in ends] + [0.0])
    width = next((w for w in BIN_WIDTHS_S if span / w < MAX_BINS), BIN_WIDTHS_S[-1])
    return TimeAxis(start, span, float(width), max(1, math.ceil(round(span / width, 9))))


def _offsets(axis: TimeAxis, stamps: Sequence[datetime]) -> np.ndarray:
    return np.array([(ts - axis.start).total_seconds() for ts in stamps], dtype=np.float64)


def _per_bin(
    axis: TimeAxis, stamps: Sequence[datetime], weights: Sequence[float] | None = None
) -> np.ndarray:
    if not stamps:
        return np.zeros(axis.bins)
    return np.bincount(axis.index(_offsets(axis, stamps)), weights=weights, minlength=axis.bins)


def _spread(axis: TimeAxis, data: BatchReportData) -> np.ndarray:
    """Completion tokens per bin, each turn's spread evenly over the time it was decoded (its
    answer's time less its latency, to its answer): a long turn's tokens count while they are
    decoded, not all in the bin where it ended."""
    totals = np.zeros(axis.bins)
    for turn in data.engine_turns:
        end = (turn.ts - axis.start).total_seconds()
        start = max(end - turn.latency_s, 0.0)
        first, last = (int(i) for i in axis.index(np.array([start, end])))
        if last <= first or end <= start:
            totals[last] += turn.completion_tokens
            continue
        edges = np.clip(np.arange(first, last + 2) * axis.bin_s, start, end)
        totals[first : last + 1] += turn.completion_tokens * np.diff(edges) / (end - start)
    return totals


def _percentile(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if values.size else None


def _groups(data: BatchReportData) -> tuple[FailureGroup, ...]:
    by_reason: dict[str, list[str]] = {}
    examples: dict[str, str] = {}
    for failure in data.failures:
        reason = failure_reason(failure.error)
        by_reason.setdefault(reason, []).append(failure.run_id)
        examples.setdefault(reason, failure.error)
    ranked = sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(FailureGroup(reason, len(ids), tuple(ids), examples[reason]) for reason, ids in ranked)


def _summary(data: BatchReportData, axis: TimeAxis | None, durations: np.ndarray) -> Summary:
    by_status = Counter(run.status for run in data.runs)
    sizes = np.array([turn.batch_size for turn in data.engine_turns], dtype=np.float64)
    wall_s = axis.span_s if axis is not None else 0.0
    finished = sum(by_status[s] for s in ("succeeded", "failed", "cancelled"))
    completion = sum(turn.completion_tokens for turn in data.engine_turns)
    finished_turns = [run.turns for run in data.runs if run.finished_at is not None]
    return Summary(
        runs=len(data.runs),
        by_status={status: by_status[status] for status in RUN_STATUSES if by_status[status]},
        wall_s=wall_s,
        runs_per_min=finished / wall_s * 60 if wall_s > 0 else 0.0,
        prompt_tokens=sum(run.prompt_tokens for run in data.runs),
        completion_tokens=completion,
        tokens_per_s=completion / wall_s if wall_s > 0 else 0.0,
        engine_calls=len(data.engine_turns),
        mean_batch_size=float(sizes.mean()) if sizes.size else 0.0,
        max_batch_size=int(sizes.max()) if sizes.size else 0,
        latency_p50_s=_percentile(durations, 50),
        latency_p95_s=_percentile(durations, 95),
        mean_turns=float(np.mean(finished_turns)) if finished_turns else 0.0,
        tool_calls=sum(tool.calls for tool in data.tools),
        tool_errors=sum(tool.errors for tool in data.tools),
        cut_off=sum(turn.finish_reason == "length" for turn in data.engine_turns),
    )


def compute_figures(data: BatchReportData) -> ReportFigures:
    """The report's numbers for ``data``."""
    axis = _axis(data)
    finished = [run for run in data.runs if run.finished_at is not None]
    durations = np.array([run.duration_s for run in finished if run.duration_s is not None])
    succeeded = failed = sizes_mean = sizes_max = tokens = np.zeros(0)
    if axis is not None:
        succeeded = _per_bin(
            axis, [r.finished_at for r in finished if r.status == "succeeded" and r.finished_at]
        )
        failed = _per_bin(
            axis, [r.finished_at for r in finished if r.status != "succeeded" and r.finished_at]
        )
        stamps = [turn.ts for turn in data.engine_turns]
        calls = _per_bin(axis, stamps)
        sizes = [float(turn.batch_size) for turn in data.engine_turns]
        with np.errstate(invalid="ignore", divide="ignore"):
            sizes_mean = _per_bin(axis, stamps, sizes) / calls
        sizes_max = np.full(axis.bins, np.nan)
        if stamps:
            np.fmax.at(sizes_max, axis.index(_offsets(axis, stamps)), sizes)
        tokens = _spread(axis, data) / axis.bin_s
    return ReportFigures(
        summary=_summary(data, axis, durations),
        axis=axis,
        succeeded_per_bin=tuple(int(n) for n in succeeded),
        failed_per_bin=tuple(int(n) for n in failed),
        batch_size_mean=tuple(float(x) for x in sizes_mean),
        batch_size_max=tuple(float(x) for x in sizes_max),
        tokens_per_s=tuple(float(x) for x in tokens),
        durations_s=tuple(float(x) for x in durations),
        turns_per_run=dict(sorted(Counter(run.turns for run in finished).items())),
        tools=data.tools,
        failure_groups=_groups(data),
        review=review_figures(data.runs),
    )
