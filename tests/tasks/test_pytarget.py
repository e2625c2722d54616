"""The lowest Python a codebase declares, ruff given it, and what breaks it (real ruff, real
interpreters)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from structured_agents.tasks.lint import discover_lint_jobs
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.pytarget import PythonTarget, find_interpreter, lowest_admitted, python_target
from structured_agents.tasks.ruff import ruff_diagnostics, ruff_safe_fixes

TYPED = (
    "from typing import List, Optional, Union\n\n\n"
    "def size(x: Union[bytes, str], pad: Optional[int] = None) -> List[int]:\n"
    "    return [len(x)]\n"
)
"""Typing forms pyupgrade (UP006, UP007, UP045) rewrites for Python 3.10+."""
RUNNING = sys.version_info[:2]


@pytest.mark.parametrize(
    ("files", "lowest", "source"),
    [
        (
            {"pyproject.toml": '[project]\nname = "p"\nrequires-python = ">=3.8"\n'},
            (3, 8),
            "requires-python >=3.8 in pyproject.toml",
        ),
        (
            {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.9"\n'},
            (3, 9),
            "requires-python ^3.9 in pyproject.toml (Poetry)",
        ),
        (
            {"setup.cfg": "[options]\npython_requires = >=3.7, <4\n"},
            (3, 7),
            "requires-python >=3.7, <4 in setup.cfg",
        ),
        (
            {"setup.py": 'from setuptools import setup\nsetup(name="p", python_requires=">=3.6")\n'},
            (3, 6),
            "requires-python >=3.6 in setup.py",
        ),
        (  # python-slugify 8.0.4's form
            {"setup.py": 'python_requires = ">=3.7"\nsetup(name="p", python_requires=python_requires)\n'},
            (3, 7),
            "requires-python >=3.7 in setup.py",
        ),
        (
            {"PKG-INFO": "Name: p\nRequires-Python: >=3.8\n\nRequires-Python: >=2.7 (the body)\n"},
            (3, 8),
            "requires-python >=3.8 in PKG-INFO",
        ),
        (  # ptyprocess 0.7.0: flit's older metadata table
            {"pyproject.toml": '[tool.flit.metadata]\nmodule = "p"\nrequires-python = ">=3.5"\n'},
            (3, 5),
            "requires-python >=3.5 in pyproject.toml (flit)",
        ),
        (  # an unpacked wheel (tinydb 4.8.0 has no sdist): its METADATA says the same
            {"tinydb-4.8.0.dist-info/METADATA": "Name: tinydb\nRequires-Python: >=3.7,<4.0\n\nbody\n"},
            (3, 7),
            "requires-python >=3.7,<4.0 in tinydb-4.8.0.dist-info/METADATA",
        ),
        (
            {
                "pyproject.toml": '[project]\nrequires-python = ">=3.10"\n'
                '[tool.ruff]\ntarget-version = "py38"\n'
            },
            (3, 8),
            "target-version py38 in pyproject.toml",
        ),
        (
            {"ruff.toml": 'target-version = "py311"\n', "setup.cfg": "[options]\npython_requires = >=3.9\n"},
            (3, 9),
            "requires-python >=3.9 in setup.cfg",
        ),
        # where nothing states it, the classifiers and a universal wheel imply it
        (  # parse 1.20.1: no requires-python, a universal wheel, a bare "Python :: 3"
            {
                "pyproject.toml": '[project]\nclassifiers = ["Programming Language :: Python :: 3"]\n'
                "[tool.distutils.bdist_wheel]\nuniversal = true\n"
            },
            (2, 7),
            "a universal wheel (Python 2 and 3) in pyproject.toml",
        ),
        (  # webencodings 0.5.1
            {
                "setup.py": "setup(classifiers=['Programming Language :: Python :: 2.6',\n"
                "    'Programming Language :: Python :: 3.3'])\n"
            },
            (2, 6),
            "classifier Python :: 2.6 in setup.py",
        ),
        (
            {"setup.cfg": "[metadata]\nclassifiers =\n    Programming Language :: Python :: 3.8\n"},
            (3, 8),
            "classifier Python :: 3.8 in setup.cfg",
        ),
        (  # ptyprocess 0.7.0: its classifiers only in flit's older metadata table
            {
                "pyproject.toml": '[tool.flit.metadata]\nmodule = "ptyprocess"\nclassifiers = [\n'
                '    "Programming Language :: Python :: 2.7",\n'
                '    "Programming Language :: Python :: 3",\n]\n'
            },
            (2, 7),
            "classifier Python :: 2.7 in pyproject.toml",
        ),
        (
            {"PKG-INFO": "Name: p\nClassifier: Programming Language :: Python :: 2\n\nbody\n"},
            (2, 7),
            "classifier Python :: 2.7 in PKG-INFO",
        ),
        (
            {"setup.cfg": "[wheel]\nuniversal = 1\n"},
            (2, 7),
            "a universal wheel (Python 2 and 3) in setup.cfg",
        ),
        (  # mccabe 0.7.0: requires-python decides; its universal wheel is a leftover
            {"setup.py": 'setup(python_requires=">=3.6")\n', "setup.cfg": "[bdist_wheel]\nuniversal = 1\n"},
            (3, 6),
            "requires-python >=3.6 in setup.py",
        ),
    ],
)
def test_the_lowest_declared_python_is_the_target(
    tmp_path: Path, files: dict[str, str], lowest: tuple[int, int], source: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)

    target = python_target(tmp_path)

    assert (target.lowest, target.source) == (lowest, source)
    assert target.ruff_options()[:2] == (
        "--target-version",
        f"py3{max(lowest[1], 7) if lowest[0] == 3 else 7}",
    )


def test_ruff_reads_the_first_config_there_is_and_nothing_is_run(tmp_path: Path) -> None:
    """``.ruff.toml`` wins over ``ruff.toml`` (as in ruff); a computed ``python_requires`` is not
    evaluated."""
    (tmp_path / ".ruff.toml").write_text("line-length = 100\n")
    (tmp_path / "ruff.toml").write_text('target-version = "py37"\n')
    (tmp_path / "setup.py").write_text("import sys\nsetup(python_requires=sys.argv[0])\n")

    target = python_target(tmp_path)

    assert (target.lowest, target.ruff_options()) == (None, ())
    assert target.describe() == "no lowest Python declared: ruff's default target"


@pytest.mark.parametrize(
    ("spec", "lowest"),
    [
        (">=3.6", (3, 6)),
        (">=3.6.1", (3, 6)),
        ("~=3.10", (3, 10)),
        ("~3.9", (3, 9)),
        (">=2.7, !=3.0.*, !=3.1.*", (2, 7)),
        (">=3.8,<4.0", (3, 8)),
        ("*", None),
        ("not a specifier", None),
    ],
)
def test_the_lowest_version_a_specifier_admits(spec: str, lowest: tuple[int, int] | None) -> None:
    assert lowest_admitted(spec) == lowest


def test_ruff_keeps_to_the_target_so_its_fixes_import_on_the_lowest_python(tmp_path: Path) -> None:
    """idna declares Python 3.6; ``ruff check --fix`` with ruff's default target wrote
    ``bytes | str`` annotations that fail to import there."""
    root = tmp_path
    (root / "setup.py").write_text("from setuptools import setup\n\nsetup(python_requires='>=3.6')\n")
    (root / "ruff.toml").write_text('[lint]\nselect = ["UP", "F"]\n')
    (root / "typed.py").write_text(TYPED + "import os\n")
    target = python_target(root)

    fixed = ruff_safe_fixes(root, "typed.py", TYPED + "import os\n", *target.ruff_options())
    [job] = discover_lint_jobs(root)

    assert target.describe() == (
        "Python 3.6+ (requires-python >=3.6 in setup.py; ruff: py37, "
        "without UP021, UP022, UP036: newer than the target)"
    )
    assert fixed == TYPED  # the unused import goes; the typing forms stay
    assert job.inputs["source"] == TYPED
    assert target.breaks(root, "typed.py", TYPED, fixed) is None


@pytest.mark.parametrize(
    ("lowest", "text", "message"),
    [
        ((3, 9), "def f(x: int | None) -> None:\n    pass\n", "uses PEP 604 union"),
        ((3, 8), "def f(x: list[int]) -> None:\n    pass\n", "uses PEP 585 collection"),
        ((3, 7), "if (n := 1):\n    pass\n", "Cannot use named assignment expression (`:=`) on Python 3.7"),
        ((3, 9), "match 1:\n    case _:\n        pass\n", "Cannot use `match` statement on Python 3.9"),
        # below ruff's lowest target (simplejson 3.19 declares >=2.5): read from the tree
        ((2, 5), "name = 'x'\nprint(f'{name}')\n", "an f-string needs Python 3.6"),
        ((2, 7), "try:\n    pass\nexcept ValueError as e:\n    raise KeyError from e\n", "raise ... from"),
        ((3, 4), "a = [1]\nb = [*a, 2]\n", "unpacking into a display ([*a, *b]) needs Python 3.5"),
    ],
)
def test_a_form_the_lowest_python_lacks_breaks_it(
    tmp_path: Path, lowest: tuple[int, int], text: str, message: str
) -> None:
    target = PythonTarget(lowest, "test")

    broken = target.breaks(tmp_path, "m.py", "x = 1\n", text)

    assert broken is not None and message in broken
    assert target.breaks(tmp_path, "m.py", text, text) is None  # the original had it already
    assert PythonTarget(None, "declared").breaks(tmp_path, "m.py", "x = 1\n", text) is None


def test_the_lowest_pythons_own_interpreter_compiles_the_text(tmp_path: Path) -> None:
    """Ruff cannot see every form (an f-string's ``=``); the interpreter, where there is one,
    has the last word. The running interpreter stands in on any machine."""
    target = PythonTarget(RUNNING, "test")
    interpreter = find_interpreter(RUNNING)

    broken = target.breaks(tmp_path, "m.py", "x = 1\n", "x = (1\n")

    assert interpreter is not None and broken is not None
    assert broken.startswith(f"{Path(interpreter).name} cannot compile it: line 1: SyntaxError")


def test_an_f_string_self_documenting_expression_breaks_python_3_7_where_it_is_installed(
    tmp_path: Path,
) -> None:
    """``f"{x=}"`` is 3.8 syntax ruff does not report; only a ``python3.7`` can tell."""
    target = PythonTarget((3, 7), "test")

    broken = target.breaks(tmp_path, "m.py", "x = 1\n", "x = 1\nprint(f'{x=}')\n")

    if find_interpreter((3, 7)) is None:
        assert broken is None
    else:
        assert broken is not None and broken.startswith("python3.7 cannot compile it: line ")
        assert "SyntaxError" in broken


def test_a_pyenv_shim_is_not_an_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shim runs pyenv's global version, whatever its name says; an install is found."""
    shims, install = tmp_path / "shims", tmp_path / "versions" / "3.4.10" / "bin"
    shims.mkdir()
    install.mkdir(parents=True)
    for binary in (shims / "python3.4", install / "python3.4"):
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", f"{shims}:/usr/bin:/bin")

    assert find_interpreter((3, 4)) == str(install / "python3.4")
    assert find_interpreter((3, 3)) is None


def test_a_source_folder_takes_the_packaging_of_the_folder_above_but_not_past_git(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[options]\npython_requires = >=3.8\n")
    package = tmp_path / "repo" / "src" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "repo" / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.9"\n')

    assert python_target(package).source == "requires-python >=3.9 in ../../pyproject.toml"
    (tmp_path / "repo" / "pyproject.toml").unlink()
    assert python_target(package).source == "requires-python >=3.8 in ../../../setup.cfg"
    (tmp_path / "repo" / ".git").mkdir()  # the repository's top: nothing above it is the codebase's
    assert python_target(package).lowest is None


def test_pyupgrade_is_off_for_a_codebase_that_supports_python_2(tmp_path: Path) -> None:
    """colorama 0.4.6 declares >=2.7: ``super()`` and ``class A:`` compile there and then run
    differently, so ruff is not let rewrite for Python 3 (``ruff --fix`` alone did)."""
    (tmp_path / "setup.py").write_text('setup(name="p", python_requires=">=2.7, !=3.0.*")\n')
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["UP", "F"]\n')
    old = "import os\n\n\nclass A(object):\n    def f(self):\n        return super(A, self).f()\n"
    target = python_target(tmp_path)

    fixed = ruff_safe_fixes(tmp_path, "m.py", old, *target.ruff_options())

    assert target.python2 and target.describe().endswith(
        "ruff: py37, without UP: pyupgrade rewrites for Python 3; "
        "B904, RUF046, RUF057, SIM105, RUF005, RUF012: newer than the target)"
    )
    assert fixed == old.replace("import os\n", "")  # F's fix still applies
    assert not python_target_of(tmp_path, ">=3.6").python2


def python_target_of(root: Path, spec: str) -> PythonTarget:
    (root / "setup.py").write_text(f'setup(name="p", python_requires="{spec}")\n')
    return python_target(root)


def test_a_safe_fix_that_breaks_the_lowest_python_is_left_unfixed_and_the_rest_stand(tmp_path: Path) -> None:
    """six 1.16.0's B009 writes ``moves.builtins.exec`` (a syntax error on 2.7), which rejected
    the whole file. Here SIM117's one ``with`` of two managers breaks a codebase that supports
    Python 2.6; F401's
    fix still applies, in discovery and in the lint job's outcome alike."""
    (tmp_path / "setup.py").write_text('setup(name="p", python_requires=">=2.6")\n')
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["SIM117", "F401", "E712"]\n')
    nested = "with open('a') as a:\n    with open('b') as b:\n        pass\n"
    text = f"import os\n\n{nested}ready = a == True\n"
    (tmp_path / "m.py").write_text(text)
    settings = lint_settings(tmp_path)

    options = settings.file_options(tmp_path, "m.py", text)
    fixed = ruff_safe_fixes(tmp_path, "m.py", text, *options)
    [job] = discover_lint_jobs(tmp_path)

    assert options[-2:] == ("--unfixable", "SIM117")
    assert "import os" not in fixed and nested in fixed
    assert job.inputs["source"] == fixed
    assert (
        ruff_safe_fixes(tmp_path, "m.py", text, *settings.ruff_options()) != fixed
    )  # ruff alone writes one with
    assert settings.target.breaks(tmp_path, "m.py", text, fixed) is None


def _codes_under(root: Path, spec: str, text: str) -> list[str]:
    """The codes of ruff's findings in ``text`` for a codebase at ``root`` declaring ``spec``."""
    options = python_target_of(root, spec).ruff_options()
    return sorted(str(item["code"]) for item in ruff_diagnostics(root, "m.py", text, *options))


def test_rules_that_ask_for_more_than_python_3_5_or_3_6_has_are_off(tmp_path: Path) -> None:
    """inflection 0.5.1 declares >=3.5: ``ruff --fix`` alone wrote its f-strings, and the agent,
    which may not, was charged with eleven UP032 findings. ``text=`` (UP021) compiles on 3.6
    and raises ``TypeError`` there."""
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["UP", "F401"]\n')
    text = (
        "import subprocess\nimport sys\nimport os\n\n"
        "if sys.version_info < (3, 6):\n    X = 1\nelse:\n    X = 2\n"
        "subprocess.run(['ls'], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
        "subprocess.run(['ls'], universal_newlines=True)\n"
        "print('{}'.format(X))\n"
    )

    def codes(spec: str) -> list[str]:
        return _codes_under(tmp_path, spec, text)

    assert codes(">=3.5") == ["F401"]
    assert codes(">=3.6") == ["F401", "UP032"]
    assert codes(">=3.7") == ["F401", "UP021", "UP022", "UP032", "UP036"]
    assert (
        python_target_of(tmp_path, ">=3.6")
        .describe()
        .endswith("ruff: py37, without UP021, UP022, UP036: newer than the target)")
    )


REFUSED_BELOW = (
    "import os\n\n\nclass A:\n    names = []\n\n\n"
    "def f(d, k, rest):\n    try:\n        del d[k]\n    except KeyError:\n        pass\n"
    "    try:\n        return d[k]\n    except KeyError:\n        raise ValueError(k)\n"
    "    return [k] + rest\n\n\n"
    "def width(x):\n    return str(int(round(x))), round(3)\n"
)


@pytest.mark.parametrize(
    ("spec", "found"),
    [
        (">=3.6", "B904 F401 RUF005 RUF012 RUF046 RUF057 SIM105"),
        (">=3.5", "B904 F401 RUF005 RUF046 RUF057 SIM105"),
        (">=3.4", "B904 F401 RUF046 RUF057 SIM105"),
        (">=3.3", "B904 F401 RUF046 RUF057"),
        (">=2.7", "F401"),
    ],
)
def test_rules_whose_every_fix_an_older_python_refuses_are_off_below_it(
    tmp_path: Path, spec: str, found: str
) -> None:
    """colorama 0.4.6, toml 0.10.2 and parse 1.20.2 support Python 2: their B904 findings
    (``raise ... from``) were left by ``ruff --fix`` and the agent alike, as each fix is a
    syntax error there, and counted against both. The same holds of unpacking in a display
    (RUF005) before 3.5, ``contextlib.suppress`` (SIM105) before 3.4 and a ``ClassVar``
    annotation (RUF012) before 3.6; and of dropping ``int()`` around a ``round()`` (RUF046)
    on Python 2, whose ``round()`` returns a float (texttable 1.7.0 printed ``4.0``)."""
    rules = '"B904", "RUF005", "RUF012", "RUF046", "RUF057", "SIM105", "F401"'
    (tmp_path / "ruff.toml").write_text(f"[lint]\nselect = [{rules}]\n")

    assert _codes_under(tmp_path, spec, REFUSED_BELOW) == found.split()
    if spec == ">=3.4":
        described = python_target_of(tmp_path, spec).describe()
        assert described.endswith(
            "without UP032, UP021, UP022, UP036, RUF005, RUF012: newer than the target)"
        )
