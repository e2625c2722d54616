"""The lowest Python a codebase supports, as it declares it, and what a change must not break.

Declarations read (never executed), at the codebase root: ``requires-python`` in
``pyproject.toml`` (``[project]``, Poetry's ``python`` dependency, or flit's older
``[tool.flit.metadata]``), ``python_requires`` in ``setup.cfg`` or as a keyword of ``setup()``
in ``setup.py`` (a literal, or a name the module binds to one), ``Requires-Python`` in an
sdist's ``PKG-INFO`` (an unpacked wheel's ``*.dist-info/METADATA`` where there is none: tinydb
4.8.0's index has no sdist), and ``target-version`` in the ruff configuration
(:func:`~structured_agents.tasks.ruff_config.ruff_settings`). A root that declares nothing, say
a package's source folder, takes the packaging files of the nearest folder above it that has
any (not past a ``.git`` folder). The lowest version any of them admits is the target. Where
none of them states one, the trove classifiers imply it (the lowest version they name) and so
does a universal wheel (Python 2.7): a package that builds one still supports Python 2. Ruff is
given it (``--target-version``, raised to ruff's lowest, ``py37``) on every call, so its fixes
keep to it. For a codebase that still supports Python 2, pyupgrade's rules (``UP``) are off as
well (``--ignore UP``): each rewrites for Python 3 (``super()``, ``class A:`` for ``class
A(object):``, dropping ``u''`` prefixes and ``__future__`` imports), which Python 2 compiles
and then runs differently. Below Python 3.7, the other rules that ask for what the target lacks
are off too (:data:`NEWER_THAN_TARGET`): an f-string (UP032) on 3.5, ``text=`` and
``capture_output=`` for ``subprocess`` (UP021, UP022: they compile on 3.6, then raise
``TypeError`` there), the removal of the blocks 3.5 and 3.6 run (UP036), a variable annotation
(RUF012's ``ClassVar``) before 3.6, unpacking in a display (RUF005) before 3.5,
``contextlib.suppress`` (SIM105) before 3.4, and on Python 2 ``raise ... from`` (B904) and the
rules that take ``round()`` to return an int (RUF046 drops the ``int()`` around it, RUF057 the
``round()`` of an int): Python 2's returns a float, so texttable 1.7.0's ``str(int(round(x)))``
would print ``4.0`` there. Their findings are no fault of such a codebase and cannot be fixed
in it: ``ruff --fix`` alone wrote inflection 0.5.1's f-strings, on Python 3.5, and then the
unfixed remainder counted against it; colorama 0.4.6, toml 0.10.2 and parse 1.20.2, which
support Python 2, each had B904 findings that a Python 2 compiler refuses every fix of.

A text breaks the target (:meth:`PythonTarget.breaks`) when, beyond what the original already
had, ruff reports syntax the target lacks (``match``, ``except*``, parenthesized context
managers...) or a typing form its evaluated annotations lack (``X | Y`` before 3.10,
``list[int]`` before 3.9: FA102); below ruff's lowest target (``py37``), also the syntax of
:mod:`~structured_agents.tasks.old_syntax` (an f-string for a codebase that supports Python 3.5
or 2.7); or when the target's own interpreter (``python3.6`` on ``PATH`` or under pyenv) is on
the machine and does not compile it.
"""

from __future__ import annotations

import ast
import configparser
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from structured_agents import syntax
from structured_agents.jobs.source import read_regular
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.old_syntax import older_syntax
from structured_agents.tasks.ruff_config import read_toml, ruff_config_file, ruff_settings

__all__ = ["NEWER_THAN_TARGET", "RUFF_LOWEST", "PythonTarget", "find_interpreter", "python_target"]

