"""The user's check command (``sa run lint PATH --check "pytest -q"``), run on a copy of the
codebase with one file's proposed text, never on the user's files.

The command is a batch option: the operator gives it on the command line (``sa run``,
``sa enqueue``) and it is stored with the batch; a network caller cannot set it (``POST
/batches`` takes no options). It runs where the run finishes: in ``sa run``'s process, or on
the worker that takes the run's ``finish`` step (so that worker needs the codebase at the
batch's root and whatever the command needs, as it needs them to read the target).

:class:`CheckRunner` copies the codebase once into a temporary directory (leaving out ``.git``
and caches; a virtual environment inside it is linked, not copied), then for each try writes
the proposed text of the target file, drops that file's cached bytecode, and runs the command
with ``sh -c`` in the copy's root, in its own process group, killed after the timeout. The
command should import the code from its working directory (``python -m pytest`` puts it first
on ``sys.path``; a ``src`` layout needs ``PYTHONPATH=src`` in the command): an editable install
of the package would import the user's files instead of the copy.

Runs of the same command on one machine take turns (a lock file per command in the temporary
directory, held across processes): a suite that serves on a fixed port or writes a fixed path
fails or hangs beside a copy of itself (feedparser 6.0.14's tests serve feeds on port 8097;
two copies at once left one waiting for a server that never started until the timeout). The
time a run waits for its turn is not counted in its time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from structured_agents.tasks.errors import TaskError

__all__ = ["CHECK_OPTION", "CHECK_TIMEOUT_OPTION", "CheckCommand", "CheckOutcome", "CheckRunner"]

CHECK_OPTION = "check"
"""The batch option holding the check command."""
CHECK_TIMEOUT_OPTION = "check_timeout_s"
"""The batch option holding the check's time limit, in seconds."""
DEFAULT_TIMEOUT_S = 300.0
"""The check's time limit when the batch gives none."""
_SKIPPED = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".tox"}
)
"""Folders the copy leaves out: version control and caches."""
_OUTPUT_CHARS = 400
"""Characters of the command's output kept in a failure's reason."""


@dataclass(frozen=True, slots=True)
class CheckCommand:
    """A check command and its time limit."""

    command: str
    """Shell command (``sh -c``), run in the copy's root; exit status 0 means it passes."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Seconds one run may take; a run past it is killed and fails."""

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise TaskError("the check command is empty")
        if not self.timeout_s > 0:
            raise TaskError(f"the check's timeout must be > 0 seconds, got {self.timeout_s}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> CheckCommand | None:
        """The check a batch's options give, or None when they give none."""
        command = options.get(CHECK_OPTION)
        if command is None:
            return None
        if not isinstance(command, str):
            raise TaskError(f"batch option {CHECK_OPTION!r} must be a command string, got {command!r}")
        timeout = options.get(CHECK_TIMEOUT_OPTION, DEFAULT_TIMEOUT_S)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool):
            raise TaskError(f"batch option {CHECK_TIMEOUT_OPTION!r} must be seconds, got {timeout!r}")
        return cls(command, float(timeout))

    def to_options(self) -> dict[str, Any]:
        """The batch options that give this check."""
        return {CHECK_OPTION: self.command, CHECK_TIMEOUT_OPTION: self.timeout_s}


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """One run of the check."""

    passed: bool
    """Whether the command exited with status 0 within its time limit."""
    reason: str
    """Why it failed (exit status or timeout, and the end of its output); empty when it passed."""
    duration_s: float
    """Wall time of the run."""


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {name for name in names if name in _SKIPPED}


def _copy_tree(root: Path, destination: Path) -> None:
    """Copy ``root`` to ``destination``: its virtual environments are linked, not copied."""
    destination.mkdir()
    for entry in root.iterdir():
        target = destination / entry.name
        if entry.name in _SKIPPED:
            continue
        if entry.is_dir() and not entry.is_symlink():
            if (entry / "pyvenv.cfg").is_file():
                target.symlink_to(entry.resolve(), target_is_directory=True)
            else:
                shutil.copytree(entry, target, symlinks=True, ignore=_ignore)
        else:
            shutil.copy2(entry, target, follow_symlinks=False)


class CheckRunner:
    """Runs a check on a temporary copy of the codebase at ``root`` with ``path``'s text replaced.

    A context manager: the copy is made on the first :meth:`run` and removed on exit.
    """

    def __init__(self, check: CheckCommand, root: Path, path: str) -> None:
        self.check = check
        self.root = root
        self.path = path
        self.runs = 0
        """Runs of the check so far."""
        self.seconds = 0.0
        """Their wall time."""
        self._temporary: tempfile.TemporaryDirectory[str] | None = None
        self._copy: Path | None = None

    def __enter__(self) -> CheckRunner:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()
            self._temporary = self._copy = None

    def _copied(self) -> Path:
        if self._copy is None:
            self._temporary = tempfile.TemporaryDirectory(prefix="sa-check-")
            copy = Path(self._temporary.name) / self.root.name
            try:
                _copy_tree(self.root, copy)
            except OSError as exc:
                raise TaskError(f"could not copy {self.root} to run the check: {exc}") from exc
            self._copy = copy
        return self._copy

    def run(self, text: str) -> CheckOutcome:
        """Run the check with ``text`` as the target file's content."""
        copy = self._copied()
        target = copy / self.path
        target.write_bytes(text.encode("utf-8"))
        for cached in (target.parent / "__pycache__").glob(f"{target.stem}.*"):
            cached.unlink(missing_ok=True)  # same size and second as an earlier try: stale bytecode
        self.runs += 1
        with _turn(self.check.command):
            started = time.monotonic()
            try:
                return self._outcome(copy, started)
            finally:
                self.seconds += _since(started)

    def _outcome(self, copy: Path, started: float) -> CheckOutcome:
        process = subprocess.Popen(
            ["/bin/sh", "-c", self.check.command],
            cwd=copy,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=self.check.timeout_s)
        except subprocess.TimeoutExpired:
            _kill(process)
            output, _ = process.communicate()
            tail = _tail(output)
            return CheckOutcome(False, f"timed out after {self.check.timeout_s:g}s{tail}", _since(started))
        finally:
            if process.poll() is None:  # interrupted: leave nothing running
                _kill(process)
                process.wait()
        if process.returncode == 0:
            return CheckOutcome(True, "", _since(started))
        return CheckOutcome(False, f"exit {process.returncode}{_tail(output)}", _since(started))


@contextlib.contextmanager
def _turn(command: str) -> Iterator[None]:
    """Wait for ``command``'s turn on this machine and hold it (see the module docstring); where
    its lock file cannot be opened (another user's), the run goes on without it."""
    digest = hashlib.sha256(command.encode("utf-8")).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"sa-check-{digest}.lock"
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the command's whole process group (the shell and what it started)."""
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(process.pid, signal.SIGKILL)


def _since(started: float) -> float:
    return time.monotonic() - started


def _tail(output: bytes) -> str:
    text = " ".join(output.decode("utf-8", "replace").split())
    return f": ...{text[-_OUTPUT_CHARS:]}" if text else ""
