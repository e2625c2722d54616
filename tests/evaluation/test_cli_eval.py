"""``sa eval`` end to end on a tiny package served from a local folder, with a scripted engine
injected by name (as ``tests/runner/test_cli_run.py`` does): no network, no model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import pytest
from eval_tiny_package import build_sdist
from typer.testing import CliRunner

from structured_agents.cli.main import app
from structured_agents.engines import Engine, GenerationRequest, ScriptedEngine, by_run_id
from structured_agents.engines.factory import register_engine
from structured_agents.plugins.registry import get_plugin
from structured_agents.settings import EngineSettings
from structured_agents.types import ToolCall

ENGINE = "eval-tests"
cli = CliRunner()

ANSWERS: dict[str, dict[str, object]] = {
    "add": {
        "description": "Return the sum of two numbers.",
        "parameters": {"a": "The first number.", "b": "The second."},
        "returns": "The sum of a and b.",
    },
    "shout": {
        "description": "Return the text in upper case.",
        "parameters": {"text": "What to shout."},
        "returns": "The text in upper case.",
    },
    # a worked example's line: refused as a copy
    "is_missing": {
        "description": "Return the kelvin equivalent of a temperature in degrees Celsius.",
        "parameters": {"value": "The value."},
        "returns": "Whether it is None.",
    },
    # empty: refused (a class's summary has no opening words, so the grammar lets it be empty)
    "Greeter": {"description": "", "parameters": {"name": "The name."}},
    # words of the worked examples, but no four-word run of them: leaked, not refused
    "Greeter.greet": {
        "description": "Return the thermostat to the inventory count.",
        "returns": "A greeting.",
    },
}
"""The parts the scripted model submits for each target (every turn), shaped as each job's own
``submit_result`` asks: every real parameter, and ``returns`` where the target returns a value."""

Turn = Callable[[GenerationRequest], list[ToolCall]]


def _docstring_turn(request: GenerationRequest) -> list[ToolCall]:
    qualname = re.findall(r"Write the docstring of \w+ (\S+) in \S+\.", request.prompt)[-1]
    return [ToolCall("submit_result", dict(ANSWERS[qualname]))]


def _lint_script(_key: Hashable) -> list[Turn]:
    def fix(request: GenerationRequest) -> list[ToolCall]:  # E711 in is_missing, ruff's unsafe fix
        if all(tool["function"]["name"] != "accept_fix" for tool in request.tools):
            return [ToolCall("submit_result", {})]  # a check decides the fix: nothing to vote on
        return [ToolCall("accept_fix", {"id": 1})]

    def submit(_request: GenerationRequest) -> list[ToolCall]:
        return [ToolCall("submit_result", {})]

    return [fix, submit]


def _scripted(_settings: EngineSettings) -> Engine:
    def script(key: Hashable) -> list[Turn]:
        return [_docstring_turn, _docstring_turn]

    return ScriptedEngine(script, plugin=get_plugin("function_gemma"), key=by_run_id, validate_grammar=True)


def _scripted_lint(_settings: EngineSettings) -> Engine:
    return ScriptedEngine(
        _lint_script, plugin=get_plugin("function_gemma"), key=by_run_id, validate_grammar=True
    )


@pytest.fixture
def archives(tmp_path: Path) -> Path:
    build_sdist(tmp_path / "dist")
    return tmp_path / "dist"


def _eval(monkeypatch: pytest.MonkeyPatch, factory: Callable[[EngineSettings], Engine], *args: str) -> Any:
    register_engine(ENGINE, factory, replace=True)
    monkeypatch.setenv("SA_ENGINE__NAME", ENGINE)
    return cli.invoke(app, ["eval", *args])


def test_sa_eval_docstring_scores_what_the_agent_wrote_against_the_originals(
    monkeypatch: pytest.MonkeyPatch, archives: Path, tmp_path: Path
) -> None:
    out, work = tmp_path / "eval.json", tmp_path / "work"
    args = ["docstring", "tinypkg==0.1.0", "--from-dir", str(archives), "--json", str(out)]
    args += ["-b", "docstring_calls"]  # the scripted model writes its calls; its examples leak words
    result = _eval(monkeypatch, _scripted, *args, "--work-dir", str(work), "--concurrency", "2")

    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["partial"] is False and report["bundle"].startswith("docstring_calls ")
    [package] = report["packages"]
    assert (package["package"], package["candidates"], package["targets"]) == ("tinypkg==0.1.0", 5, 5)
    assert (package["documented"], package["documented_rate"]) == (3, 0.6)
    by_name = {target["qualname"]: target for target in package["results"]}
    assert (
        by_name["add"]["written"].startswith("Return the sum of two numbers.")
        and by_name["add"]["rouge_l"] == 1.0
    )
    assert by_name["add"]["parameters"] == {"entries": 2, "entries_real": 2, "real": 2, "real_documented": 2}
    assert by_name["add"]["leaked"] == [] and "Returns:\n    The sum of a and b." in by_name["add"]["written"]
    assert by_name["shout"]["rouge_l"] == pytest.approx(4 / 6)
    assert by_name["Greeter.greet"]["rouge_l"] == pytest.approx(1 / 3)  # "to the" in common
    assert {"thermostat", "inventory"} <= set(by_name["Greeter.greet"]["leaked"])
    assert by_name["is_missing"]["written"] is None and by_name["is_missing"]["failure"] == "copy refused"
    assert by_name["is_missing"]["copy_refusals"] == 2
    assert by_name["Greeter"]["written"] is None and "the description is empty" in by_name["Greeter"]["error"]
    assert package["refused_targets"] == 1 and package["leaked_rate"] == pytest.approx(1 / 3)
    assert sum(package["failures"].values()) == 2 and package["failures"]["copy refused"] == 1

    patched = (work / "tinypkg-0.1.0" / "code" / "tinypkg" / "core.py").read_text()
    assert patched.startswith('"""Small helpers')
    assert (
        '"""Return the thermostat to the inventory count.\n\n        Returns:\n            A greeting.\n'
        in patched
    )
    assert "Args:\n        a: The first number.\n        b: The second.\n\n    Returns:" in patched
    assert "Greets people" not in patched and "Tell whether" not in patched
    assert '"""' not in (work / "tinypkg-0.1.0" / "code" / "docs" / "conf.py").read_text()
    assert "tinypkg==0.1.0" in result.output and "60%" in result.output
    assert "copy refused ×1" in result.output and "thermostat ×1" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 100


