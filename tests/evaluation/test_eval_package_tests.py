"""Running a package's own tests against a copy of its code, and reading the runner's counts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from structured_agents.evaluation.package_tests import TestsOutcome, check_command, run_package_tests


def _project(root: Path, test: str, code: str = "def two():\n    return 2\n") -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(code)
    (root / "tests").mkdir()
    (root / "tests" / "test_pkg.py").write_text(test)
    # addopts naming a plugin that is not installed are dropped, not fatal
    (root / "setup.cfg").write_text("[tool:pytest]\naddopts = --cov=pkg\n")
    return root


def test_passing_and_failing_tests_are_counted(tmp_path: Path) -> None:
    test = "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    test += "\ndef test_bad():\n    assert two() == 3\n"
    outcome = run_package_tests(_project(tmp_path, test), TestsOutcome("ran"))
    assert (outcome.status, outcome.passed, outcome.failed, outcome.errors) == ("ran", 1, 1, 0)
    assert outcome.usable and outcome.short() == "1/1"


def test_tests_that_fail_as_released_are_left_out_of_every_stage(tmp_path: Path) -> None:
    """pyparsing 3.1.2 fails 7 tests here as released, six 1.16.0 one: they can tell nothing
    of a change, and with them in, the package had no check at all."""
    test = "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    test += "\ndef test_bad():\n    assert two() == 3\n"
    released = _project(tmp_path / "released", test)

    outcome = run_package_tests(released)

    assert (outcome.passed, outcome.failed, outcome.errors) == (1, 0, 0) and outcome.usable
    assert outcome.deselected == ("tests/test_pkg.py::test_bad",) and outcome.short() == "1/0~1"
    copy = shutil.copytree(released, tmp_path / "copy")
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")
    broken = run_package_tests(copy, outcome)
    assert (broken.passed, broken.failed) == (0, 1)  # test_ok fails; test_bad stays out
    done = subprocess.run(["/bin/sh", "-c", check_command(released, outcome)], cwd=copy, check=False)
    assert done.returncode != 0


def test_tests_that_error_in_their_set_up_as_released_are_left_out(tmp_path: Path) -> None:
    """filelock 3.13.1's two tests that ask for pytest-mock's ``mocker`` errored here as
    released, and with them in, the package had no check at all; a module that fails to
    collect is not a test, and keeps the tests unusable (see below)."""
    test = "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    test += "\ndef test_mocked(mocker):\n    assert two() == 2\n"
    released = _project(tmp_path / "released", test)

    outcome = run_package_tests(released)

    assert (outcome.passed, outcome.failed, outcome.errors) == (1, 0, 0) and outcome.usable
    assert outcome.deselected == ("tests/test_pkg.py::test_mocked",)
    copy = shutil.copytree(released, tmp_path / "copy")
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")
    assert (run_package_tests(copy, outcome).passed, run_package_tests(copy, outcome).failed) == (0, 1)


def test_an_option_of_a_plugin_not_loaded_does_not_stop_warnings_as_errors(tmp_path: Path) -> None:
    """blinker 1.7.0 sets pytest-asyncio's ``asyncio_mode`` and turns warnings into errors:
    pytest's warning about the unknown option stopped the run before any test."""
    test = "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    root = _project(tmp_path, test)
    (root / "setup.cfg").write_text("[tool:pytest]\nasyncio_mode = auto\nfilterwarnings = error\n")

    outcome = run_package_tests(root)

    assert (outcome.status, outcome.passed, outcome.errors) == ("ran", 1, 0) and outcome.usable


def test_the_copy_is_what_the_tests_import(tmp_path: Path) -> None:
    test = (
        "import pkg\n\ndef test_where():\n    assert pkg.__file__.startswith(" + repr(str(tmp_path)) + ")\n"
    )
    outcome = run_package_tests(_project(tmp_path, test))
    assert (outcome.passed, outcome.failed) == (1, 0)


def test_tests_that_cannot_be_collected_are_not_usable(tmp_path: Path) -> None:
    outcome = run_package_tests(_project(tmp_path, "from pkg import three\n"))
    assert outcome.status == "ran" and outcome.errors == 1 and not outcome.usable
    assert outcome.short() == "0/0+1e" and outcome.left_out == ()