RUFF_LOWEST = (3, 7)
"""The lowest ``--target-version`` ruff accepts."""
NEWER_THAN_TARGET = {
    "UP032": (3, 6),
    "UP021": (3, 7),
    "UP022": (3, 7),
    "UP036": (3, 7),
    "B904": (3, 0),
    "RUF046": (3, 0),
    "RUF057": (3, 0),
    "SIM105": (3, 4),
    "RUF005": (3, 5),
    "RUF012": (3, 6),
}
"""Rules that ask for what Pythons before the one named lack (see the module docstring): off
for a target below it."""
_MINORS = {2: range(0, 8), 3: range(0, 30)}
"""The Python versions a declaration is tested against, lowest first."""
_COMPILE = "import sys; compile(getattr(sys.stdin, 'buffer', sys.stdin).read(), sys.argv[1], 'exec')"
"""Compiles standard input under any Python, 2.7 included."""
_COMPILE_TIMEOUT_S = 30


@dataclass(frozen=True, slots=True)
class PythonTarget:
    """The lowest Python a codebase supports (None when it declares none) and where it says so."""

    lowest: tuple[int, int] | None
    source: str
    """``requires-python >=3.6 in setup.py``, or why nothing is assumed."""

    @property
    def ruff_version(self) -> str | None:
        """``py37``: what ruff is given (the target, or ruff's lowest when the target is older)."""
        if self.lowest is None:
            return None
        major, minor = max(self.lowest, RUFF_LOWEST)
        return f"py{major}{minor}"

    @property
    def python2(self) -> bool:
        """Whether the target is a Python 2 (pyupgrade's rules are off: see the module docstring)."""
        return self.lowest is not None and self.lowest < (3, 0)

    def describe(self) -> str:
        """``Python 3.6+ (requires-python >=3.6 in setup.py; ruff: py37)``."""
        if self.lowest is None:
            return f"no lowest Python {self.source}: ruff's default target"
        version = ".".join(map(str, self.lowest))
        reasons = ["UP: pyupgrade rewrites for Python 3"] if self.python2 else []
        if newer := self._newer():
            reasons.append(f"{', '.join(newer)}: newer than the target")
        upgrades = f", without {'; '.join(reasons)}" if reasons else ""
        return f"Python {version}+ ({self.source}; ruff: {self.ruff_version}{upgrades})"

    def _newer(self) -> list[str]:
        """The rules of :data:`NEWER_THAN_TARGET` the target is older than (pyupgrade's left
        out where all of pyupgrade is off, for Python 2)."""
        lowest = self.lowest
        return [
            code
            for code, since in NEWER_THAN_TARGET.items()
            if lowest is not None and lowest < since and not (self.python2 and code.startswith("UP"))
        ]

    def ruff_options(self) -> tuple[str, ...]:
        """The options that give ruff the target (and turn off the rules that ask for more than
        it has: pyupgrade for Python 2, :data:`NEWER_THAN_TARGET`'s below that)."""
        version = self.ruff_version
        if version is None:
            return ()
        ignored = ",".join([*(["UP"] if self.python2 else []), *self._newer()])
        return ("--target-version", version, *(("--ignore", ignored) if ignored else ()))

    def breaks(self, root: Path, path: str, original: str, text: str) -> str | None:
        """What ``text`` (``root/path`` changed) uses that the target lacks and ``original`` did
        not: the first such message, or None."""
        return self.checker(root, path, original)(text)

    def checker(self, root: Path, path: str, original: str) -> Callable[[str], str | None]:
        """:meth:`breaks` for many texts against one ``original`` (read once)."""
        if self.lowest is None:
            return lambda text: None
        interpreter = find_interpreter(self.lowest)
        before = _problems(root, path, original, self)
        if interpreter is not None and _compiles(interpreter, path, original) is not None:
            interpreter = None  # the original does not compile there: nothing to compare with

        def breaks(text: str) -> str | None:
            added = _problems(root, path, text, self) - before
            if added:
                return sorted(added)[0]
            error = None if interpreter is None else _compiles(interpreter, path, text)
            return None if error is None else f"{Path(str(interpreter)).name} cannot compile it: {error}"

        return breaks