def test_sa_eval_docstring_can_strip_only_its_targets(
    monkeypatch: pytest.MonkeyPatch, archives: Path, tmp_path: Path
) -> None:
    out, work = tmp_path / "eval.json", tmp_path / "work"
    args = ["docstring", "tinypkg==0.1.0", "--from-dir", str(archives), "--json", str(out), "--limit", "2"]
    args += ["-b", "docstring_calls", "--strip", "targets", "--work-dir", str(work)]
    result = _eval(monkeypatch, _scripted, *args)

    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    [package] = report["packages"]
    assert report["strip"] == "targets" and package["targets"] == 2
    chosen = {target["qualname"] for target in package["results"]}
    code = (work / "tinypkg-0.1.0" / "code" / "tinypkg" / "core.py").read_text()
    originals = {"add": "Return the sum of two numbers.", "shout": "Return the text in capital letters."}
    originals |= {"is_missing": "Tell whether a value is missing.", "Greeter": "Greets people by name."}
    originals["Greeter.greet"] = "Say hello to the person."
    kept = [qualname for qualname, line in originals.items() if f'"""{line}' in code]
    assert set(originals) - chosen <= set(kept), kept  # the other definitions keep their own docstrings
    assert "docstrings stripped: targets" in result.output
    lint = _eval(
        monkeypatch,
        _scripted_lint,
        "lint",
        "tinypkg==0.1.0",
        "--from-dir",
        str(archives),
        "--strip",
        "targets",
    )
    assert lint.exit_code == 2 and "--strip is an option of sa eval docstring" in lint.output


def test_sa_eval_lint_compares_ruff_alone_with_the_agent_and_runs_the_tests(
    monkeypatch: pytest.MonkeyPatch, archives: Path, tmp_path: Path
) -> None:
    out = tmp_path / "eval.json"
    result = _eval(
        monkeypatch, _scripted_lint, "lint", "tinypkg==0.1.0", "--from-dir", str(archives), "--json", str(out)
    )

    assert result.exit_code == 0, result.output
    [package] = json.loads(out.read_text())["packages"]
    assert package["ruff_config"] == "fixed" and package["files"] == ["tinypkg/core.py"]
    assert package["findings"] == {"before": 2, "ruff_only": 1, "agent": 0}
    assert package["same_as_ruff"] == 0 and package["failures"] == {}
    [job] = package["jobs"]  # what the agent proposed and what was kept, as the diff's header says
    assert job["summary"].splitlines()[0] == (
        "ruff 2 -> 0 (ruff --fix alone: 1); agent: 1 proposed, 1 kept; left: none"
    )
    tests = package["tests"]
    for stage in ("before", "ruff_only", "agent"):
        assert (tests[stage]["status"], tests[stage]["passed"], tests[stage]["failed"]) == ("ran", 3, 0)
    assert "3/0" in result.output
    assert package["target"] == "no lowest Python declared: ruff's default target"
    assert package["breaks"] == {"ruff_only": [], "agent": []}