def test_a_test_module_that_needs_a_package_not_installed_is_left_out(tmp_path: Path) -> None:
    """pyparsing 3.1.2's test_diagram.py imports railroad; its other tests run."""
    project = _project(
        tmp_path / "released", "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    )
    (project / "tests" / "test_diagram.py").write_text("import not_installed_anywhere\n")

    outcome = run_package_tests(project)

    assert outcome.usable and (outcome.passed, outcome.errors) == (1, 0)
    assert outcome.left_out == ("tests/test_diagram.py",) and outcome.short() == "1/0-1"
    assert "left out" in outcome.detail
    copy = shutil.copytree(project, tmp_path / "copy")
    assert run_package_tests(copy, outcome).usable  # later stages leave the same modules out
    done = subprocess.run(["/bin/sh", "-c", check_command(project, outcome)], cwd=copy, check=False)
    assert done.returncode == 0


def test_pytests_own_deprecations_do_not_fail_a_package_that_errors_on_warnings(tmp_path: Path) -> None:
    """click 8.1.7 parametrizes with a generator, which this pytest deprecates, and turns every
    warning into an error: its 589 tests failed to collect."""
    test = "import itertools\nimport pytest\n\n@pytest.mark.parametrize('n', itertools.chain([1], [2]))\n"
    test += "def test_n(n):\n    assert n\n"
    root = _project(tmp_path, test)
    (root / "setup.cfg").write_text("[tool:pytest]\nfilterwarnings =\n    error\n")
    outcome = run_package_tests(root)
    assert (outcome.status, outcome.passed, outcome.errors) == ("ran", 2, 0)


def test_a_project_without_tests_says_so(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").write_text("")
    outcome = run_package_tests(tmp_path)
    assert outcome.status == "no tests" and not outcome.usable and outcome.short() == "no tests"


def test_tests_in_a_tests_module_are_given_to_pytest_by_name(tmp_path: Path) -> None:
    """webencodings 0.5.1 keeps its tests in ``webencodings/tests.py``, which pytest's default
    patterns do not collect: they ran as "no tests" until pytest was given the module; so did
    pytimeparse 1.1.8's unittest cases in ``pytimeparse/tests/testtimeparse.py``."""
    released = tmp_path / "released"
    (released / "pkg").mkdir(parents=True)
    (released / "pkg" / "__init__.py").write_text("def two():\n    return 2\n")
    test = "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    (released / "pkg" / "tests.py").write_text(test)
    (released / "src" / "tests").mkdir(parents=True)  # decorator 5.1.1's src/tests/test.py
    (released / "src" / "tests" / "test.py").write_text(test.replace("test_ok", "test_also"))
    (released / "pkg" / "tests").mkdir()  # pytimeparse 1.1.8's pytimeparse/tests/testtimeparse.py
    unittest_case = "import unittest\nfrom pkg import two\n\nclass T(unittest.TestCase):\n"
    unittest_case += "    def test_two(self):\n        self.assertEqual(two(), 2)\n"
    (released / "pkg" / "tests" / "testtwo.py").write_text(unittest_case)
    (released / "pkg" / "tests" / "unit_tests.py").write_text(unittest_case)  # commonmark 0.9.1's
    (released / "pkg" / "tests" / "testscript.py").write_text(f"{unittest_case}\nunittest.main()\n")
    (released / "pkg" / "helpers").mkdir()  # not a tests folder
    (released / "pkg" / "helpers" / "testing.py").write_text("def test_not_a_test():\n    assert False\n")
    (released / ".hidden").mkdir()
    (released / ".hidden" / "tests.py").write_text("def test_not_ours():\n    assert False\n")

    outcome = run_package_tests(released)

    assert (outcome.status, outcome.passed, outcome.failed) == ("ran", 4, 0) and outcome.usable
    named = ["pkg/tests.py", "pkg/tests/testtwo.py", "pkg/tests/unit_tests.py", "src/tests/test.py"]
    assert sorted(outcome.named) == named
    copy = shutil.copytree(released, tmp_path / "copy")
    command = ["/bin/sh", "-c", check_command(released, outcome)]
    assert subprocess.run(command, cwd=copy, capture_output=True, check=False).returncode == 0
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")
    assert subprocess.run(command, cwd=copy, capture_output=True, check=False).returncode != 0
    assert run_package_tests(copy, outcome).failed == 4


def test_the_tests_as_a_check_command_run_in_any_copy_of_the_project(tmp_path: Path) -> None:
    project = _project(
        tmp_path / "released", "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    )
    command = check_command(project)
    copy = shutil.copytree(project, tmp_path / "copy")

    def passes() -> bool:
        return (
            subprocess.run(["/bin/sh", "-c", command], cwd=copy, capture_output=True, check=False).returncode
            == 0
        )

    assert passes()
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")  # the copy is what it imports
    assert not passes()


_DOCTESTED = '''def two():
    """Two.

    >>> two()
    2
    """
    return 2


def three():
    """Three, says its example, which fails as released.

    >>> three()
    4
    """
    return 3
'''


def test_doctests_the_project_runs_are_run_too_and_a_broken_example_fails_the_check(
    tmp_path: Path,
) -> None:
    """hyperlink 21.0.0's tox runs ``pytest --doctest-modules src/hyperlink``; a pydocstyle fix
    that moved an example onto the opening quotes' line passed a check that ran no doctests."""
    test = "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    released = _project(tmp_path / "released", test, _DOCTESTED)
    (released / "pkg" / "_windows.py").write_text('import sa_not_installed_here\n\n"""Not importable."""\n')
    (released / "tox.ini").write_text("[testenv]\ncommands = pytest --doctest-modules {posargs:pkg tests}\n")

    outcome = run_package_tests(released)

    assert outcome.doctests and outcome.usable and (outcome.passed, outcome.failed) == (2, 0)
    assert outcome.deselected == ("pkg/__init__.py::pkg.three",)
    assert outcome.left_out == ("pkg/_windows.py",)
    copy = shutil.copytree(released, tmp_path / "copy")
    command = ["/bin/sh", "-c", check_command(released, outcome)]
    assert subprocess.run(command, cwd=copy, capture_output=True, check=False).returncode == 0
    text = (copy / "pkg" / "__init__.py").read_text()
    (copy / "pkg" / "__init__.py").write_text(text.replace('"""Two.\n\n    >>> two()', '""">>> two()', 1))
    assert subprocess.run(command, cwd=copy, capture_output=True, check=False).returncode != 0
    assert run_package_tests(copy, outcome).failed == 1


def test_doctests_are_not_run_where_the_project_does_not_run_them(tmp_path: Path) -> None:
    test = "from pkg import two\n\ndef test_ok():\n    assert two() == 2\n"
    outcome = run_package_tests(_project(tmp_path, test, _DOCTESTED))
    assert not outcome.doctests and (outcome.passed, outcome.failed, outcome.deselected) == (1, 0, ())


_UNITTEST_SUITE = """import unittest
import warnings
from unittest import TestSuite  # pytest warns it cannot collect this class: it has an __init__

from pkg import two

warnings.simplefilter("error")  # as Markdown 3.6's test_legacy.py does on import


class TestTwo(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(two(), 2)

    @unittest.skip("not here")
    def test_skipped(self):
        pass
"""


def _unittest_project(root: Path, declared: bool) -> Path:
    """Markdown 3.6's shape: a test module that imports unittest's ``TestSuite`` (pytest warns
    it cannot collect it) and turns warnings into errors, run by unittest in its tox.ini."""
    project = _project(root, _UNITTEST_SUITE)
    (project / "tests" / "__init__.py").write_text("")
    if declared:
        (project / "tox.ini").write_text("[testenv]\ncommands = python -m unittest discover tests\n")
    return project


def test_tests_a_package_runs_with_unittest_run_there_when_pytest_cannot_collect_them(
    tmp_path: Path,
) -> None:
    outcome = run_package_tests(_unittest_project(tmp_path, declared=True))
    assert outcome.runner == "unittest" and outcome.usable
    assert (outcome.passed, outcome.failed, outcome.errors, outcome.skipped) == (1, 0, 0, 1)


def test_a_tests_folder_run_as_a_module_runs_that_way(tmp_path: Path) -> None:
    """lark 1.1.9 runs its 1,101 tests as ``python -m tests`` (``tests/__main__.py`` imports the
    suites and calls ``unittest.main()``) and declares no other test command."""
    project = _unittest_project(tmp_path / "released", declared=False)
    (project / "tests" / "__main__.py").write_text(
        "import unittest\n\nfrom .test_pkg import TestTwo\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )

    outcome = run_package_tests(project)

    assert outcome.runner == "unittest" and outcome.usable
    assert (outcome.passed, outcome.failed, outcome.skipped) == (1, 0, 1)
    command = check_command(project, outcome)
    assert command.endswith("-m tests -f")
    copy = shutil.copytree(project, tmp_path / "copy")
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")
    assert (
        subprocess.run(["/bin/sh", "-c", command], cwd=copy, capture_output=True, check=False).returncode != 0
    )


def test_unittest_is_not_tried_where_the_package_does_not_run_it(tmp_path: Path) -> None:
    outcome = run_package_tests(_unittest_project(tmp_path, declared=False))
    assert outcome.runner == "pytest" and not outcome.usable


def test_unittest_failures_and_errors_are_counted(tmp_path: Path) -> None:
    project = _unittest_project(tmp_path, declared=True)
    suite = (
        _UNITTEST_SUITE
        + """
    def test_bad(self):
        self.assertEqual(two(), 3)

    def test_broken(self):
        raise RuntimeError("broken")
"""
    )
    (project / "tests" / "test_pkg.py").write_text(suite)
    outcome = run_package_tests(project, TestsOutcome("ran", runner="unittest"))
    assert (outcome.status, outcome.passed, outcome.failed, outcome.errors, outcome.skipped) == (
        "ran",
        1,
        1,
        1,
        1,
    )
    assert outcome.short() == "1/1+1e" and not outcome.usable


def test_the_unittest_check_command_fails_on_a_copy_that_breaks_a_test(tmp_path: Path) -> None:
    project = _unittest_project(tmp_path / "released", declared=True)
    command = check_command(project, TestsOutcome("ran", runner="unittest"))
    copy = shutil.copytree(project, tmp_path / "copy")

    def passes() -> bool:
        done = subprocess.run(["/bin/sh", "-c", command], cwd=copy, capture_output=True, check=False)
        return done.returncode == 0

    assert passes()
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")
    assert not passes()


def test_a_test_that_fails_now_and_then_is_left_out_too(tmp_path: Path) -> None:
    """chardet 5.2.0 passed all 755 tests as released, then failed one at both later stages."""
    flip = tmp_path / "flip"
    test = "from pathlib import Path\n\ndef test_ok():\n    assert True\n\n"
    test += f"def test_flaky():\n    flip = Path({str(flip)!r})\n"
    test += "    if flip.exists():\n        flip.unlink()\n        raise AssertionError('now')\n"
    test += "    flip.write_text('')\n"

    outcome = run_package_tests(_project(tmp_path / "released", test))

    assert outcome.deselected == ("tests/test_pkg.py::test_flaky",)
    assert (outcome.passed, outcome.failed) == (1, 0) and outcome.usable


_SCRIPT = """import sys
import unittest

sys.path.insert(0, "..")  # as ply 3.11's test/testlex.py: run from its folder

from pkg import two


class TwoTests(unittest.TestCase):
    def test_two(self):
        self.assertEqual(two(), 2)

    def test_not_here(self):
        self.assertEqual(two(), 3)  # fails as released


unittest.main()
"""


def test_scripts_that_run_their_own_tests_run_from_their_folder_without_what_fails_as_released(
    tmp_path: Path,
) -> None:
    """ply 3.11's tests: ``test/testlex.py`` calls ``unittest.main()`` as it loads, so importing
    it runs it, and its README says to run ``python testlex.py`` from ``test/``. A module that
    does not call it (ply's ``testcpp.py``) is not a script of its own and is left alone."""
    project = tmp_path / "released"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("def two():\n    return 2\n")
    (project / "test").mkdir()
    (project / "test" / "testtwo.py").write_text(_SCRIPT)
    (project / "test" / "testhelper.py").write_text("import six\n")  # not installed: never run
    dependencies = (str(tmp_path / "dependencies"),)  # carried to every stage and the check

    outcome = run_package_tests(project, dependencies=dependencies)

    assert outcome.runner == "scripts" and outcome.usable and outcome.dependencies == dependencies
    assert (outcome.passed, outcome.failed, outcome.errors) == (1, 0, 0)
    assert outcome.deselected == ("test/testtwo.py::TwoTests.test_not_here",)
    assert outcome.named == ("test/testtwo.py::TwoTests.test_two",)
    command = check_command(project, outcome)
    assert dependencies[0] in command
    copy = shutil.copytree(project, tmp_path / "copy")
    assert (
        subprocess.run(["/bin/sh", "-c", command], cwd=copy, capture_output=True, check=False).returncode == 0
    )
    assert run_package_tests(copy, outcome).passed == 1
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")
    assert (
        subprocess.run(["/bin/sh", "-c", command], cwd=copy, capture_output=True, check=False).returncode != 0
    )
    assert run_package_tests(copy, outcome).failed == 1


_RUNTESTS = """import glob
import os
import sys
import unittest

from pkg import two


class Feeds(unittest.TestCase):
    pass


def make(path):
    def test(self):
        with open(path) as f:
            self.assertEqual(two(), int(f.read()))

    return test


def runtests():
    for n, path in enumerate(sorted(glob.glob(os.path.join(".", "tests", "cases", "*.txt")))):
        setattr(Feeds, "test_%d" % n, make(path))
    result = unittest.TextTestRunner(verbosity=1).run(unittest.TestLoader().loadTestsFromTestCase(Feeds))
    sys.exit(not result.wasSuccessful())


if __name__ == "__main__":
    runtests()
"""


def test_a_script_that_runs_the_suite_runs_from_the_root_and_is_the_check(tmp_path: Path) -> None:
    """feedparser 6.0.14: ``tests/runtests.py`` builds its tests from the files it globs under
    ``./tests`` when run as a script from the project root; pytest collects nothing there."""
    project = tmp_path / "released"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("def two():\n    return 2\n")
    (project / "tests" / "cases").mkdir(parents=True)
    for n in range(3):
        (project / "tests" / "cases" / f"{n}.txt").write_text("2")
    (project / "tests" / "runtests.py").write_text(_RUNTESTS)

    outcome = run_package_tests(project)

    assert (outcome.status, outcome.runner, outcome.named) == ("ran", "runtests", ("tests/runtests.py",))
    assert (outcome.passed, outcome.failed, outcome.errors) == (3, 0, 0) and outcome.usable
    command = check_command(project, outcome)
    copy = shutil.copytree(project, tmp_path / "copy")
    assert subprocess.run(["/bin/sh", "-c", command], cwd=copy, check=False).returncode == 0
    assert run_package_tests(copy, outcome).passed == 3
    (copy / "pkg" / "__init__.py").write_text("def two():\n    return 3\n")
    assert (
        subprocess.run(["/bin/sh", "-c", command], cwd=copy, capture_output=True, check=False).returncode != 0
    )
    assert run_package_tests(copy, outcome).failed == 3


def test_a_suite_script_that_fails_as_released_is_not_used(tmp_path: Path) -> None:
    """The script takes no test names, so a test failing as released cannot be left out: such
    a script tells nothing of a change."""
    project = tmp_path / "released"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("def two():\n    return 2\n")
    (project / "tests" / "cases").mkdir(parents=True)
    (project / "tests" / "cases" / "0.txt").write_text("2")
    (project / "tests" / "cases" / "1.txt").write_text("3")
    (project / "tests" / "runtests.py").write_text(_RUNTESTS)

    outcome = run_package_tests(project)

    assert outcome.runner != "runtests" and not outcome.usable
