"""The ruff configuration at a root, as ruff reads it (checked against ruff's own reading)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from structured_agents.evaluation.lint_eval import RUFF_DEFAULT_RULES, _pin, pin_default_rules
from structured_agents.tasks.pytarget import python_target
from structured_agents.tasks.ruff_config import ruff_config_file, ruff_settings, selects_rules


def _ruff_codes(root: Path) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "--no-cache",
        "--exit-zero",
        "--output-format",
        "concise",
    ]
    done = subprocess.run([*command, "m.py"], cwd=root, capture_output=True, text=True, check=True)
    return sorted({line.split()[1] for line in done.stdout.splitlines() if line.startswith("m.py:")})


def test_the_first_config_ruff_reads_and_what_it_extends(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')  # no [tool.ruff]: not a config
    assert ruff_config_file(tmp_path) is None and ruff_settings(tmp_path) == {}

    (tmp_path / "base.toml").write_text('target-version = "py38"\nline-length = 90\n[lint]\nselect = ["E"]\n')
    (tmp_path / "ruff.toml").write_text(
        'extend = "base.toml"\nline-length = 100\n[lint]\nignore = ["E501"]\n'
    )

    settings = ruff_settings(tmp_path)

    assert ruff_config_file(tmp_path) == tmp_path / "ruff.toml"
    assert settings == {
        "target-version": "py38",
        "line-length": 100,
        "lint": {"select": ["E"], "ignore": ["E501"]},
    }
    assert selects_rules(settings) and python_target(tmp_path).source == "target-version py38 in ruff.toml"


def test_an_extend_cycle_ends(tmp_path: Path) -> None:
    (tmp_path / "ruff.toml").write_text('extend = "other.toml"\nline-length = 100\n')
    (tmp_path / "other.toml").write_text('extend = "ruff.toml"\nline-length = 80\n')

    assert ruff_settings(tmp_path) == {"line-length": 100}


def test_a_package_selecting_no_rules_is_counted_under_rufs_long_standing_defaults(tmp_path: Path) -> None:
    """A config that only extends the defaults chose them as they were (idna: ``extend-select =
    ["I"]``); ruff versions that select more by default would count rules it never chose."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\nrequires-python = ">=3.8"\n\n[tool.ruff]\nline-length = 127\n'
        '[tool.ruff.lint]\nextend-select = ["I"]\nignore = ["F811"]\n'
    )
    (tmp_path / "m.py").write_text(
        "import sys\nimport os\n\n\ndef f(x: int) -> int:\n    return x  # noqa: E999\n"
    )

    assert pin_default_rules(tmp_path)

    assert set(_ruff_codes(tmp_path)) <= {"F401", "I001", "RUF100"}  # F (default) and I (extended)
    assert "F401" in _ruff_codes(tmp_path) and "I001" in _ruff_codes(tmp_path)
    assert ruff_settings(tmp_path)["lint"]["select"] == [*RUFF_DEFAULT_RULES, "I"]
    assert ruff_settings(tmp_path)["lint"]["ignore"] == ["F811"]
    assert ruff_settings(tmp_path)["line-length"] == 127  # the package's own settings still hold
    assert python_target(tmp_path).lowest == (3, 8)
    assert not pin_default_rules(tmp_path)  # it selects now: pinned once


def test_the_strict_pin_keeps_the_line_length_no_extend_carries(tmp_path: Path) -> None:
    """A flake8 project's 100 columns hold under ``sa eval lint --strict`` too."""
    for root, length, codes in ((tmp_path / "a", 100, ["F401"]), (tmp_path / "b", None, ["E501", "F401"])):
        root.mkdir()
        (root / "m.py").write_text("import os\nVALUE = '" + "word " * 17 + "'\n")  # 95 columns
        _pin(root, "--strict", ["E501", "F"], [], length)
        assert _ruff_codes(root) == codes  # without a length: ruff's 88