def test_sa_eval_lint_strict_counts_under_the_strict_rules(
    monkeypatch: pytest.MonkeyPatch, archives: Path, tmp_path: Path
) -> None:
    out, work = tmp_path / "eval.json", tmp_path / "work"
    args = ["lint", "tinypkg==0.1.0", "--from-dir", str(archives), "--json", str(out), "--strict"]
    result = _eval(monkeypatch, _scripted_lint, *args, "--work-dir", str(work))

    assert result.exit_code == 0, result.output
    [package] = json.loads(out.read_text())["packages"]
    [config] = work.glob("*/released/.ruff.toml")
    assert package["ruff_config"] == "strict"
    assert 'select = ["E", "F", "W", "B", "UP", "SIM", "PL", "RUF"]\nignore = ["E501"]' in config.read_text()
    refused = _eval(
        monkeypatch, _scripted, "docstring", "tinypkg==0.1.0", "--from-dir", str(archives), "--strict"
    )
    assert refused.exit_code == 2 and "are options of sa eval lint" in refused.output


def test_sa_eval_lint_with_the_packages_tests_as_the_check(
    monkeypatch: pytest.MonkeyPatch, archives: Path, tmp_path: Path
) -> None:
    """With a relative ``--work-dir`` too: pytest was once given the scratch copy's path as a
    root relative to the copy itself, and found no tests ("cannot run")."""
    out = tmp_path / "eval.json"
    monkeypatch.chdir(tmp_path)
    args = ["lint", "tinypkg==0.1.0", "--from-dir", str(archives), "--json", str(out), "--check-tests"]
    result = _eval(monkeypatch, _scripted_lint, *args, "--work-dir", "work")

    assert result.exit_code == 0, result.output
    [package] = json.loads(out.read_text())["packages"]
    assert "-m pytest" in package["check"] and package["findings"]["agent"] == 0
    assert package["tests"]["agent"]["passed"] == 3 and package["tests"]["agent"]["failed"] == 0


def test_sa_eval_lint_reports_a_package_it_cannot_evaluate_and_goes_on_with_the_rest(
    monkeypatch: pytest.MonkeyPatch, archives: Path, tmp_path: Path
) -> None:
    """A package that fails once fetched (here an archive that is not one) is named with its
    error, the JSON keeps it apart from the measured packages, the rest are measured, and the
    exit code still says something failed."""
    (archives / "broken-1.0.tar.gz").write_bytes(b"not a gzip stream")
    out = tmp_path / "eval.json"
    args = ["lint", "broken==1.0", "tinypkg==0.1.0", "--from-dir", str(archives), "--json", str(out)]
    result = _eval(monkeypatch, _scripted_lint, *args)

    assert result.exit_code == 2, result.output
    report = json.loads(out.read_text())
    assert report["partial"] is False
    assert [package["package"] for package in report["packages"]] == ["tinypkg==0.1.0"]
    [error] = report["errors"]
    assert error["package"] == "broken==1.0" and "cannot unpack" in error["error"]
    assert "broken==1.0: not evaluated:" in result.output and "tinypkg==0.1.0: 1 job(s)" in result.output


def test_sa_eval_refuses_an_unpinned_or_missing_package(
    monkeypatch: pytest.MonkeyPatch, archives: Path
) -> None:
    unpinned = _eval(monkeypatch, _scripted, "docstring", "tinypkg>=0.1", "--from-dir", str(archives))
    assert unpinned.exit_code == 2 and "pin one exact version" in unpinned.output

    missing = _eval(monkeypatch, _scripted, "docstring", "tinypkg==0.2.0", "--from-dir", str(archives))
    assert missing.exit_code == 2 and "no sdist or wheel of it in" in missing.output


def test_sa_eval_help_to_a_pipe_is_laid_out_wide() -> None:
    sa = Path(sys.executable).parent / "sa"
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "TERMINAL_WIDTH")}
    shown = subprocess.run([str(sa), "eval", "--help"], capture_output=True, text=True, env=env, check=True)
    widths = [len(line) for line in shown.stdout.splitlines()]
    assert max(widths) == 120  # not Rich's 80 for a pipe
    assert any(
        "--limit" in line and "Targets (docstring) or files (lint) per package." in line
        for line in shown.stdout.splitlines()
    )
