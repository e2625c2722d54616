"""An evaluation report as Rich tables that fit 100 columns, with an ``all`` row pooling the
packages, then the failures by reason and the most leaked words."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from structured_agents.evaluation.failures import count_reasons
from structured_agents.evaluation.package_tests import TestsOutcome
from structured_agents.evaluation.results import DocstringPackageResult, EvalReport, LintPackageResult

__all__ = ["WIDTH", "render_report"]

WIDTH = 100
"""Columns the report is laid out for."""


_TIMES = ("wall s", "s/job")
_DOCSTRING_COLUMNS = (
    "package",
    "targets",
    "doc",
    "clean",
    "flag",
    "failed",
    "cut",
    "copy",
    "rougeL",
    "leak",
    "names",
    "params",
    *_TIMES,
)
_LINT_COLUMNS = (
    "package",
    "ruff",
    "python",
    "files",
    "before",
    "ruff",
    "agent",
    "=ruff",
    "tests",
    "ruff",
    "agent",
    *_TIMES,
)


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(title: str, caption: str, headers: Sequence[str]) -> Table:
    table = Table(
        title=title, caption=caption, caption_justify="left", box=None, collapse_padding=True, pad_edge=False
    )
    table.add_column(headers[0], no_wrap=True, max_width=22, overflow="ellipsis")
    for header in headers[1:]:
        table.add_column(header, justify="right", no_wrap=True)
    return table


def _pooled_docstrings(packages: Sequence[DocstringPackageResult]) -> DocstringPackageResult:
    return DocstringPackageResult(
        "all",
        sum(p.files for p in packages),
        sum(p.candidates for p in packages),
        tuple(t for p in packages for t in p.targets),
        sum(p.wall_s for p in packages),
    )


def _docstring_table(report: EvalReport, packages: Sequence[DocstringPackageResult]) -> Table:
    table = _table(
        f"sa eval docstring · {report.bundle} · {report.engine}",
        "targets: evaluated/had a docstring; doc: got one; clean: got one the verifier found "
        "nothing wrong with (what sa apply applies); flag: of those written, flagged for review; "
        "cut: model turns cut off by the token limit; copy: a submission refused as a copy; "
        "rougeL: first line vs the original's; leak: carries a word of the bundle's text not in "
        "its file; names: parameter entries naming a real parameter; params: real parameters "
        "described, agent/original",
        _DOCSTRING_COLUMNS,
    )
    rows = [*packages, _pooled_docstrings(packages)] if len(packages) > 1 else packages
    for package in rows:
        table.add_row(
            package.package,
            f"{len(package.targets)}/{package.candidates}",
            _pct(package.documented_rate),
            _pct(package.clean_rate),
            _pct(package.flagged_rate),
            str(len(package.targets) - len(package.written)),
            str(package.cut_off_turns),
            str(package.refused_targets),
            _num(package.rouge_l, 2),
            _pct(package.leaked_rate),
            _pct(package.entries_real_rate),
            f"{_pct(package.real_documented_rate)}/{_pct(package.original_real_documented_rate)}",
            _num(package.wall_s, 0),
            _num(package.seconds_per_job),
        )
    return table


def _tests(outcome: TestsOutcome | None) -> str:
    return "-" if outcome is None else outcome.short()


def _lint_table(report: EvalReport, packages: Sequence[LintPackageResult]) -> Table:
    table = _table(
        f"sa eval lint · {report.bundle} · {report.engine} · {report.tool_version}",
        "ruff: the package's own config (+defaults: it selects no rules, ruff's E4,E7,E9,F pinned; "
        "flake8: its flake8 config translated), or the fixed rule set; python: the lowest "
        "supported, then the files using what it lacks after ruff --fix alone/after the agent; "
        "files: evaluated/with findings; "
        "findings as released, after ruff --fix alone, after the agent; =ruff: files identical to "
        "ruff --fix alone; tests passed/failed (-N: test modules left out, they import a package "
        "not installed here; ~N: tests left out, they fail as released; cannot run: they need "
        "more than pytest, or than unittest where the package runs that)",
        _LINT_COLUMNS,
    )
    for package in packages:
        table.add_row(
            package.package,
            package.ruff_config,
            f"{_lowest(package)} {len(package.breaks_ruff)}/{len(package.breaks_agent)}",
            f"{len(package.files)}/{package.candidates}",
            str(package.before),
            str(package.ruff_only),
            str(package.agent),
            str(package.same_as_ruff),
            _tests(package.tests_before),
            _tests(package.tests_ruff),
            _tests(package.tests_agent),
            _num(package.wall_s, 0),
            _num(package.seconds_per_job),
        )
    return table


def _lowest(package: LintPackageResult) -> str:
    return package.target.split("+", 1)[0].removeprefix("Python ") if "+ (" in package.target else "-"


def _breaks(packages: Sequence[LintPackageResult]) -> Text:
    compiled = ", ".join(f"{p.package} with {p.interpreter}" for p in packages if p.interpreter)
    listed = [
        f"{p.package} {stage}: {what}"
        for p in packages
        for stage, found in (("ruff", p.breaks_ruff), ("agent", p.breaks_agent))
        for what in found
    ]
    checked = f" (compiled: {compiled})" if compiled else " (no interpreter of it found: ruff's checks alone)"
    return Text("breaks the lowest supported Python" + checked + ": " + ("; ".join(listed) or "nothing"))


def _failures(report: EvalReport) -> Text:
    reasons: Counter[str] = Counter()
    for package in report.packages:
        reasons.update(package.failures)
    listed = ", ".join(f"{reason} ×{count}" for reason, count in count_reasons(reasons.elements()).items())
    return Text(f"failures by reason: {listed or 'none'}")


def _flags(packages: Sequence[DocstringPackageResult]) -> Text:
    reasons: Counter[str] = Counter()
    for package in packages:
        reasons.update(package.flag_reasons)
    listed = ", ".join(f"{reason} ×{count}" for reason, count in reasons.most_common())
    return Text(f"flagged for review, by reason: {listed or 'none'}")


def _leaks(packages: Sequence[DocstringPackageResult]) -> Text:
    leaked = Counter(word for package in packages for target in package.written for word in target.leaked)
    listed = ", ".join(f"{word} ×{count}" for word, count in leaked.most_common(12))
    return Text(f"most leaked words: {listed or 'none'}")


def _errors(report: EvalReport) -> Text:
    listed = "; ".join(f"{error.package}: {error.error}" for error in report.errors)
    return Text(f"not evaluated: {listed}", style="red")


def render_report(report: EvalReport) -> RenderableType:
    """The report's table, failures, (docstring) leaked words and the packages that could not be
    evaluated."""
    timing = Text(
        f"engine load {report.engine_load_s:.1f} s; whole evaluation {report.wall_s:.0f} s; "
        f"concurrency {report.concurrency}; limit {report.limit or 'none'}"
        + (f"; docstrings stripped: {report.strip}" if report.task == "docstring" else "")
    )
    docstrings = [p for p in report.packages if isinstance(p, DocstringPackageResult)]
    lints = [p for p in report.packages if isinstance(p, LintPackageResult)]
    parts: list[RenderableType] = []
    if docstrings:
        parts += [
            _docstring_table(report, docstrings),
            _failures(report),
            _flags(docstrings),
            _leaks(docstrings),
        ]
    if lints:
        parts += [_lint_table(report, lints), _failures(report), _breaks(lints)]
    if report.errors:
        parts.append(_errors(report))
    return Group(*parts, timing)
