"""The check command runs on a temporary copy of the codebase with one file's proposed text."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from structured_agents.tasks import TaskError
from structured_agents.tasks.check import CheckCommand, CheckOutcome, CheckRunner

IMPORT_CHECK = f"env -u PYTHONDONTWRITEBYTECODE {sys.executable} -c 'import calc; assert calc.double(2) == 4'"
"""Imports the module under test, writing its bytecode cache (which CI's environment may turn off)."""


@pytest.fixture
def codebase(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "calc.py").write_text("def double(x):\n    return 2 * x\n")
    return root


def test_the_check_sees_the_proposed_text_and_the_users_files_stay_as_they_are(codebase: Path) -> None:
    with CheckRunner(CheckCommand(IMPORT_CHECK), codebase, "calc.py") as runner:
        good = runner.run("def double(x):\n    return x + x\n")
        bad = runner.run("def double(x):\n    return x * 3\n")
        again = runner.run(
            "def double(x):\n    return x * 2\n"
        )  # same size and second: bytecode is not reused
        copy = runner._copy
        assert copy is not None and not (copy / ".git").exists()

    assert (good.passed, bad.passed, again.passed, runner.runs) == (True, False, True, 3)
    assert bad.reason.startswith("exit 1: ...") and "AssertionError" in bad.reason
    assert (codebase / "calc.py").read_text() == "def double(x):\n    return 2 * x\n"
    assert not copy.exists()  # removed on exit


def test_a_check_past_its_timeout_is_killed_and_fails(codebase: Path) -> None:
    check = CheckCommand(f"echo started; {sys.executable} -c 'import time; time.sleep(30)'", timeout_s=1)
    started = time.monotonic()

    with CheckRunner(check, codebase, "calc.py") as runner:
        outcome = runner.run("x = 1\n")

    assert not outcome.passed and outcome.reason == "timed out after 1s: ...started"
    assert time.monotonic() - started < 15


def test_runs_of_one_command_take_turns(codebase: Path, tmp_path: Path) -> None:
    """feedparser 6.0.14's suite serves on port 8097: two copies at once, and one waits for a
    server that never starts. Here the command holds a fixed path while it runs and fails
    when it finds the path held: each of four runs at once passes, one after another."""
    busy = tmp_path / "busy"
    check = CheckCommand(f"mkdir {busy} && sleep 0.3 && rmdir {busy}", timeout_s=30)
    outcomes: list[CheckOutcome] = []

    def run() -> None:
        with CheckRunner(check, codebase, "calc.py") as runner:
            outcomes.append(runner.run("x = 1\n"))

    threads = [threading.Thread(target=run) for _ in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [outcome.passed for outcome in outcomes] == [True] * 4
    assert time.monotonic() - started >= 1.2  # one after another
    assert all(outcome.duration_s < 1.2 for outcome in outcomes)  # the wait is not the run's


def test_a_virtual_environment_inside_the_codebase_is_linked_not_copied(codebase: Path) -> None:
    (codebase / ".venv" / "bin").mkdir(parents=True)
    (codebase / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (codebase / ".venv" / "bin" / "tool").write_text("#!/bin/sh\necho from the venv\n")
    (codebase / ".venv" / "bin" / "tool").chmod(0o755)

    with CheckRunner(CheckCommand(".venv/bin/tool"), codebase, "calc.py") as runner:
        outcome = runner.run("x = 1\n")
        assert runner._copy is not None and (runner._copy / ".venv").is_symlink()

    assert outcome.passed


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"check": ["pytest"]}, "must be a command string"),
        ({"check": "  "}, "the check command is empty"),
        ({"check": "pytest", "check_timeout_s": "ten"}, "must be seconds"),
        ({"check": "pytest", "check_timeout_s": 0}, "must be > 0 seconds"),
    ],
)
def test_malformed_check_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(TaskError, match=message):
        CheckCommand.from_options(options)


def test_check_options_round_trip() -> None:
    check = CheckCommand("python -m pytest -q", 60)
    assert CheckCommand.from_options(check.to_options()) == check
    assert CheckCommand.from_options({"bundle": "lint"}) is None
