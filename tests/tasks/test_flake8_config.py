"""A codebase's flake8 configuration, translated for ruff: what ruff then reports on real files."""

from __future__ import annotations

from pathlib import Path

from structured_agents.tasks.declared_tools import declared_text
from structured_agents.tasks.flake8_config import DEFAULT_SELECT, flake8_rules
from structured_agents.tasks.flake8_plugins import installed_plugins
from structured_agents.tasks.lint import discover_lint_jobs
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.ruff import ruff_findings

LAMBDA_AND_IMPORT = "import os\n\nsquare = lambda x: x * x\n"
LONG = "VALUE = 1  # " + "x" * 80 + "\n"  # 94 characters


def _codes(root: Path, *files: str) -> dict[str, list[str]]:
    found = ruff_findings(root, list(files), *lint_settings(root).ruff_options())
    return {path: sorted(f["code"] for f in findings) for path, findings in found.items()}


def test_no_flake8_section_is_none(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = p\n")
    assert flake8_rules(tmp_path) is None
    assert lint_settings(tmp_path).flake8 is None and lint_settings(tmp_path).rules() == ""


def test_every_setting_is_translated_and_codes_ruff_lacks_are_named(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text(
        "[flake8]\n"
        "select = C, E, F, W, B, B950  # bugbear's opinionated line length\n"
        "extend-ignore =\n    E203,\n    W503\n"
        "ignore = E731, E741\n"
        "per-file-ignores =\n    pkg/__init__.py:F401,F403\n    tests/*: E501\n"
        "exclude = ./docs/conf.py, build/\n"
        "max-line-length = 100\n"
        "max-complexity = 12\n"
    )
    rules = flake8_rules(tmp_path)

    assert rules is not None and rules.source == "setup.cfg"
    assert rules.select == ("C", "E", "F", "W", "B")
    assert rules.unknown == ("B950",)  # selected but unknown to ruff: said
    assert rules.ignore == ("E731", "E741", "E203")  # W503 is not ruff's: dropped silently
    assert rules.per_file_ignores == (("pkg/__init__.py", ("F401", "F403")), ("tests/*", ("E501",)))
    assert rules.exclude == ("docs/conf.py", "build")
    assert (rules.line_length, rules.width, rules.max_complexity) == (100, 100, 12)
    assert rules.ruff_options() == (
        "--select", "C,E,F,W,B", "--line-length", "100", "--ignore", "E731,E741,E203",
        "--per-file-ignores", "pkg/__init__.py:F401,F403", "--per-file-ignores", "tests/*:E501",
        "--extend-exclude", "docs/conf.py", "--extend-exclude", "build",
        "--config", "lint.mccabe.max-complexity = 12",
    )  # fmt: skip
    assert "not in ruff: B950" in rules.describe() and "line length 100" in rules.describe()


def test_flake8_defaults_where_the_section_sets_nothing(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("[tox]\nenvlist = py311\n\n[flake8]\nexclude = .tox\n")
    rules = flake8_rules(tmp_path)

    assert rules is not None and rules.source == "tox.ini"
    assert rules.select == DEFAULT_SELECT
    assert "E226" in rules.ignore and "W503" not in rules.ignore  # flake8's own ignore list, in ruff's terms
    assert (rules.line_length, rules.width, rules.max_complexity) == (79, 79, None)  # E501 is checked
    assert "C901" in rules.ruff_options()[rules.ruff_options().index("--ignore") + 1]  # no max-complexity


def test_the_first_file_with_a_section_wins(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = p\n")
    (tmp_path / "tox.ini").write_text("[flake8]\nselect = F\n")
    (tmp_path / ".flake8").write_text("[flake8]\nselect = E\n")
    rules = flake8_rules(tmp_path)
    assert rules is not None and (rules.source, rules.select) == ("tox.ini", ("F",))


def test_ruff_checks_what_flake8_would(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(LAMBDA_AND_IMPORT + LONG)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(LAMBDA_AND_IMPORT)
    assert _codes(tmp_path, "m.py", "pkg/__init__.py") == {
        "m.py": ["F401"],
        "pkg/__init__.py": ["F401"],
    }  # ruff's defaults

    (tmp_path / "setup.cfg").write_text("[flake8]\nexclude = .tox\n")  # flake8's defaults
    assert _codes(tmp_path, "m.py", "pkg/__init__.py") == {
        "m.py": ["E501", "E731", "F401"],
        "pkg/__init__.py": ["E731", "F401"],
    }

    (tmp_path / "setup.cfg").write_text(
        "[flake8]\nignore = E731\nper-file-ignores = pkg/__init__.py:F401\nmax-line-length = 90\n"
    )
    assert _codes(tmp_path, "m.py", "pkg/__init__.py") == {"m.py": ["E501", "F401"]}

    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["E7"]\n')  # ruff's own config wins
    assert lint_settings(tmp_path).flake8 is None
    assert _codes(tmp_path, "m.py", "pkg/__init__.py") == {"m.py": ["E731"], "pkg/__init__.py": ["E731"]}


def test_a_letter_that_only_begins_a_code_is_no_selector(tmp_path: Path) -> None:
    """hyperlink 21.0.0 selects every letter, ``A`` to ``Z`` ("BRING THE PAIN"): ruff refused
    the whole run over ``L`` (which only begins ``LOG001``), and the evaluation stopped."""
    letters = ", ".join(chr(code) for code in range(ord("A"), ord("Z") + 1))
    (tmp_path / "tox.ini").write_text(f"[flake8]\nselect = {letters}\nignore = W503\n")
    (tmp_path / "m.py").write_text(LAMBDA_AND_IMPORT)

    rules = flake8_rules(tmp_path)

    assert rules is not None and {"L", "O", "Z"} <= set(rules.unknown) and "E" not in rules.unknown
    assert _codes(tmp_path, "m.py") == {"m.py": ["D100", "E731", "F401"]}  # ruff runs, D too


EVERY_LETTER = ", ".join(chr(code) for code in range(ord("A"), ord("Z") + 1))
HYPERLINK_TOX = """[testenv:flake8]
deps =
    flake8-bugbear==20.11.1
    flake8==3.8.4
    pep8-naming==0.11.1
    # flake8-docstrings would report D; it is not installed
    pydocstyle==5.1.1
commands =
    flake8 {posargs:src}

[flake8]
select = %s
ignore = W503
"""


def test_a_selected_code_no_installed_plugin_reports_is_left_out(tmp_path: Path) -> None:
    """hyperlink 21.0.0 selects every letter and installs bugbear and pep8-naming beside flake8:
    its flake8 reports no ``D`` (pydocstyle is installed, but flake8-docstrings is what would
    report it through flake8), and ``C`` is mccabe's ``C90``."""
    (tmp_path / "tox.ini").write_text(HYPERLINK_TOX % EVERY_LETTER)
    (tmp_path / "m.py").write_text(LAMBDA_AND_IMPORT)

    rules = flake8_rules(tmp_path)

    assert rules is not None and rules.select == ("B", "C90", "E", "F", "N", "W")
    assert {"A", "D", "S", "U"} <= set(rules.unplugged) and "L" in rules.unknown
    assert "no plugin installed for: A, D," in rules.describe()
    assert _codes(tmp_path, "m.py") == {"m.py": ["E731", "F401"]}  # no D100


def test_plugins_are_read_wherever_the_codebase_installs_them(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text(f"[flake8]\nselect = {EVERY_LETTER}\n")
    assert (
        installed_plugins(declared_text(tmp_path)) is None
    )  # nothing says how flake8 is installed: all stand
    (tmp_path / "tox.ini").write_text("[testenv:lint]\ncommands =\n    flake8\n")
    assert installed_plugins(declared_text(tmp_path)) is None  # a command running it says nothing of plugins
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    workflow = "jobs:\n  lint:\n    steps:\n      - run: python -m pip install flake8 pytest\n"
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(workflow + "      - run: flake8 src\n")
    assert installed_plugins(declared_text(tmp_path)) == frozenset()
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(workflow.replace("pytest", "flake8-bugbear"))
    assert installed_plugins(declared_text(tmp_path)) == {"flake8-bugbear"}
    (tmp_path / ".github" / "workflows" / "ci.yml").unlink()

    (tmp_path / "requirements-dev.txt").write_text("flake8>=6  # flake8-quotes, one day\npytest\n")
    assert installed_plugins(declared_text(tmp_path)) == frozenset()
    rules = flake8_rules(tmp_path)
    assert rules is not None and rules.select == ("C90", "E", "F", "W")

    (tmp_path / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: https://github.com/pycqa/flake8\n  rev: 7.0.0\n  hooks:\n  - id: flake8\n"
        "    additional_dependencies: [flake8-docstrings==1.7.0, flake8-comprehensions]\n"
    )
    assert installed_plugins(declared_text(tmp_path)) == {"flake8-docstrings", "flake8-comprehensions"}
    rules = flake8_rules(tmp_path)
    assert rules is not None and set(rules.select) == {"C4", "C90", "D", "E", "F", "W"}


def test_where_select_is_unset_the_installed_plugins_codes_are_selected(tmp_path: Path) -> None:
    """natsort 8.4.0 sets no ``select`` and installs bugbear and pep8-naming: flake8 adds their
    codes to its default selection, bugbear's without its opinionated ``B9`` warnings."""
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 89\n")
    deps = "flake8\n    flake8-import-order\n    flake8-bugbear\n    pep8-naming"
    (tmp_path / "tox.ini").write_text(f"[testenv:flake8]\ndeps =\n    {deps}\ncommands = flake8\n")
    code = "class lower_case:\n    def f(self, x=[]):\n        try:\n            return x[0]\n"
    (tmp_path / "m.py").write_text(code + "        except IndexError:\n            raise ValueError(x)\n")

    rules = flake8_rules(tmp_path)

    assert rules is not None and set(rules.select) == {*DEFAULT_SELECT, "B0", "N"}
    assert _codes(tmp_path, "m.py") == {"m.py": ["B006", "N801"]}  # no B904: opinionated


def test_a_lint_job_says_whose_rules_and_skips_what_flake8_ignores(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[flake8]\nignore = E731, F401\n")
    (tmp_path / "quiet.py").write_text(LAMBDA_AND_IMPORT)
    (tmp_path / "loud.py").write_text("def f(x):\n    if x == None:\n        return 1\n")

    jobs = discover_lint_jobs(tmp_path)

    assert [job.path for job in jobs] == ["loud.py"]  # nothing flake8 checks in quiet.py
    assert (
        lint_settings(tmp_path)
        .rules()
        .startswith("flake8's in setup.cfg: select E, F, W, C90; ignore E731, F401")
    )


def test_the_line_length_a_change_may_write(tmp_path: Path) -> None:
    assert lint_settings(tmp_path).width is None
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 79\n")
    assert lint_settings(tmp_path).width == 79  # black's
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 99\n")
    assert lint_settings(tmp_path).width == 79  # black wraps at 79 what flake8 allows at 99
    (tmp_path / "pyproject.toml").unlink()
    assert lint_settings(tmp_path).width == 99  # flake8's, set
    (tmp_path / "setup.cfg").write_text("[flake8]\nignore = E731, E501\nmax-line-length = 99\n")
    assert lint_settings(tmp_path).width is None  # flake8 checks no length
    (tmp_path / "setup.cfg").write_text(
        "[flake8]\nselect = E, F, W, B, B950\nignore = E501\nmax-line-length = 80\n"
    )
    assert lint_settings(tmp_path).width == 88  # bugbear's B950: a tenth more, black's 88
    # wsproto 1.2.0: flake8 at 120, and its tox installs and runs black, at black's 88
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 120\n")
    (tmp_path / "tox.ini").write_text(
        "[testenv:lint]\ndeps =\n    flake8\n    black\ncommands = black --check src\n"
    )
    assert lint_settings(tmp_path).width == 88
    (tmp_path / "tox.ini").write_text("[testenv:lint]\ndeps = flake8\ncommands = black --check src\n")
    assert lint_settings(tmp_path).width == 120  # a command alone installs nothing
    (tmp_path / "ruff.toml").write_text("line-length = 110\n")
    assert lint_settings(tmp_path).width == 110  # ruff's own configuration