def _problems(root: Path, path: str, text: str, target: PythonTarget) -> Counter[str]:
    """Ruff's version-syntax errors and FA102 findings on ``text``, and below ruff's lowest
    target :func:`~structured_agents.tasks.old_syntax.older_syntax`'s, by message (with its
    count: one more of a message already there is new)."""
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "FA102", "--no-cache"]
    command += [*target.ruff_options(), "--exit-zero", "--output-format", "json"]
    command += ["--stdin-filename", str(root.resolve() / path), "-"]
    try:
        done = subprocess.run(command, input=text, capture_output=True, text=True, check=False)
        findings = json.loads(done.stdout or "[]") if done.returncode == 0 else None
    except (OSError, json.JSONDecodeError) as exc:
        raise TaskError(f"could not check {path} against {target.describe()}: {exc}") from exc
    if not isinstance(findings, list):
        raise TaskError(f"ruff failed checking {path} against the target: {done.stderr.strip()[:300]}")
    messages: Counter[str] = Counter()
    for finding in findings:
        message = str(finding.get("message", ""))
        if finding.get("code") == "FA102" or " on Python " in message:
            messages[message] += 1
    if target.lowest is not None and target.lowest < RUFF_LOWEST:
        messages += older_syntax(text, target.lowest)
    return messages


