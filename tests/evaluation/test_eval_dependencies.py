"""A package's requirements this interpreter lacks, installed by real pip (from a local folder,
no network) beside it for its tests, which then run and are the check."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

from structured_agents.evaluation.dependencies import install_dependencies, missing_requirements
from structured_agents.evaluation.package_tests import check_command, run_package_tests

NAME = "sa_eval_pointer"
"""A distribution no interpreter here has installed."""


def _wheel(folder: Path) -> Path:
    """A pure wheel of :data:`NAME` 1.0 whose module says ``resolve() == 2``."""
    folder.mkdir(parents=True)
    wheel = folder / f"{NAME}-1.0-py3-none-any.whl"
    info = f"{NAME}-1.0.dist-info"
    files = {
        f"{NAME}.py": "def resolve():\n    return 2\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(path, text)
    return folder


def _project(root: Path, *requires: str) -> Path:
    """jsonpatch 1.33's shape: its tests import it, and it imports what it requires."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(
        f"from {NAME} import resolve\n\n\ndef two():\n    return resolve()\n"
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_pkg.py").write_text(
        "from pkg import two\n\n\ndef test_two():\n    assert two() == 2\n"
    )
    lines = "".join(f"Requires-Dist: {line}\n" for line in requires)
    (root / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n{lines}")
    return root


def test_only_what_is_required_for_no_extra_here_and_not_installed_is_missing(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        f"{NAME}>=1",
        "packaging>=1",  # installed here
        "pytest-cov; extra == 'test'",
        "pywin32; sys_platform == 'win32'",
        "not a requirement ((",
    )

    assert missing_requirements(root) == [f"{NAME}>=1"]
    assert missing_requirements(tmp_path / "none") == []


def test_the_missing_requirement_is_installed_beside_the_package_and_its_tests_run(tmp_path: Path) -> None:
    released = _project(tmp_path / "released", NAME)
    without = run_package_tests(released)
    assert not without.usable  # the one test module cannot import what pkg needs

    found = install_dependencies(released, tmp_path / "dependencies", _wheel(tmp_path / "wheels"))

    assert found == (str(tmp_path / "dependencies"),)
    outcome = run_package_tests(released, dependencies=found)
    assert outcome.usable and outcome.short() == "1/0" and outcome.dependencies == found
    copy = shutil.copytree(released, tmp_path / "copy")
    assert run_package_tests(copy, outcome).short() == "1/0"  # carried to every stage
    (copy / "pkg" / "__init__.py").write_text(f"from {NAME} import resolve\n\n\ndef two():\n    return 3\n")
    done = subprocess.run(["/bin/sh", "-c", check_command(released, outcome)], cwd=copy, check=False)
    assert done.returncode == 1  # the check imports the dependency, and fails only on the change


def test_a_requirement_pip_cannot_find_leaves_the_tests_as_they_were(tmp_path: Path) -> None:
    released = _project(tmp_path / "released", NAME)

    assert (
        install_dependencies(released, tmp_path / "dependencies", _wheel(tmp_path / "empty") / "none") == ()
    )
    assert install_dependencies(_project(tmp_path / "plain"), tmp_path / "unused") == ()
    assert not (tmp_path / "unused").exists()


def test_an_egg_info_requires_txt_is_read_where_pkg_info_names_none(tmp_path: Path) -> None:
    """jsonpatch 1.33: ``jsonpointer>=1.9`` is only in ``jsonpatch.egg-info/requires.txt``."""
    root = _project(tmp_path)
    (root / "pkg.egg-info").mkdir()
    (root / "pkg.egg-info" / "requires.txt").write_text(
        f"{NAME}>=1.0\n\n[:sys_platform == 'win32']\npywin32\n\n[test]\npytest-cov\n\n"
        f"[:python_version >= '3']\n{NAME}-py3\n"
    )

    assert missing_requirements(root) == [f"{NAME}>=1.0", f'{NAME}-py3; python_version >= "3"']


def test_the_tests_requirements_file_is_read_but_for_pytest_and_its_plugins(tmp_path: Path) -> None:
    """humanfriendly 10.0's tests need ``capturer`` and ``coloredlogs``, listed only in its
    ``requirements-tests.txt``; its ``pytest`` and ``pytest-cov`` are not installed again."""
    root = _project(tmp_path, f"{NAME}>=1")
    (root / "requirements-tests.txt").write_text(
        f"# Test suite requirements.\n-r requirements.txt\n{NAME}-capturer >= 2.1  # output\n"
        "pytest >= 3.0.7\npytest-cov >= 2.4.0\ncoverage\n"
    )

    assert missing_requirements(root) == [f"{NAME}>=1", f"{NAME}-capturer>=2.1"]
