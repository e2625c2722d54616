"""Prints how long each phase of the compose stack test took, at the end of the session."""

from __future__ import annotations

import pytest
from compose_stack import TIMINGS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per phase, and the total, when the compose test ran."""
    if not TIMINGS:
        return
    terminalreporter.section("compose stack timings")
    for phase, seconds in TIMINGS.items():
        terminalreporter.write_line(f"{seconds:8.1f} s  {phase}")
    terminalreporter.write_line(f"{sum(TIMINGS.values()):8.1f} s  total")
