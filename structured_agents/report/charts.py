"""The report's charts, drawn by matplotlib's SVG backend and embedded as ``data:`` URIs.

Each chart is a standalone SVG document inside an ``<img>``: glyphs are drawn as paths
(matplotlib's default ``svg.fonttype``), so no font is fetched, and the SVG has no script,
stylesheet or link to anything outside itself (a test checks). Keeping each SVG its own
document keeps the element ids of one chart from clashing with another's.

Figures are built with the object-oriented API (no ``pyplot``, no global figure registry) and
drawn under one lock, since matplotlib does not promise that its caches are thread-safe (the
API renders reports in a thread pool). Each function returns ``None`` when it has nothing to
draw.
"""

from __future__ import annotations

import base64
import io
import threading
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from structured_agents.report.figures import ReportFigures, TimeAxis

__all__ = ["COLORS", "Chart", "draw_charts"]

COLORS = {"ok": "#2f855a", "error": "#c53030", "line": "#2b6cb0", "max": "#90cdf4", "bar": "#4a5568"}
WIDTH_IN = 6.4
HEIGHT_IN = 3.0
TOP_TOOLS = 15
_LOCK = threading.Lock()
_SVG_METADATA: dict[str, str | None] = {"Creator": None, "Date": None, "Format": None, "Type": None}


@dataclass(frozen=True, slots=True)
class Chart:
    """One drawn chart."""

    key: str
    """Stable name (``throughput``, ``batch_sizes``...), the HTML id of its figure."""
    title: str
    caption: str
    """What is drawn, in a sentence."""
    data_uri: str | None
    """``data:image/svg+xml;base64,...``; None when there is nothing to draw."""


def _figure(height_in: float = HEIGHT_IN) -> tuple[Figure, Axes]:
    figure = Figure(figsize=(WIDTH_IN, height_in), layout="constrained")
    axes = figure.add_subplot()
    axes.spines[["top", "right"]].set_visible(False)
    axes.grid(axis="y", color="#e2e8f0", linewidth=0.8)
    axes.set_axisbelow(True)
    return figure, axes


def _svg_uri(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata=_SVG_METADATA)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _time_axes(axes: Axes, axis: TimeAxis, ylabel: str) -> None:
    axes.set_xlim(0, axis.bins * axis.bin_s / axis.scale)
    axes.set_xlabel(f"time since the first run started ({axis.unit})")
    axes.set_ylabel(ylabel)


def _legend(axes: Axes, *, reverse: bool = False) -> None:
    """A legend above the plot, right-aligned, so it never covers data."""
    axes.legend(
        loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=3, frameon=False, fontsize=9, reverse=reverse
    )


def _per_bin_label(axis: TimeAxis) -> str:
    """The bin width in the largest unit it fills ("5 s", not "0.0833333 min")."""
    for size, unit in ((3600.0, "h"), (60.0, "min"), (1.0, "s")):
        if axis.bin_s >= size:
            return f"{axis.bin_s / size:.3g} {unit}"
    return f"{axis.bin_s:.3g} s"


def _throughput(figures: ReportFigures) -> str | None:
    axis = figures.axis
    if axis is None or (not any(figures.succeeded_per_bin) and not any(figures.failed_per_bin)):
        return None
    figure, axes = _figure()
    edges = np.append(axis.lefts(), axis.bins * axis.bin_s / axis.scale)
    ok, bad = np.array(figures.succeeded_per_bin), np.array(figures.failed_per_bin)
    axes.stairs(ok + bad, edges, fill=True, color=COLORS["error"], label="failed")
    axes.stairs(ok, edges, fill=True, color=COLORS["ok"], label="succeeded")
    _time_axes(axes, axis, f"runs finished per {_per_bin_label(axis)}")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    _legend(axes, reverse=True)
    return _svg_uri(figure)


def _batch_sizes(figures: ReportFigures) -> str | None:
    axis = figures.axis
    mean = np.array(figures.batch_size_mean)
    if axis is None or not np.isfinite(mean).any():
        return None
    figure, axes = _figure()
    centres = axis.centres()
    axes.plot(centres, figures.batch_size_max, color=COLORS["max"], marker=".", label="largest")
    axes.plot(centres, mean, color=COLORS["line"], marker=".", label="mean")
    _time_axes(axes, axis, "requests per engine call")
    axes.set_ylim(bottom=0, top=max(1.0, float(np.nanmax(figures.batch_size_max))) * 1.15)
    _legend(axes)
    return _svg_uri(figure)


