"""``sa pym check`` and ``sa pym run`` through Typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structured_agents.cli.main import app
from structured_agents.settings import CACHE_DIR_ENV

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return CliRunner()


def test_check_reports_problems_with_locations(cli: CliRunner) -> None:
    result = cli.invoke(
        app, ["pym", "check", str(FIXTURES / "broken"), str(FIXTURES / "tools" / "kinds.pym")]
    )
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{FIXTURES / 'broken' / 'uses_class.pym'}:8:1: PYM002 class definitions are not supported",
        f"{FIXTURES / 'broken' / 'wrong_name.pym'}:3:10: PYM011 Input name 'y' differs from the variable 'x'",
    ]
    assert "3 file(s) checked, 2 problem(s)" in result.stderr


def test_check_valid_folder_and_grants(cli: CliRunner, tmp_path: Path) -> None:
    assert cli.invoke(app, ["pym", "check", str(FIXTURES / "tools")]).exit_code == 0
    script = tmp_path / "writer.pym"
    script.write_text(
        "from grail import external\n@external\nasync def write_file(path: str, content: str) -> int: ...\n"
    )
    denied = cli.invoke(app, ["pym", "check", str(script)])
    assert denied.exit_code == 1 and ":3:1: PYM024 external 'write_file' is not granted" in denied.stdout
    assert cli.invoke(app, ["pym", "check", str(script), "--grant", "write_file"]).exit_code == 0


def test_check_refuses_code_built_at_run_time(cli: CliRunner, tmp_path: Path) -> None:
    script = tmp_path / "sneaky.pym"
    script.write_text('"""Looks harmless."""\nexec("import os")\nrun = getattr(tools, "eval")\n')
    result = cli.invoke(app, ["pym", "check", str(script)])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{script}:2:1: PYM019 'exec' is not allowed: a tool may not run code it builds at run time",
        f"{script}:3:7: PYM019 'eval' is not allowed: a tool may not run code it builds at run time",
    ]


def test_run_prints_json(cli: CliRunner) -> None:
    result = cli.invoke(
        app, ["pym", "run", str(FIXTURES / "tools" / "kinds.pym"), "--inputs", '{"name": "x", "count": "2"}']
    )
    assert result.exit_code == 0, result.stderr
    value = json.loads(result.stdout)
    assert (value["name"], value["count"]) == ("x", 2)


def test_run_externals_need_grant_and_workspace(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("1\n2\n")
    script = str(FIXTURES / "tools" / "count_lines.pym")
    args = ["pym", "run", script, "--inputs", '{"path": "f.txt"}', "--workspace", str(tmp_path)]
    denied = cli.invoke(app, args)
    assert denied.exit_code == 1 and denied.stderr.startswith("PymCheckError:\n")
    granted = cli.invoke(app, [*args, "--grant", "read_file"])
    assert granted.exit_code == 0 and json.loads(granted.stdout) == {"path": "f.txt", "lines": 2}


def test_run_names_the_time_limit_of_an_operation_the_sandbox_cannot_interrupt(
    cli: CliRunner, tmp_path: Path
) -> None:
    script = tmp_path / "power.pym"
    # Two bigint powers, each dropped at once (12 MiB): one took 4.8 s on a 2026 core, under the
    # 5 s limit; the pool kills the worker 1 s past the limit, inside either power.
    script.write_text("x = 10 ** (3 * 10 ** 7) > 0\ny = 10 ** (3 * 10 ** 7) > 0\nx and y\n")
    result = cli.invoke(app, ["pym", "run", str(script)])  # the default limits: 5 s, timeout 30 s
    assert result.exit_code == 1
    assert result.stderr.startswith(f"PymLimitError: {script}: execution time limit of 5s exceeded (")
    assert "timeout" not in result.stderr


def test_run_typed_errors_exit_1(cli: CliRunner) -> None:
    result = cli.invoke(app, ["pym", "run", str(FIXTURES / "tools" / "forever.pym"), "--limits", "strict"])
    assert result.exit_code == 1
    assert (
        result.stderr.startswith("PymLimitError: ") and "execution time limit of 1s exceeded" in result.stderr
    )
    missing = cli.invoke(app, ["pym", "run", str(FIXTURES / "tools" / "kinds.pym")])
    assert missing.exit_code == 1 and "PymInputError: " in missing.stderr


@pytest.mark.parametrize(
    ("option", "value"), [("--inputs", "[1]"), ("--inputs", "{bad"), ("--limits", "huge")]
)
def test_run_bad_options_exit_2(cli: CliRunner, option: str, value: str) -> None:
    result = cli.invoke(app, ["pym", "run", str(FIXTURES / "tools" / "kinds.pym"), option, value])
    assert result.exit_code == 2
