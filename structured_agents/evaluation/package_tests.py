"""Run a package's own tests against a copy of its code, and read the runner's counts.

pytest runs in the project root with the folder the package imports from first on
``PYTHONPATH`` (so the copy is what the tests import, not an installed release), with the
project's own pytest configuration but none of its ``addopts`` (they name plugins such as
coverage that are not installed here) and no plugin loaded from entry points
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``): this interpreter's pytest and nothing else. pytest's own
deprecation and configuration warnings are ignored: a package whose configuration turns
warnings into errors (``filterwarnings = error``, as click 8.1.7's does) would otherwise fail to
collect under a newer pytest than it was released against, or because it sets an option of a
plugin not loaded here (blinker 1.7.0's ``asyncio_mode``).

Where pytest cannot use the tests (they fail to collect, or none are found) and the package's
own test command is unittest's (``-m unittest`` in its ``tox.ini``, ``setup.cfg``,
``pyproject.toml``, ``Makefile``/``makefile`` or CI workflows: Markdown 3.6's 961 tests, whose
``TestSuite`` class pytest refuses to collect), unittest's discovery runs them instead, from
the tests folder; where the tests folder is a module that runs them (a ``tests/__main__.py``
calling unittest: lark 1.1.9's 1,101 tests, ``python -m tests``), that module runs them. The
package's own requirements this interpreter lacks are installed beside it first, on
``PYTHONPATH`` after it (:mod:`~structured_agents.evaluation.dependencies`: jsonpatch 1.33's
tests need ``jsonpointer``). Test
modules pytest cannot collect only because they import a package not installed here (pyparsing
3.1.2's ``test_diagram.py`` needs ``railroad``) are left out (``--ignore``), and so are tests
that fail as released, in either of two runs (``--deselect``: pyparsing's 7, six's one,
chardet's one that fails now and then), or error in their set-up (filelock 3.13.1's two that
ask for pytest-mock's ``mocker``), which can tell nothing of a change; the outcome names them,
and the rest run. Where pytest finds no tests and the project has modules named ``tests.py`` or
``test.py``, which pytest's default patterns do not collect (webencodings 0.5.1 keeps its tests
in ``webencodings/tests.py``, decorator 5.1.1 in ``src/tests/test.py``), or modules of a tests
folder named ``test*.py`` or ``*_tests.py`` (pytimeparse 1.1.8's ``tests/testtimeparse.py``,
commonmark 0.9.1's ``tests/unit_tests.py``), pytest is given them by name. Where neither runner
can use them and the tests folder holds scripts that run their own tests (``test*.py`` calling
``unittest.main()`` as they load, which neither runner can import: ply 3.11's ``python
testlex.py``, run from ``test/`` as its README says), each script runs from that folder, and
where some of a script's tests fail as released, it is given the others by name. Where neither
runner can use them and the project has a script that runs its whole suite with unittest
(``runtests.py`` or ``run_tests.py`` in its root or tests folder, behind an ``if __name__``
guard: feedparser 6.0.14's ``python tests/runtests.py`` builds its 4,335 tests from the feeds it
globs under ``./tests`` and serves some of them over HTTP), that script runs from the project
root, and counts only where it passes as released (it takes no test names, so nothing can be
left out of it). A package
whose tests need more than that shows up as ``cannot run`` with the runner's last words, never
as a pass.

Where the project's own test command runs the doctests of its modules (``--doctest-modules`` in
its pytest configuration's ``addopts``, its ``tox.ini``, ``Makefile`` or CI workflows: hyperlink
21.0.0's tox runs ``pytest --doctest-modules src/hyperlink``), pytest runs them too, on top of the
tests found as above, without those that fail as released; if they cannot run clean that way
(a module that cannot be imported here for another reason than a missing package), the tests
run without them, as before. A change to a docstring's example is then checked like any other."""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePath
from typing import Any, Literal

from structured_agents.evaluation.layout import source_root
from structured_agents.jobs import iter_source_files

__all__ = ["TESTS_TIMEOUT_S", "TestsOutcome", "check_command", "run_package_tests"]

TESTS_TIMEOUT_S = 300
"""Longest one run of a package's tests may take."""

