"""The packages a package's tests import that this interpreter lacks, installed beside it.

A package's tests import the package, and the package imports what it requires: jsonpatch
1.33's ``tests.py`` needs ``jsonpointer``. Without it the tests cannot be collected, no check
runs, and every unsafe fix is the model's vote. So the requirements its metadata declares
(``Requires-Dist`` in ``PKG-INFO``, else setuptools' ``*.egg-info/requires.txt``; for no
extra, where their markers hold for this interpreter), and those of its tests' requirements
file but pytest and its plugins, that this interpreter does not have in a version they
accept are installed by pip into a folder of the scratch copy. That folder goes
on ``PYTHONPATH`` after the package's own, in every run of its tests and in the check
(:class:`~structured_agents.evaluation.package_tests.TestsOutcome`'s ``dependencies``).
Nothing is installed into this interpreter. With ``--from-dir``, pip looks in that folder
only (no network). Where pip fails, a warning names what was missing, and the tests run
without it, as before (the modules that need it left out).
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import logging
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

__all__ = ["install_dependencies", "missing_requirements"]

logger = logging.getLogger(__name__)

_TIMEOUT_S = 300
"""Longest pip may take to install a package's requirements."""


def _installed(requirement: Requirement) -> bool:
    try:
        version = importlib.metadata.version(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return requirement.specifier.contains(version, prereleases=True)


def _egg_requires(text: str) -> list[str]:
    """The requirements of a setuptools ``requires.txt`` for no extra: the lines before any
    section, and those of a ``[:marker]`` section with its marker."""
    found: list[str] = []
    marker: str | None = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            extra, _, condition = line[1:-1].partition(":")
            marker = condition.strip() if not extra.strip() else None
        elif line and not line.startswith("#") and marker is not None:
            found.append(f"{line}; {marker}" if marker else line)
    return found


_TEST_FILES = (
    "requirements-test.txt",
    "requirements-tests.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "test_requirements.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
)
"""Where projects list what their tests need beyond the package (humanfriendly 10.0's
``requirements-tests.txt``: ``capturer``, ``coloredlogs``)."""
_RUNNER = re.compile(r"^(pytest|coverage)([-_.\[\s;<>=!~]|$)", re.IGNORECASE)
"""pytest and its plugins: the tests run under this interpreter's pytest, plugins not loaded."""


def _requirement_lines(text: str) -> list[str]:
    """The requirements of a pip requirements file (no options, includes or comments)."""
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-"))]


def _declared(root: Path) -> list[str]:
    """What the project at ``root`` and its tests require: ``Requires-Dist`` in its
    ``PKG-INFO``, else its ``*.egg-info/requires.txt`` (jsonpatch 1.33's ``PKG-INFO`` names
    none; setuptools wrote ``jsonpointer>=1.9`` there), and its tests' requirements file
    (:data:`_TEST_FILES`), but for pytest and its plugins."""
    declared: list[str] = []
    info = root / "PKG-INFO"
    if info.is_file():
        metadata = email.parser.Parser().parsestr(info.read_text(encoding="utf-8", errors="replace"))
        declared = [str(line) for line in metadata.get_all("Requires-Dist") or []]
    eggs = [*sorted(root.glob("*.egg-info/requires.txt")), *sorted(root.glob("src/*.egg-info/requires.txt"))]
    if not declared and eggs:
        declared = _egg_requires(eggs[0].read_text(encoding="utf-8", errors="replace"))
    for name in _TEST_FILES:
        tests = root / name
        if tests.is_file():
            text = tests.read_text(encoding="utf-8", errors="replace")
            declared += [line for line in _requirement_lines(text) if not _RUNNER.match(line)]
    return declared


def missing_requirements(root: Path) -> list[str]:
    """The requirements the project at ``root`` declares (:func:`_declared`) for no extra,
    whose markers hold here, that this interpreter does not satisfy (see the module docstring)."""
    missing = []
    for line in _declared(root):
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        if not _installed(requirement):
            missing.append(str(requirement))
    return missing


def install_dependencies(root: Path, folder: Path, from_dir: Path | None = None) -> tuple[str, ...]:
    """The project at ``root``'s :func:`missing_requirements` installed by pip into ``folder``:
    ``(folder,)`` when there were some and pip installed them, else empty (none missing, or pip
    failed: logged). ``from_dir``: pip looks there only."""
    missing = missing_requirements(root)
    if not missing:
        return ()
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    command += ["--no-input", "--target", str(folder)]
    if from_dir is not None:
        command += ["--no-index", "--find-links", str(from_dir)]
    try:
        done = subprocess.run(
            [*command, *missing], capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        logger.warning("could not install %s for the tests in %s: %s", ", ".join(missing), root, error)
        return ()
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        logger.warning("could not install %s for the tests in %s: %s", ", ".join(missing), root, last)
        return ()
    return (str(folder),)
