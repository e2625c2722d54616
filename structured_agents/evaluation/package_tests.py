"""Run a package's own tests against a copy of its code, and read pytest's counts.

pytest runs in the project root with the folder the package imports from first on
``PYTHONPATH`` (so the copy is what the tests import, not an installed release), with the
project's own pytest configuration but none of its ``addopts`` (they name plugins such as
coverage that are not installed here) and no plugin loaded from entry points
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``): this interpreter's pytest and nothing else. pytest's own
deprecation warnings are ignored: a package whose configuration turns warnings into errors
(``filterwarnings = error``, as click 8.1.7's does) would otherwise fail to collect under a
newer pytest than it was released against. A package
whose tests need more than that shows up as ``cannot run`` with pytest's last words, never
as a pass.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from structured_agents.evaluation.layout import source_root

__all__ = ["TESTS_TIMEOUT_S", "TestsOutcome", "pytest_check_command", "run_package_tests"]

TESTS_TIMEOUT_S = 300
"""Longest one run of a package's tests may take."""

TestsStatus = Literal["ran", "no tests", "cannot run", "timed out"]
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")
_SUMMARY = re.compile(r"^=*\s*(\d+ \w+.*) in [\d.]+s")


@dataclass(frozen=True, slots=True)
class TestsOutcome:
    """What one run of a package's tests said."""

    __test__ = False  # not a pytest test class

    status: TestsStatus
    """``ran`` (pytest counted tests, perhaps only collection errors), ``no tests`` (none
    collected), ``cannot run`` or ``timed out``."""
    passed: int = 0
    failed: int = 0
    errors: int = 0
    """Errors while collecting or setting up tests."""
    skipped: int = 0
    detail: str = ""
    """pytest's summary line, or why the tests could not run."""
    seconds: float = 0.0
    """Wall time of the run."""

    @property
    def usable(self) -> bool:
        """Whether the tests ran, some passed, and none failed to be collected."""
        return self.status == "ran" and self.passed > 0 and self.errors == 0

    def short(self) -> str:
        """``passed/failed`` (``+Ne`` for errors), or the status."""
        if self.status != "ran":
            return self.status
        return f"{self.passed}/{self.failed}" + (f"+{self.errors}e" if self.errors else "")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _counts(output: str) -> dict[str, int]:
    summary = next((m.group(1) for line in reversed(output.splitlines()) if (m := _SUMMARY.match(line))), "")
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for number, kind in _COUNT.findall(summary):
        key = "errors" if kind.startswith("error") else kind
        if key in counts:
            counts[key] += int(number)
    return counts


_PYTEST = (
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-o",
    "addopts=",
    "-W",
    "ignore::pytest.PytestDeprecationWarning",
)
"""pytest as the evaluation runs it (see the module docstring)."""


def pytest_check_command(root: Path) -> str:
    """The project's tests as the lint task's check command (``sa eval lint --check-tests``):
    run as :func:`run_package_tests` runs them, from whatever folder holds a copy of the
    project, stopping at the first failure (only pass or fail counts)."""
    source = source_root(root).relative_to(root).as_posix()
    variables = f"PYTHONPATH={shlex.quote(source)} PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1"
    return f"{variables} {shlex.join([sys.executable, *_PYTEST, '-x', '--rootdir', '.'])}"


def run_package_tests(root: Path) -> TestsOutcome:
    """Run the tests of the project at ``root`` (see the module docstring)."""
    command = [sys.executable, *_PYTEST, "--rootdir", str(root)]
    path = [str(source_root(root)), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    env |= {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=TESTS_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return TestsOutcome("timed out", detail=f"over {TESTS_TIMEOUT_S} s", seconds=TESTS_TIMEOUT_S)
    seconds = time.monotonic() - started
    output = done.stdout + done.stderr
    last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
    if done.returncode == 5:
        return TestsOutcome("no tests", detail=last, seconds=seconds)
    counts = _counts(done.stdout)
    if done.returncode not in (0, 1, 2) or not any(counts.values()):
        return TestsOutcome(
            "cannot run", detail=f"pytest exit {done.returncode}: {last[:300]}", seconds=seconds
        )
    return TestsOutcome("ran", **counts, detail=last[:300], seconds=seconds)