TestsStatus = Literal["ran", "no tests", "cannot run", "timed out"]
Runner = Literal["pytest", "unittest", "scripts", "runtests"]
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
    """The runner's summary line, or why the tests could not run."""
    seconds: float = 0.0
    """Wall time of the run."""
    runner: Runner = "pytest"
    """What ran them."""
    left_out: tuple[str, ...] = ()
    """Test modules left out: they import a package not installed here."""
    deselected: tuple[str, ...] = ()
    """Tests left out because they fail as released (here: another Python, a missing
    program...), so they can tell nothing of a change."""
    dependencies: tuple[str, ...] = ()
    """Folders on ``PYTHONPATH`` after the package's own: its requirements this interpreter
    lacks, installed there (:func:`~structured_agents.evaluation.dependencies.install_dependencies`)."""
    named: tuple[str, ...] = ()
    """Test modules pytest was given by name (``tests.py`` modules, which its default
    patterns do not collect); empty: pytest collected the project itself. For ``scripts``: the
    scripts run (``test/testyacc.py``), or a script's tests run by name where others fail as
    released (``test/testlex.py::LexBuildOptionTests.test_lex_closure``). For ``runtests``: the
    script that runs the suite (``tests/runtests.py``)."""
    doctests: bool = False
    """pytest also ran the doctests of the project's modules (``--doctest-modules``), as the
    project's own test command does."""

    @property
    def usable(self) -> bool:
        """Whether the tests ran, some passed, and none failed to be collected."""
        return self.status == "ran" and self.passed > 0 and self.errors == 0

    def short(self) -> str:
        """``passed/failed`` (``+Ne`` for errors, ``-N`` for modules left out, ``~N`` for tests
        failing as released left out), or the status."""
        if self.status != "ran":
            return self.status
        errors = f"+{self.errors}e" if self.errors else ""
        left_out = f"-{len(self.left_out)}" if self.left_out else ""
        deselected = f"~{len(self.deselected)}" if self.deselected else ""
        return f"{self.passed}/{self.failed}{errors}{left_out}{deselected}"

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
    "-W",
    "ignore::pytest.PytestConfigWarning",
)
"""pytest as the evaluation runs it (see the module docstring)."""
_DECLARES_UNITTEST = re.compile(r"-m\s+unittest\b")
_DECLARES_DOCTESTS = re.compile(r"--doctest-modules\b")
_DECLARATIONS = (
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "pytest.ini",
    "Makefile",
    "makefile",
    ".github/workflows/*.y*ml",
)
_TESTS_FOLDERS = ("tests", "test")
_RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)
_UNITTEST_COUNT = re.compile(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)")


def _tests_folder(root: Path) -> str | None:
    """The project's tests folder (``tests`` or ``test``), if it has one."""
    return next((name for name in _TESTS_FOLDERS if (root / name).is_dir()), None)


def _tests_module(root: Path) -> str | None:
    """The tests folder the project runs as a module with unittest (``python -m tests``: its
    ``__main__.py`` calls unittest), if any."""
    for name in _TESTS_FOLDERS:
        try:
            main = (root / name / "__main__.py").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "unittest" in main:
            return name
    return None


def _declares(root: Path, command: re.Pattern[str]) -> bool:
    """Whether the project's configuration, ``Makefile`` or CI workflows hold ``command``."""
    for pattern in _DECLARATIONS:
        for path in root.glob(pattern):
            try:
                if command.search(path.read_text(encoding="utf-8", errors="replace")):
                    return True
            except OSError:
                continue
    return False


def _declares_unittest(root: Path) -> bool:
    """Whether the project's own test command is unittest's."""
    return _tests_module(root) is not None or _declares(root, _DECLARES_UNITTEST)


_CALLS_MAIN = re.compile(r"^unittest\.main\(", re.M)
"""A script that runs its tests as it loads (``unittest.main()`` unindented, outside any
``if __name__`` guard): importing it runs them, so no runner can collect it."""
_VERBOSE = re.compile(r"^(\w+) \(__main__\.([\w.]+)\)(?:\n[^\n]*?)? \.\.\. (\w+)", re.M)
"""A test's line in ``unittest.main``'s verbose output: its method, ``Class.method`` (Python
3.11) or ``Class`` (older), and its first word of outcome (``ok``, ``FAIL``, ``ERROR``...)."""


def _test_scripts(root: Path) -> tuple[str, ...]:
    """The tests folder's scripts that run their own tests as they load (:data:`_CALLS_MAIN`),
    relative to ``root``."""
    folder = _tests_folder(root)
    if folder is None:
        return ()
    found = []
    for path in sorted((root / folder).glob("test*.py")):
        try:
            if _CALLS_MAIN.search(path.read_text(encoding="utf-8", errors="replace")):
                found.append(path.relative_to(root).as_posix())
        except OSError:
            continue
    return tuple(found)


