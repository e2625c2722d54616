"""The harness's reports as a Rich table (fits 80 columns)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from structured_agents.harness.measure import CaseReport, Verdict, percentile

__all__ = ["render_table"]

_COUNTS: tuple[Verdict, ...] = ("parse_failure", "no_call", "invalid_call", "cut_off")


def render_table(reports: Sequence[CaseReport]) -> Table:
    """One row per bundle and grammar setting."""
    table = Table(
        title="tool-call harness",
        caption="outputs: valid calls / parse failures / no call / invalid calls / cut off by the token "
        "limit; latency: from submission to the end of the request's batch",
        box=None,
        collapse_padding=True,
        pad_edge=False,
    )
    table.add_column("bundle", no_wrap=True)
    table.add_column("grammar", no_wrap=True)
    for header in ("n", "valid", "parse", "none", "bad", "cut", "tok/s", "p50/p90/p99 s"):
        table.add_column(header, justify="right", no_wrap=True)
    for report in reports:
        latencies = "/".join(f"{percentile(report.latencies_s, q):.2f}" for q in (50, 90, 99))
        table.add_row(
            report.bundle,
            report.grammar or "off",
            str(report.prompts),
            f"{report.valid_rate:.0%}",
            *(str(report.count(verdict)) for verdict in _COUNTS),
            f"{report.tokens_per_s:.1f}",
            latencies,
        )
    return table
