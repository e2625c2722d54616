"""The report page: one self-contained HTML document rendered with Jinja2.

Nothing on the page is fetched: the styles are inline, the charts are ``data:`` images, and a
Content-Security-Policy (``default-src 'none'``) makes the browser refuse anything else, so
the file can be mailed or archived as it is. Every value from the store is escaped
(autoescape); diffs are shown line by line with a class per kind of line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from structured_agents.report.charts import Chart
from structured_agents.report.data import BatchReportData
from structured_agents.report.figures import ReportFigures
from structured_agents.report.quality import QualityReport

__all__ = ["DIFF_LINES_SHOWN", "FAILED_RUNS_LISTED", "diff_lines", "render_page"]

FAILED_RUNS_LISTED = 200
"""Failed runs listed (with an anchor each); the reasons table counts them all."""
DIFF_LINES_SHOWN = 120
"""Lines of one diff shown; the rest are counted."""
RUN_LINKS_PER_REASON = 5


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a unified diff and its kind: ``file``, ``hunk``, ``add``, ``del`` or ``context``."""

    kind: str
    text: str


def diff_lines(diff: str, limit: int = DIFF_LINES_SHOWN) -> tuple[list[DiffLine], int]:
    """The first ``limit`` lines of ``diff`` with their kinds, and how many lines were left out."""
    lines = diff.splitlines()
    shown = []
    for line in lines[:limit]:
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "context")
        shown.append(DiffLine(kind, line))
    return shown, max(0, len(lines) - limit)


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 120:
        return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"
    if value < 7200:
        return f"{int(value // 60)} min {int(value % 60)} s"
    return f"{int(value // 3600)} h {int(value % 3600 // 60)} min"


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _when(value: datetime | None) -> str:
    return "–" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _identity(data: BatchReportData) -> list[tuple[str, str]]:
    batch, setup, options = data.batch, data.setup, dict(data.batch.options)
    rows = [
        ("bundle", f"{batch.bundle_name} {batch.bundle_version}"),
        ("bundle path", str(options.pop("bundle", "–"))),
        ("codebase", batch.root_path),
        ("engine", str(options.pop("engine", "not recorded"))),
        ("model", str(options.pop("model", None) or setup.model or "not recorded")),
        ("model plugin", setup.plugin or "–"),
        ("grammar", ", ".join(setup.grammars) or "none"),
        ("tools", ", ".join(setup.tools) or "–"),
        ("max turns", "–" if setup.max_turns is None else str(setup.max_turns)),
        ("status", batch.status),
        ("created", _when(batch.created_at)),
    ]
    return rows + [(str(key), str(value)) for key, value in sorted(options.items())]


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("structured_agents.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(seconds=_seconds, number=_number, when=_when)
    return env


_ENV = _environment()


def _names(data: BatchReportData) -> dict[str, str]:
    return {run.run_id: run.qualname for run in data.runs}


def render_page(
    data: BatchReportData,
    figures: ReportFigures,
    charts: Sequence[Chart],
    *,
    quality: QualityReport | None,
    generated_at: datetime,
) -> str:
    """The HTML document of the report."""
    failed_listed = data.failures[:FAILED_RUNS_LISTED]
    return _ENV.get_template("report.html.j2").render(
        batch=data.batch,
        identity=_identity(data),
        summary=figures.summary,
        charts=charts,
        tools=figures.tools,
        groups=figures.failure_groups,
        failed=failed_listed,
        failed_total=len(data.failures),
        anchored={failure.run_id for failure in failed_listed},
        links_per_reason=RUN_LINKS_PER_REASON,
        quality=quality,
        results=[(result, *diff_lines(result.diff)) for result in data.result_sample],
        result_counts=data.result_counts,
        review=figures.review,
        names=_names(data),
        generated_at=generated_at,
    )