_RUNTESTS = ("runtests.py", "run_tests.py")
"""Names of a script that runs a project's whole suite."""
_GUARDED = re.compile(r"^if __name__ == ['\"]__main__['\"]:", re.M)


def _runtests_script(root: Path) -> str | None:
    """The project's script that runs its whole suite with unittest (:data:`_RUNTESTS`, in its
    root or its tests folder, behind an ``if __name__`` guard), relative to ``root``."""
    folder = _tests_folder(root)
    for place in ("", *([folder] if folder is not None else [])):
        for name in _RUNTESTS:
            path = root / place / name
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if _GUARDED.search(text) and "unittest" in text:
                return path.relative_to(root).as_posix()
    return None


def _script_runs(named: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Each script of ``named`` (see :attr:`TestsOutcome.named`) with the tests it is given."""
    runs: dict[str, list[str]] = {}
    for item in named:
        script, _, test = item.partition("::")
        runs.setdefault(script, [])
        if test:
            runs[script].append(test)
    return list(runs.items())


def _args(
    runner: Runner, root: Path, like: TestsOutcome | None = None, *, first_failure: bool = False
) -> list[str]:
    """The runner's arguments: pytest as :data:`_PYTEST`, without the modules ``like`` left out
    and the tests it deselected; unittest: the project's tests module (:func:`_tests_module`),
    else discovery from its tests folder (``tests`` or ``test``, imported from the project
    root), else from the root; runtests: the script ``like`` names. ``first_failure``: stop
    there (not the script's: it takes no options)."""
    if runner == "runtests":
        return list(_carried(like)[2])
    if runner == "pytest":
        left_out, deselected, named = _carried(like)
        ignored = [*(f"--ignore={path}" for path in left_out), *(f"--deselect={test}" for test in deselected)]
        doctests = ["--doctest-modules"] if like is not None and like.doctests else []
        return [*_PYTEST, *doctests, *(["-x"] if first_failure else []), *ignored, "--rootdir", ".", *named]
    module = _tests_module(root)
    if module is not None:
        return ["-m", module, *(["-f"] if first_failure else [])]
    start = _tests_folder(root)
    folder = ["-s", start, "-t", "."] if start is not None else []
    return ["-m", "unittest", "discover", *(["-f"] if first_failure else []), *folder]


def _path(source: str, like: TestsOutcome | None) -> str:
    """The check's ``PYTHONPATH``: the project's folder, then ``like``'s dependencies."""
    return shlex.quote(os.pathsep.join([source, *(like.dependencies if like is not None else ())]))


def check_command(root: Path, like: TestsOutcome | None = None) -> str:
    """The project's tests as the lint task's check command (``sa eval lint --check-tests``):
    run as they ran for ``like`` (its runner, without the modules it left out and the tests it
    deselected; pytest's whole suite when None), from whatever folder holds a copy of the
    project, stopping at the first failure (only pass or fail counts)."""
    source = source_root(root).relative_to(root).as_posix()
    if like is not None and like.runner == "scripts":  # each from its folder, one after another
        commands = []
        for script, tests in _script_runs(like.named):
            folder, name = posixpath.split(script)
            path = posixpath.relpath(source, folder or ".")
            variables = f"PYTHONPATH={_path(path, like)} PYTHONDONTWRITEBYTECODE=1"
            run = shlex.join([sys.executable, name, "-f", *tests])
            commands.append(f"(cd {shlex.quote(folder or '.')} && {variables} {run})")
        return " && ".join(commands)
    variables = f"PYTHONPATH={_path(source, like)} PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1"
    args = _args(like.runner if like is not None else "pytest", root, like, first_failure=True)
    return f"{variables} {shlex.join([sys.executable, *args])}"


def _last_line(output: str) -> str:
    """The runner's last words: the last line of ``output`` with text on it."""
    return next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")


def _unittest_outcome(output: str, returncode: int, seconds: float) -> TestsOutcome:
    ran = _RAN.findall(output)
    last = _last_line(output)
    if not ran or returncode not in (0, 1, 5):
        return TestsOutcome(
            "cannot run",
            detail=f"unittest exit {returncode}: {last[:300]}",
            seconds=seconds,
            runner="unittest",
        )
    total = int(ran[-1])
    if total == 0:
        return TestsOutcome("no tests", detail=last, seconds=seconds, runner="unittest")
    found = {key: int(number) for key, number in _UNITTEST_COUNT.findall(last)}
    failed = found.get("failures", 0) + found.get("unexpected successes", 0)
    errors, skipped = found.get("errors", 0), found.get("skipped", 0)
    passed = total - failed - errors - skipped - found.get("expected failures", 0)
    detail = f"Ran {total} tests: {last[:200]}"
    return TestsOutcome(
        "ran", passed, failed, errors, skipped, detail=detail, seconds=seconds, runner="unittest"
    )


def _env(root: Path, dependencies: Sequence[str]) -> dict[str, str]:
    path = [str(source_root(root)), *dependencies, os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    return env | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _timed(
    command: list[str], cwd: Path, root: Path, dependencies: Sequence[str]
) -> tuple[subprocess.CompletedProcess[str] | None, float]:
    """``command`` run in ``cwd`` on the project at ``root`` (:func:`_env`, with the folders of
    ``dependencies``), and its seconds; None for a run over :data:`TESTS_TIMEOUT_S`."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=_env(root, dependencies),
            capture_output=True,
            text=True,
            timeout=TESTS_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, TESTS_TIMEOUT_S
    return done, time.monotonic() - started


def _scripts_attempt(root: Path, like: TestsOutcome) -> tuple[TestsOutcome, list[tuple[str, str]]]:
    """Each script of ``like.named`` run from its folder with the tests named for it (all of
    its own where none are), verbose: the outcomes summed, and each script's output."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    outputs: list[tuple[str, str]] = []
    seconds = 0.0
    for script, tests in _script_runs(like.named):
        done, took = _timed(
            [sys.executable, Path(script).name, "-v", *tests],
            root / Path(script).parent,
            root,
            like.dependencies,
        )
        if done is None:
            detail = f"{script}: over {TESTS_TIMEOUT_S} s"
            return TestsOutcome("timed out", detail=detail, seconds=TESTS_TIMEOUT_S, runner="scripts"), []
        seconds += took
        output = done.stdout + done.stderr
        outcome = _unittest_outcome(output, done.returncode, seconds)
        if outcome.status != "ran":
            return replace(outcome, detail=f"{script}: {outcome.detail}", runner="scripts"), [
                (script, output)
            ]
        for key in counts:
            counts[key] += getattr(outcome, key)
        outputs.append((script, output))
    detail = f"{sum(counts.values())} tests in {len(_script_runs(like.named))} scripts"
    if like.deselected:
        detail += f"; {len(like.deselected)} tests failing as released left out"
    passed, failed, errors, skipped = (counts[key] for key in ("passed", "failed", "errors", "skipped"))
    outcome = TestsOutcome(
        "ran", passed, failed, errors, skipped, detail=detail, seconds=seconds, runner="scripts"
    )
    return replace(outcome, deselected=like.deselected, named=like.named), outputs


def _scripts_outcome(root: Path, scripts: tuple[str, ...], dependencies: tuple[str, ...]) -> TestsOutcome:
    """The scripts' tests, then, where some fail as released, the others by name."""
    start = TestsOutcome("ran", named=scripts, runner="scripts", dependencies=dependencies)
    outcome, outputs = _scripts_attempt(root, start)
    if outcome.status != "ran" or not (outcome.failed or outcome.errors):
        return outcome
    named: list[str] = []
    failing: list[str] = []
    for script, text in outputs:
        results = [
            (f"{script}::{inner if inner.endswith('.' + method) else inner + '.' + method}", word)
            for method, inner, word in _VERBOSE.findall(text)
        ]
        if any(word != "ok" for _, word in results):
            named += [test for test, word in results if word == "ok"]
            failing += [test for test, word in results if word in ("FAIL", "ERROR")]
        else:
            named.append(script)
    if len(failing) != outcome.failed + outcome.errors:
        return outcome  # not every failure was read: nothing is left out on a guess
    return _scripts_attempt(root, replace(outcome, named=tuple(named), deselected=tuple(failing)))[0]


def _attempt(root: Path, runner: Runner, like: TestsOutcome) -> tuple[TestsOutcome, str]:
    """One run by ``runner`` as ``like`` ran (see :func:`_args`), with its dependencies: its
    outcome (carrying them) and its output."""
    outcome, output = _attempt_once(root, runner, like)
    return replace(outcome, dependencies=like.dependencies), output


def _attempt_once(root: Path, runner: Runner, like: TestsOutcome) -> tuple[TestsOutcome, str]:
    if runner == "scripts":
        outcome, outputs = _scripts_attempt(root, like)
        return outcome, "\n".join(output for _, output in outputs)
    done, seconds = _timed([sys.executable, *_args(runner, root, like)], root, root, like.dependencies)
    if done is None:
        detail = f"over {TESTS_TIMEOUT_S} s"
        return TestsOutcome("timed out", detail=detail, seconds=TESTS_TIMEOUT_S, runner=runner), ""
    output = done.stdout + done.stderr
    if runner in ("unittest", "runtests"):
        outcome = replace(_unittest_outcome(output, done.returncode, seconds), runner=runner)
        return replace(outcome, named=like.named) if runner == "runtests" else outcome, output
    left_out, deselected, named = _carried(like)
    last = _last_line(output)
    if done.returncode == 5:
        return TestsOutcome("no tests", detail=last, seconds=seconds, left_out=left_out, named=named), output
    counts = _counts(done.stdout)
    if done.returncode not in (0, 1, 2) or not any(counts.values()):
        detail = f"pytest exit {done.returncode}: {last[:300]}"
        return TestsOutcome("cannot run", detail=detail, seconds=seconds), output
    detail = last[:300]
    if left_out:
        detail += "; left out (a package not installed here): " + ", ".join(left_out)
    if deselected:
        detail += f"; {len(deselected)} tests failing as released left out"
    passed, failed, errors, skipped = (counts[key] for key in ("passed", "failed", "errors", "skipped"))
    outcome = TestsOutcome("ran", passed, failed, errors, skipped, detail=detail, seconds=seconds)
    outcome = replace(outcome, left_out=left_out, deselected=deselected, named=named, doctests=like.doctests)
    return outcome, done.stdout


_FAILED = re.compile(r"^FAILED (.+?)(?: - .*)?$", re.M)
_ERRORED = re.compile(r"^ERROR (.+?::.+?)(?: - .*)?$", re.M)
"""A test that errored in its set-up or tear-down (a module that failed to collect is listed
without ``::``)."""


def _failed_tests(output: str, outcome: TestsOutcome) -> list[str]:
    """The ids of the tests pytest's short summary lists as failed or as errored (a fixture
    of a plugin not installed here: filelock 3.13.1's ``mocker``), when they are all of the
    run's failures and errors; else none (a module failed to collect, say)."""
    failed, errored = _FAILED.findall(output), _ERRORED.findall(output)
    if len(failed) != outcome.failed or len(errored) != outcome.errors:
        return []
    return [*failed, *errored]


_COLLECTING = re.compile(r"^_+ ERROR collecting (\S+) _+$", re.M)
_NOT_INSTALLED = re.compile(r"^E\s+ModuleNotFoundError: No module named '[\w.]+'", re.M)


def _carried(like: TestsOutcome | None) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """What a run like ``like`` carries over: its left-out modules, deselected tests and the
    test modules it names (none without one)."""
    return (like.left_out, like.deselected, like.named) if like is not None else ((), (), ())


def _missing_imports(output: str) -> list[str]:
    """The test modules pytest could not collect, when each of them failed only because it
    imports a module that is not installed; empty when any failed otherwise."""
    parts = _COLLECTING.split(output)
    modules = parts[1::2]
    reasons = parts[2::2]
    if not modules or not all(_NOT_INSTALLED.search(reason) for reason in reasons):
        return []
    return modules


_TESTS_MODULES = frozenset({"tests.py", "test.py"})
"""Names of modules that hold a project's tests but that pytest's default patterns miss."""


def _holds_tests(path: PurePath, root: Path) -> bool:
    """Whether the module at ``path`` (relative to ``root``) holds tests pytest's default
    patterns miss: it is named as :data:`_TESTS_MODULES`, or it stands in a tests folder and
    is named as nose and unittest's discovery find it, ``test*.py`` (pytimeparse 1.1.8's
    ``pytimeparse/tests/testtimeparse.py``), or ``*_tests.py`` (commonmark 0.9.1's
    ``commonmark/tests/unit_tests.py``), and does not run its tests as it loads
    (:data:`_CALLS_MAIN`: ply's scripts, which :func:`_test_scripts` runs)."""
    if any(part.startswith(".") for part in path.parts):
        return False
    if path.name in _TESTS_MODULES:
        return True
    named = path.name.startswith("test") or path.stem.endswith("_tests")
    if not (named and path.parent.name in _TESTS_FOLDERS):
        return False
    try:
        return not _CALLS_MAIN.search((root / path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return False


def _tests_modules(root: Path) -> tuple[str, ...]:
    """The project's modules that hold tests pytest's default patterns miss
    (:func:`_holds_tests`), relative to ``root``."""
    return tuple(path.as_posix() for path in iter_source_files(root) if _holds_tests(path, root))


def _with_doctests(root: Path, outcome: TestsOutcome) -> TestsOutcome:
    """``outcome`` (a usable pytest run) with the doctests of the project's modules run too,
    leaving out modules that need a package not installed here and doctests that fail as
    released; ``outcome`` itself where they cannot run clean."""
    doctests, output = _attempt(root, "pytest", replace(outcome, doctests=True))
    if doctests.errors and (missing := _missing_imports(output)):
        left_out = tuple(sorted({*outcome.left_out, *missing}))
        doctests, output = _attempt(root, "pytest", replace(doctests, left_out=left_out))
    if doctests.status == "ran" and doctests.failed and (failing := _failed_tests(output, doctests)):
        deselected = (*doctests.deselected, *failing)
        doctests = _attempt(root, "pytest", replace(doctests, deselected=deselected))[0]
    clean = doctests.usable and not doctests.failed and doctests.passed > outcome.passed
    return replace(doctests, detail=doctests.detail + "; with the modules' doctests") if clean else outcome


def run_package_tests(
    root: Path, like: TestsOutcome | None = None, dependencies: tuple[str, ...] = ()
) -> TestsOutcome:
    """Run the tests of the project at ``root`` as they ran for ``like`` (its runner, without
    the modules it left out and the tests it deselected), or, when it is None, as the module
    docstring says: pytest (given the project's ``tests.py``/``test.py`` modules by name where
    it collects nothing by itself), again without the modules that need a package not
    installed here, again without the tests that failed or errored, and once more, leaving
    out what fails that time too (chardet 5.2.0 has a test that fails now and then); then
    unittest where pytest cannot use them and the project declares unittest; then its script
    that runs the suite (:func:`_runtests_script`); then the tests folder's scripts
    (:func:`_test_scripts`). ``dependencies``: folders on ``PYTHONPATH`` after
    the project's (``like``'s when it is given)."""
    if like is not None:
        return _attempt(root, like.runner, like)[0]
    start = TestsOutcome("ran", dependencies=dependencies)
    outcome, output = _attempt(root, "pytest", start)
    if outcome.status == "no tests" and (named := _tests_modules(root)):
        outcome, output = _attempt(root, "pytest", replace(outcome, named=named))
    if outcome.errors and (missing := _missing_imports(output)):
        outcome, output = _attempt(root, "pytest", replace(outcome, left_out=tuple(sorted(missing))))
    if (
        outcome.status == "ran"
        and (outcome.failed or outcome.errors)
        and (failing := _failed_tests(output, outcome))
    ):
        outcome, output = _attempt(root, "pytest", replace(outcome, deselected=tuple(failing)))
    if outcome.usable and not outcome.failed:  # once more: a test that fails now and then is left out too
        again, output = _attempt(root, "pytest", outcome)
        if (again.failed or again.errors) and (flaky := _failed_tests(output, again)):
            outcome = _attempt(root, "pytest", replace(outcome, deselected=(*outcome.deselected, *flaky)))[0]
    if outcome.usable and _declares(root, _DECLARES_DOCTESTS):
        return _with_doctests(root, outcome)
    if outcome.usable or outcome.status == "timed out":
        return outcome
    if _declares_unittest(root) and (fallback := _attempt(root, "unittest", start)[0]).usable:
        return fallback
    if (script := _runtests_script(root)) is not None:
        fallback = _attempt(root, "runtests", replace(start, named=(script,)))[0]
        if fallback.usable and not fallback.failed:
            return fallback
    if scripts := _test_scripts(root):
        fallback = _scripts_outcome(root, scripts, dependencies)
        return replace(fallback, dependencies=dependencies) if fallback.usable else outcome
    return outcome