def _tokens(figures: ReportFigures) -> str | None:
    axis = figures.axis
    if axis is None or not any(figures.tokens_per_s):
        return None
    figure, axes = _figure()
    axes.fill_between(axis.centres(), figures.tokens_per_s, step="mid", color=COLORS["max"], alpha=0.6)
    axes.step(axis.centres(), figures.tokens_per_s, where="mid", color=COLORS["line"])
    _time_axes(axes, axis, "completion tokens per second")
    axes.set_ylim(bottom=0)
    return _svg_uri(figure)


def _latency(figures: ReportFigures) -> str | None:
    durations = np.array(figures.durations_s)
    if not durations.size:
        return None
    figure, axes = _figure()
    bins = min(40, max(1, len(np.histogram_bin_edges(durations, bins="auto")) - 1))
    axes.hist(durations, bins=bins, histtype="stepfilled", color=COLORS["bar"])
    for q, style in ((50, "--"), (95, ":")):
        value = float(np.percentile(durations, q))
        shown = f"{value:.3g}" if value < 1000 else f"{value:,.0f}"
        axes.axvline(value, color=COLORS["error"], linestyle=style, label=f"p{q} {shown} s")
    axes.set_xlabel("run duration (s)")
    axes.set_ylabel("runs")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    _legend(axes)
    return _svg_uri(figure)


def _turns(figures: ReportFigures) -> str | None:
    if not figures.turns_per_run:
        return None
    figure, axes = _figure()
    turns, runs = zip(*figures.turns_per_run.items(), strict=True)
    axes.bar(turns, runs, width=0.6, color=COLORS["bar"])
    axes.set_xticks(turns)
    axes.set_xlabel("model turns of the run")
    axes.set_ylabel("runs")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    return _svg_uri(figure)


def _tools(figures: ReportFigures) -> str | None:
    tools = figures.tools[:TOP_TOOLS]
    if not tools:
        return None
    figure, axes = _figure(max(1.8, 0.42 * len(tools) + 1.0))
    names = [tool.name for tool in tools][::-1]
    ok = np.array([tool.calls - tool.errors for tool in tools][::-1])
    bad = np.array([tool.errors for tool in tools][::-1])
    axes.barh(names, ok, color=COLORS["ok"], label="ok")
    axes.barh(names, bad, left=ok, color=COLORS["error"], label="error")
    for row, tool in enumerate(tools[::-1]):
        axes.annotate(
            f" {tool.error_rate:.0%} errors", (tool.calls, row), va="center", fontsize=8, color="#4a5568"
        )
    axes.set_xlim(0, max(tool.calls for tool in tools) * 1.3)
    axes.grid(axis="y", visible=False)
    axes.grid(axis="x", color="#e2e8f0", linewidth=0.8)
    axes.set_xlabel("calls")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    _legend(axes)
    return _svg_uri(figure)


def draw_charts(figures: ReportFigures) -> list[Chart]:
    """Every chart of the report, in page order."""
    axis = figures.axis
    per = f" per {_per_bin_label(axis)}" if axis is not None else ""
    bins = f", averaged over {_per_bin_label(axis)}" if axis is not None else ""
    specs = [
        ("throughput", "Runs finished over time", f"Runs that ended{per}, by outcome.", _throughput),
        (
            "batch_sizes",
            "Engine batch sizes",
            f"How many requests the engine decoded together with each model turn: mean and largest{per}.",
            _batch_sizes,
        ),
        ("tokens", "Tokens per second", f"Completion tokens the engine returned per second{bins}.", _tokens),
        ("latency", "Run duration", "Time from a run's start to its end, finished runs.", _latency),
        ("turns", "Turns per run", "Finished runs by the number of model turns they took.", _turns),
        ("tools", "Tool calls", f"Calls per tool and their errors (top {TOP_TOOLS} by calls).", _tools),
    ]
    if len(figures.turns_per_run) == 1:  # every run took as many turns: one bar says what its tile says
        specs = [spec for spec in specs if spec[0] != "turns"]
    with _LOCK:
        return [Chart(key, title, caption, draw(figures)) for key, title, caption, draw in specs]
