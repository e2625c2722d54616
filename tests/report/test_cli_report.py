"""``sa report`` after a small ``sa run``, as a user runs them (a scripted engine injected by name)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from scripted_batch import SAMPLE_PROJECT, submit
from typer.testing import CliRunner

from structured_agents.cli.main import app
from structured_agents.engines import Engine, ScriptedEngine, by_run_id
from structured_agents.engines.factory import register_engine
from structured_agents.plugins.registry import get_plugin
from structured_agents.settings import EngineSettings
from structured_agents.store import SqlStore

ENGINE = "report-tests"
cli = CliRunner()


def _scripted(_settings: EngineSettings) -> Engine:
    return ScriptedEngine(lambda _key: [submit], plugin=get_plugin("function_gemma"), key=by_run_id)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A database after ``sa run docstring_calls`` over a copy of the sample project, and its batch id."""
    workdir = tmp_path_factory.mktemp("cli-report")
    project = shutil.copytree(SAMPLE_PROJECT, workdir / "project")
    db_url = f"sqlite:///{workdir / 'sa.db'}"
    register_engine(ENGINE, _scripted, replace=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SA_ENGINE__NAME", ENGINE)
        args = ["run", "docstring_calls", str(project), "--db", db_url, "--concurrency", "4"]
        result = cli.invoke(app, args)
    assert result.exit_code == 0, result.output
    with SqlStore(db_url) as store:
        return db_url, store.list_batches(limit=1)[0].id


def test_sa_report_latest_writes_a_page_naming_the_batch(
    ran: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_url, batch_id = ran
    monkeypatch.chdir(tmp_path)
    result = cli.invoke(app, ["report", "latest", "-o", "r.html", "--db", db_url])

    assert result.exit_code == 0, result.output
    assert f"report of batch {batch_id} written to r.html" in result.output
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"Batch <code>{batch_id}</code>" in html
    assert len(re.findall(r'<img src="data:image/svg\+xml;base64,', html)) >= 3
    assert f"<dt>engine</dt><dd>{ENGINE}</dd>" in html  # sa run records the engine with the batch
    assert f"<dt>model</dt><dd>the {ENGINE} engine&#39;s default</dd>" in html

    default = cli.invoke(app, ["report", batch_id, "--db", db_url])
    assert default.exit_code == 0 and (tmp_path / f"report-{batch_id}.html").is_file()


def test_sa_report_writes_to_standard_output_with_a_quality_file(
    ran: tuple[str, str], tmp_path: Path
) -> None:
    db_url, batch_id = ran
    quality = tmp_path / "eval.json"
    quality.write_text(json.dumps({"metrics": {"accepted_rate": 0.5}}))
    result = cli.invoke(app, ["report", batch_id, "-o", "-", "--quality", str(quality), "--db", db_url])

    assert result.exit_code == 0
    assert result.stdout.startswith("<!DOCTYPE html>") and "accepted_rate" in result.stdout


def test_sa_report_refuses_an_unknown_batch_and_a_bad_quality_file(
    ran: tuple[str, str], tmp_path: Path
) -> None:
    db_url, batch_id = ran
    unknown = cli.invoke(app, ["report", "nope", "--db", db_url])
    assert unknown.exit_code == 2 and "sa report:" in unknown.output and "nope" in unknown.output

    quality = tmp_path / "eval.json"
    quality.write_text('{"metrics": []}')
    bad = cli.invoke(app, ["report", batch_id, "--quality", str(quality), "--db", db_url, "-o", "-"])
    assert bad.exit_code == 2 and "eval.json: metrics:" in bad.output

    missing = tmp_path / "missing.db"
    absent = cli.invoke(app, ["report", "latest", "--db", f"sqlite:///{missing}"])
    assert absent.exit_code == 2 and f"no database at {missing}" in absent.output
    assert not missing.exists()  # a mistyped path is not created