def _compiles(interpreter: str, path: str, text: str) -> str | None:
    """None when ``interpreter`` compiles ``text``; its error otherwise."""
    try:
        done = subprocess.run(
            [interpreter, "-c", _COMPILE, path],
            input=text.encode("utf-8"),
            capture_output=True,
            timeout=_COMPILE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    if not lines:
        return f"exit {done.returncode}"
    where = [m[1] for m in (re.search(r'^\s*File ".*", line (\d+)', line) for line in lines) if m]
    return f"line {where[-1]}: {lines[-1]}" if where else lines[-1]


def find_interpreter(version: tuple[int, int]) -> str | None:
    """The path of ``python3.6`` (for ``(3, 6)``): the running interpreter when it is that
    version, else ``python3.6`` on ``PATH`` (not a pyenv shim), else the
    newest such pyenv install (under ``$PYENV_ROOT``, ``~/.pyenv`` by default); None when
    there is none."""
    if sys.version_info[:2] == version:
        return sys.executable
    name = f"python{version[0]}.{version[1]}"
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = shutil.which(name)
    if found is not None and Path(found).parent != pyenv / "shims":  # a shim runs pyenv's global
        return found
    root = pyenv / "versions"
    prefix = f"{version[0]}.{version[1]}."
    try:
        installs = [p for p in root.iterdir() if re.fullmatch(re.escape(prefix) + r"\d+", p.name)]
    except OSError:
        return None
    for install in sorted(installs, key=lambda p: int(p.name[len(prefix) :]), reverse=True):
        binary = install / "bin" / name
        if os.access(binary, os.X_OK):
            return str(binary)
    return None


def lowest_admitted(spec: str) -> tuple[int, int] | None:
    """The lowest ``major.minor`` the specifier ``spec`` admits (``>=3.6``, ``~=3.8``, Poetry's
    ``^3.8``), or None when it cannot be read or admits none."""
    text = re.sub(r"\^\s*(\d)", r">=\1", spec.strip())  # Poetry's caret: at least
    text = re.sub(r"(?<![~=!<>])~\s*(\d)", r">=\1", text)  # Poetry's tilde: at least
    text = ",".join(part.strip() for part in re.split(r"[,\s]+(?=[<>=!~])", text) if part.strip())
    if text in {"", "*"}:
        return None
    try:
        specifier = SpecifierSet(text)
    except InvalidSpecifier:
        return None
    for major, minors in _MINORS.items():
        for minor in minors:
            if any(specifier.contains(f"{major}.{minor}.{patch}") for patch in (0, 99)):
                return (major, minor)
    return None


def _ruff_version(value: Any) -> tuple[int, int] | None:
    match = re.fullmatch(r"py(\d)(\d+)", str(value))
    return None if match is None else (int(match[1]), int(match[2]))


def _table(data: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _setup_py(tree: ast.Module | None) -> str | None:
    """The ``python_requires`` of a ``setup(...)`` call in ``setup.py`` (parsed as ``tree``): a
    literal, or a name the module binds to a literal (``python_requires = ">=3.7"`` then
    ``python_requires=python_requires``)."""
    if tree is None:
        return None
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg != "python_requires":
                    continue
                if isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
                if isinstance(keyword.value, ast.Name) and isinstance(constants.get(keyword.value.id), str):
                    return str(constants[keyword.value.id])
    return None


def _pkg_info(headers: str) -> str | None:
    """``Requires-Python`` of ``PKG-INFO`` or ``METADATA`` headers (email-header form)."""
    match = re.search(r"^Requires-Python:[ \t]*(.+)$", headers, re.MULTILINE)
    return match[1].strip() if match else None


_PACKAGING = ("pyproject.toml", "setup.cfg", "setup.py", "PKG-INFO")


def _packaging_root(root: Path) -> Path:
    """``root``, or for a root with no packaging file the nearest folder above it with one (not
    past a folder holding ``.git``); ``root`` when there is none."""
    folder = root.resolve()
    for candidate in (folder, *folder.parents):
        if any((candidate / name).is_file() for name in _PACKAGING):
            return candidate
        if (candidate / ".git").exists():
            break
    return folder


@dataclass(frozen=True, slots=True)
class _Packaging:
    """A codebase's packaging files, each read once (an unreadable one reads as empty)."""

    above: str
    """Their folder relative to the root (``../``), empty at the root itself."""
    pyproject: dict[str, Any]
    setup_cfg: configparser.ConfigParser
    setup_py: ast.Module | None
    pkg_info: str
    """The headers of ``PKG-INFO``, or of a wheel's ``METADATA`` where there is none."""
    pkg_info_name: str
    """``PKG-INFO``, or ``tinydb-4.8.0.dist-info/METADATA``."""


def _packaging(root: Path) -> _Packaging:
    home = _packaging_root(root)
    above = "" if home == root.resolve() else f"{os.path.relpath(home, root.resolve())}/"
    setup_cfg = configparser.ConfigParser(interpolation=None)
    try:
        setup_cfg.read_string(read_regular(home / "setup.cfg").decode("utf-8"), source="setup.cfg")
    except (OSError, configparser.Error, UnicodeDecodeError):
        setup_cfg = configparser.ConfigParser(interpolation=None)
    try:
        setup_py: ast.Module | None = syntax.parse(read_regular(home / "setup.py").decode("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError):
        setup_py = None
    metadata = home / "PKG-INFO"
    if not metadata.is_file():  # an unpacked wheel: the same headers, in its METADATA
        metadata = next(iter(sorted(home.glob("*.dist-info/METADATA"))), metadata)
    try:
        pkg_info = read_regular(metadata).decode("utf-8", "replace").split("\n\n", 1)[0]
    except OSError:
        pkg_info = ""
    name = metadata.relative_to(home).as_posix()
    return _Packaging(above, read_toml(home / "pyproject.toml") or {}, setup_cfg, setup_py, pkg_info, name)


def _declarations(root: Path, packaging: _Packaging) -> list[tuple[tuple[int, int], str]]:
    """Each readable declaration: the lowest version it admits and where it is."""
    found: list[tuple[tuple[int, int], str]] = []

    def spec(value: Any, where: str) -> None:
        lowest = lowest_admitted(str(value)) if isinstance(value, str) else None
        if lowest is not None:
            found.append((lowest, f"requires-python {value.strip()} in {where}"))

    above, pyproject = packaging.above, packaging.pyproject
    spec(_table(pyproject, "project").get("requires-python"), f"{above}pyproject.toml")
    spec(_table(pyproject, "tool", "poetry", "dependencies").get("python"), f"{above}pyproject.toml (Poetry)")
    spec(
        _table(pyproject, "tool", "flit", "metadata").get("requires-python"), f"{above}pyproject.toml (flit)"
    )
    spec(packaging.setup_cfg.get("options", "python_requires", fallback=None), f"{above}setup.cfg")
    spec(_setup_py(packaging.setup_py), f"{above}setup.py")
    spec(_pkg_info(packaging.pkg_info), f"{above}{packaging.pkg_info_name}")
    settings = ruff_settings(root)
    version = _ruff_version(settings.get("target-version"))
    config = ruff_config_file(root)
    if version is not None and config is not None:
        found.append((version, f"target-version {settings['target-version']} in {config.name}"))
    return found


_CLASSIFIER = re.compile(r"Programming Language :: Python :: (\d)(?:\.(\d+))?\s*$")
"""A trove classifier naming a Python version (``:: 2.7``, or a major alone: ``:: 2``)."""


def _classifiers(packaging: _Packaging) -> list[tuple[str, str]]:
    """Each trove classifier the packaging files list, and the file: ``[project]`` of
    ``pyproject.toml``, ``[metadata]`` of ``setup.cfg``, a literal ``classifiers=[...]`` in
    ``setup.py``, ``Classifier:`` lines of ``PKG-INFO`` (flit's older ``[tool.flit.metadata]``
    too: ptyprocess 0.7.0 says Python 2.7 only there)."""
    found = [
        (str(item), "pyproject.toml")
        for table in (("project",), ("tool", "flit", "metadata"))
        for item in _table(packaging.pyproject, *table).get("classifiers") or ()
    ]
    lines = packaging.setup_cfg.get("metadata", "classifiers", fallback="").splitlines()
    found += [(line.strip(), "setup.cfg") for line in lines if line.strip()]
    tree = packaging.setup_py
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.keyword) and node.arg == "classifiers" and isinstance(node.value, ast.List):
            found += [
                (item.value, "setup.py")
                for item in node.value.elts
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            ]
    headers = re.findall(r"^Classifier:(.+)$", packaging.pkg_info, re.MULTILINE)
    return found + [(value.strip(), packaging.pkg_info_name) for value in headers]


def _universal(packaging: _Packaging) -> str | None:
    """Where the project builds a universal wheel (one wheel for Python 2 and 3): ``[bdist_wheel]``
    of ``setup.cfg``, or its older name ``[wheel]``, or ``[tool.distutils.bdist_wheel]``."""
    on = ("1", "true")
    if (
        str(_table(packaging.pyproject, "tool", "distutils", "bdist_wheel").get("universal", "")).lower()
        in on
    ):
        return "pyproject.toml"
    sections = ("bdist_wheel", "wheel")
    settings = [packaging.setup_cfg.get(section, "universal", fallback="0") for section in sections]
    return "setup.cfg" if any(value.strip().lower() in on for value in settings) else None


def _implied(packaging: _Packaging) -> list[tuple[tuple[int, int], str]]:
    """Where nothing states the lowest Python: the lowest version the trove classifiers name
    (a major alone, ``:: 2``, taken as its last minor, 2.7), and Python 2.7 for a universal
    wheel (parse 1.20.1 declares no ``requires-python``, builds a universal wheel and tested
    on Python 2.7; webencodings 0.5.1 lists 2.6 to 3.6)."""
    above = packaging.above
    found: list[tuple[tuple[int, int], str]] = []
    for classifier, where in _classifiers(packaging):
        match = _CLASSIFIER.search(classifier)
        if match is not None and (match[2] is not None or match[1] == "2"):
            version = (int(match[1]), int(match[2]) if match[2] is not None else 7)
            found.append((version, f"classifier Python :: {'.'.join(map(str, version))} in {above}{where}"))
    universal = _universal(packaging)
    if universal is not None:
        found.append(((2, 7), f"a universal wheel (Python 2 and 3) in {above}{universal}"))
    return found


def python_target(root: Path) -> PythonTarget:
    """The codebase's target (see the module docstring)."""
    packaging = _packaging(root)
    found = _declarations(root, packaging) or _implied(packaging)
    if not found:
        return PythonTarget(None, "declared")
    lowest = min(version for version, _ in found)
    return PythonTarget(lowest, "; ".join(where for version, where in found if version == lowest))
