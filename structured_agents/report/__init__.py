"""The batch report: one self-contained HTML page showing how a batch went (``sa report``).

::

    with SqlStore(url) as store:
        html = build_report(store, batch_id, quality=load_quality(Path("eval.json")))

Modules, in the order a report is made: :mod:`~.data` reads the batch's records through the
store, :mod:`~.figures` turns them into numbers, :mod:`~.charts` draws those with matplotlib
(SVG, embedded as ``data:`` images), :mod:`~.page` renders the page with Jinja2;
:mod:`~.quality` reads the optional quality section an evaluation wrote.
"""

from __future__ import annotations

from datetime import UTC, datetime

from structured_agents.report.charts import Chart, draw_charts
from structured_agents.report.data import DIFF_SAMPLE, BatchReportData, load_report_data
from structured_agents.report.figures import FailureGroup, ReportFigures, Summary, TimeAxis, compute_figures
from structured_agents.report.page import render_page
from structured_agents.report.quality import QualityFileError, QualityMetric, QualityReport, load_quality
from structured_agents.store import Store

__all__ = [
    "BatchReportData",
    "Chart",
    "FailureGroup",
    "QualityFileError",
    "QualityMetric",
    "QualityReport",
    "ReportFigures",
    "Summary",
    "TimeAxis",
    "build_report",
    "compute_figures",
    "draw_charts",
    "load_quality",
    "load_report_data",
]


def build_report(
    store: Store, batch_id: str, *, quality: QualityReport | None = None, diff_sample: int = DIFF_SAMPLE
) -> str:
    """The HTML report of batch ``batch_id`` (``RecordNotFoundError`` for an unknown batch)."""
    data = load_report_data(store, batch_id, diff_sample=diff_sample)
    figures = compute_figures(data)
    return render_page(data, figures, draw_charts(figures), quality=quality, generated_at=datetime.now(UTC))
