"""Named pipes, links and oversized files in a codebase: every file the tasks read from it is
read only as a regular file, so discovery and a worker's run end promptly with a clear error or
without the file, never waiting on a pipe's writer."""

from __future__ import annotations

import errno
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from structured_agents.jobs import DiscoveryError
from structured_agents.jobs.source import read_regular
from structured_agents.tasks import ruff
from structured_agents.tasks.base import read_target
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.imported_from import imported_names
from structured_agents.tasks.lint import discover_lint_jobs

T = TypeVar("T")
PROMPT_S = 60.0
"""Far more than any of these takes; a read waiting on a pipe never ends."""


def promptly(call: Callable[[], T]) -> T:
    """What ``call`` returns (or raises), failing the test where it has not ended in
    :data:`PROMPT_S` (the blocked thread is left behind: a daemon)."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # re-raised in the test's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(PROMPT_S)
    assert outcome, f"still waiting after {PROMPT_S:.0f} s"
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


def test_read_regular_reads_a_regular_file_and_refuses_anything_else(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "big.py").write_bytes(b"#" * 101)

    assert read_regular(tmp_path / "a.py") == b"x = 1\n"
    assert read_regular(tmp_path / "link.py", follow=True) == b"x = 1\n"
    refused = {
        "pipe.py": "not a regular file",
        "link.py": "a symbolic link, not followed",
        "big.py": "larger than 100 bytes",
    }
    for name, why in refused.items():
        with pytest.raises(OSError) as caught:
            promptly(lambda name=name: read_regular(tmp_path / name, 100))  # type: ignore[misc]
        assert caught.value.strerror == why
    with pytest.raises(OSError) as caught:
        read_regular(tmp_path, 100)
    assert caught.value.errno in (errno.EINVAL, errno.EISDIR)
    with pytest.raises(OSError):
        promptly(lambda: read_regular(tmp_path / "pipe.py", follow=True))


def test_the_modules_importing_from_a_module_are_read_past_a_pipe(tmp_path: Path) -> None:
    (tmp_path / "compat.py").write_text("from urllib.parse import quote\n")
    (tmp_path / "user.py").write_text("from compat import quote\n")
    os.mkfifo(tmp_path / "waiting.py")

    assert promptly(lambda: imported_names(tmp_path, "compat.py")) == {"quote"}


@pytest.fixture
def codebase(tmp_path: Path) -> Path:
    root = tmp_path / "codebase"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "flags.py").write_text("def known(email):\n    return email != None\n")
    (root / "ruff.toml").write_text('[lint]\nselect = ["E7"]\n')
    return root


@pytest.mark.parametrize("where", ["pyproject.toml", "pkg/pyproject.toml", "pkg/ruff.toml", "pkg/.ruff.toml"])
def test_a_pipe_where_ruff_reads_its_configuration_is_refused_by_name(codebase: Path, where: str) -> None:
    """Ruff, reading a ``pyproject.toml`` that is a named pipe, waited for ever (and ``sa
    serve`` runs discovery while it answers the request)."""
    os.mkfifo(codebase / where)

    with pytest.raises(DiscoveryError, match=rf"^{where}: not a regular file"):
        promptly(lambda: discover_lint_jobs(codebase))

    (codebase / where).unlink()
    (codebase / where).symlink_to(codebase / "ruff.toml")  # a link to a file is ruff's to follow
    assert [job.path for job in promptly(lambda: discover_lint_jobs(codebase))] == ["pkg/flags.py"]


def test_pipes_among_the_files_read_for_settings_and_sources_are_passed_over(codebase: Path) -> None:
    """setup.py, setup.cfg, tox.ini, .flake8, PKG-INFO, requirements and .gitignore files are read
    for the target version, the flake8 config and what the codebase installs."""
    for name in ("setup.py", "setup.cfg", "tox.ini", ".flake8", "PKG-INFO", "requirements.txt", ".gitignore"):
        os.mkfifo(codebase / name)
    os.mkfifo(codebase / "pkg" / "waiting.py")
    os.mkfifo(codebase / "pkg" / ".gitignore")

    jobs = promptly(lambda: discover_lint_jobs(codebase))

    assert [job.path for job in jobs] == ["pkg/flags.py"]


def test_a_target_that_became_a_pipe_after_discovery_fails_its_job_with_the_reason(codebase: Path) -> None:
    [job] = discover_lint_jobs(codebase)
    target = codebase / job.path
    target.unlink()
    os.mkfifo(target)

    with pytest.raises(TaskError, match=r"^cannot read pkg/flags.py: not a regular file$"):
        promptly(lambda: read_target(job, codebase))

    target.unlink()
    shutil.copy(codebase / "ruff.toml", target)
    with pytest.raises(TaskError, match="changed since the job was discovered"):
        read_target(job, codebase)


def test_ruff_waiting_on_a_pipe_made_after_discovery_is_stopped_with_the_reason(
    codebase: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's ruff runs (on the text through stdin) read the configuration again."""
    (codebase / "ruff.toml").unlink()  # a ruff.toml beside it, ruff would not read the pipe
    os.mkfifo(codebase / "pyproject.toml")
    monkeypatch.setattr(ruff, "TIMEOUT_S", 2.0)

    with pytest.raises(TaskError, match=r"^ruff did not finish in 2 s on pkg/flags.py$"):
        promptly(lambda: ruff.ruff_safe_fixes(codebase, "pkg/flags.py", "import os\n"))
    with pytest.raises(DiscoveryError, match=r"^ruff did not finish in 2 s in "):
        promptly(lambda: ruff.ruff_findings(codebase, ["pkg/flags.py"]))
