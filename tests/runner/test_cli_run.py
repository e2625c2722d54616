"""``sa run``, ``sa diff`` and ``sa apply`` end to end, with a scripted engine injected by name.

Tests register an engine factory (``register_engine``) and select it with ``SA_ENGINE__NAME``,
as a deployment would a custom engine; ``scripted`` itself is not a ``sa run`` option.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_helpers import SAMPLE_PROJECT, write_docstring
from typer.testing import CliRunner

from structured_agents.bundles import find_bundle
from structured_agents.cli.main import app
from structured_agents.engines import Engine, GenerationRequest, ScriptedEngine, by_run_id
from structured_agents.engines.factory import register_engine
from structured_agents.plugins.registry import get_plugin
from structured_agents.settings import EngineSettings
from structured_agents.store import SqlStore
from structured_agents.tasks.docstring import code_without_docstrings
from structured_agents.types import ToolCall

ENGINE = "runner-tests"
cli = CliRunner()


def _scripted(_settings: EngineSettings) -> Engine:
    """The model of the default docstring bundle: it writes each target's docstring."""
    return ScriptedEngine(lambda _key: [write_docstring], key=by_run_id, validate_grammar=True)


def _never_submits(_settings: EngineSettings) -> Engine:
    def empty(_request: GenerationRequest) -> str:
        return '"""'  # closes the docstring at once: no summary, so no submission

    return ScriptedEngine(lambda _key: [empty, empty], key=by_run_id)


@pytest.fixture(autouse=True)
def scripted_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    register_engine(ENGINE, _scripted, replace=True)
    monkeypatch.setenv("SA_ENGINE__NAME", ENGINE)
    monkeypatch.delenv("SA_DATABASE_URL", raising=False)
    yield


@pytest.fixture(autouse=True)
def _inside_the_codebase(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``latest`` is the newest batch of the codebase the shell is in, as a user runs it."""
    if "project" in request.fixturenames:
        monkeypatch.chdir(request.getfixturevalue("project"))


def _run(project: Path, db_url: str, *extra: str) -> tuple[int, str]:
    result = cli.invoke(app, ["run", "docstring", str(project), "--db", db_url, "--concurrency", "4", *extra])
    return result.exit_code, result.output


def test_sa_run_stores_diffs_and_prints_the_next_commands(project: Path, db_url: str) -> None:
    code, output = _run(project, db_url)

    assert code == 0, output
    with SqlStore(db_url) as store:
        batch = store.list_batches()[0]
        assert store.batch_counts(batch.id).by_status == {"succeeded": 19}
    assert f"sa diff {batch.id} --db {db_url}" in output
    assert f"sa apply {batch.id} --db {db_url}" in output
    assert (project / "utils.py").read_bytes() == (SAMPLE_PROJECT / "utils.py").read_bytes()

    code, output = _run(project, db_url)
    assert code == 0 and "0 succeeded, 0 failed, 19 of 19 skipped" in output


def test_another_bundle_or_version_over_the_same_store_does_its_own_work(
    project: Path, db_url: str, tmp_path: Path
) -> None:
    assert _run(project, db_url)[0] == 0
    shipped = Path(find_bundle("docstring")).parent
    newer = shutil.copytree(shipped, tmp_path / "docstring-next")
    manifest = newer / "bundle.yaml"
    manifest.write_text(manifest.read_text().replace('version: "3.0"', 'version: "3.1"'))

    done = cli.invoke(app, ["run", str(newer), str(project), "--db", db_url, "--concurrency", "4"])

    assert done.exit_code == 0 and "19 succeeded, 0 failed, 0 of 19 skipped" in done.output
    with SqlStore(db_url) as store:
        assert [store.batch_counts(b.id).total for b in store.list_batches()] == [19, 19]


def test_sa_run_exits_non_zero_when_jobs_fail(project: Path, db_url: str) -> None:
    register_engine(ENGINE, _never_submits, replace=True)

    code, output = _run(project, db_url)

    assert code == 1
    assert "19 failed" in output and "did not submit" in output


def test_sa_run_refuses_the_scripted_engine_as_a_user_option(project: Path, db_url: str) -> None:
    code, output = _run(project, db_url, "--engine", "scripted")

    assert code == 2 and "--engine must be one of" in output
    assert not Path(db_url.removeprefix("sqlite:///")).exists()


def test_sa_diff_shows_a_batch_or_one_run(
    project: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(project, db_url)
    with SqlStore(db_url) as store:
        batch = store.list_batches()[0]
        run = next(r for r in store.list_runs(batch.id) if r.qualname == "slugify")

    plain = cli.invoke(app, ["diff", batch.id, "--plain", "--db", db_url])
    assert plain.exit_code == 0
    assert plain.output.count("# ") >= 19 and '+    """Return what slugify makes.' in plain.output
    assert plain.output.count("--- a/") == 4  # a file's changes as one diff: git apply takes it whole
    checked = subprocess.run(
        ["git", "apply", "--check", "-"], input=plain.output, cwd=project, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr

    one = cli.invoke(app, ["diff", run.id, "--plain", "--db", db_url])
    assert one.output.startswith(
        "# utils.py · slugify · proposed\n# Return what slugify makes.\n--- a/utils.py"
    )
    assert one.output.count("--- a/") == 1
    patched = subprocess.run(
        ["patch", "-p1", "--dry-run"], input=one.output, cwd=project, capture_output=True, text=True
    )
    assert patched.returncode == 0, patched.stdout  # the comment lines are what patch skips

    piped = cli.invoke(app, ["diff", "latest", "--db", db_url])  # not a terminal: whole lines
    assert piped.exit_code == 0 and "# utils.py · slugify · proposed" in piped.output
    assert "19 change(s) in batch" in piped.output  # on standard error, beside the patch
    assert "latest batch of this codebase" in piped.output  # run inside the project
    assert max(len(line) for line in piped.output.splitlines()) > 80  # no line cut at 80 columns

    monkeypatch.chdir(project / "geometry")  # inside the codebase: its newest batch
    here = cli.invoke(app, ["diff", "latest", "--db", db_url])
    assert f"latest batch of this codebase: {batch.id}" in here.output

    missing = cli.invoke(app, ["diff", "deadbeef", "--db", db_url])
    assert missing.exit_code == 2 and "no batch or run with id 'deadbeef'" in missing.output


def test_sa_apply_writes_docstrings_and_refuses_files_changed_since(project: Path, db_url: str) -> None:
    _run(project, db_url)
    with SqlStore(db_url) as store:
        batch = store.list_batches()[0]
    edited = project / "utils.py"
    edited.write_text(edited.read_text() + "\n# edited after the run\n")
    shapes = (project / "geometry" / "shapes.py").read_text()

    applied = cli.invoke(app, ["apply", batch.id, "--yes", "--db", db_url])

    assert applied.exit_code == 1, applied.output
    assert "written geometry/shapes.py" in applied.output
    assert "unchanged utils.py" in applied.output and "stale" in applied.output
    assert "    stale: slugify (" in applied.output  # by its target, not only its run id
    assert edited.read_text().endswith("# edited after the run\n")
    assert '"""Return what slugify makes.' not in edited.read_text()
    new_shapes = (project / "geometry" / "shapes.py").read_text()
    assert code_without_docstrings(new_shapes) == code_without_docstrings(shapes)
    circle = next(n for n in ast.parse(new_shapes).body if isinstance(n, ast.ClassDef) and n.name == "Circle")
    assert ast.get_docstring(circle) == "Summary of what Circle makes."  # no "value" to document: no Args
    with SqlStore(db_url) as store:
        statuses = {r.target_path: r.status for r in store.results(batch.id)}
    assert statuses["utils.py"] == "stale" and statuses["geometry/shapes.py"] == "applied"

    again = cli.invoke(app, ["apply", batch.id, "--yes", "--db", db_url])
    assert again.exit_code == 0 and "no proposed change" in again.output


def test_sa_apply_asks_first(project: Path, db_url: str) -> None:
    _run(project, db_url)

    declined = cli.invoke(app, ["apply", "latest", "--db", db_url], input="n\n")

    assert declined.exit_code == 1 and "Apply 19 change(s) to 4 file(s)" in declined.output
    assert "  utils.py: " in declined.output and "slugify" in declined.output  # what it would write
    assert declined.output.rstrip().endswith("nothing applied")
    assert (project / "utils.py").read_bytes() == (SAMPLE_PROJECT / "utils.py").read_bytes()


def test_sa_apply_leaves_a_patch_it_could_not_write_proposed_and_applies_it_next_time(
    project: Path, db_url: str
) -> None:
    _run(project, db_url)
    read_only = project / "utils.py"
    read_only.chmod(0o444)

    failed = cli.invoke(app, ["apply", "latest", "--yes", "--db", db_url])

    assert failed.exit_code == 1, failed.output
    assert "unchanged utils.py" in failed.output and "read-only (mode 0444)" in failed.output
    assert "5 could not be written and are still proposed" in failed.output
    assert "14 of 19 change(s) applied" in failed.output
    assert read_only.read_bytes() == (SAMPLE_PROJECT / "utils.py").read_bytes()
    with SqlStore(db_url) as store:
        statuses = {r.target_path: r.status for r in store.results(store.list_batches()[0].id)}
    assert statuses["utils.py"] == "proposed" and statuses["geometry/shapes.py"] == "applied"

    read_only.chmod(0o644)
    retried = cli.invoke(app, ["apply", "latest", "--yes", "--db", db_url])

    assert retried.exit_code == 0, retried.output
    assert "written utils.py" in retried.output and "5 of 5 change(s) applied" in retried.output
    assert '"""Return what slugify makes.' in read_only.read_text()


def _accepts_every_fix(_settings: EngineSettings) -> Engine:
    turns = [[ToolCall("accept_fix", {"id": 1})], [ToolCall("submit_result", {})]]
    return ScriptedEngine(lambda _key: turns, plugin=get_plugin("function_gemma"), key=by_run_id)


def test_sa_run_lint_with_a_check_keeps_what_passes_it(project: Path, db_url: str) -> None:
    register_engine(ENGINE, _accepts_every_fix, replace=True)
    check = "! grep -q 'email is None' lint_me.py"  # fails with the unsafe fix, passes with ruff's

    result = cli.invoke(
        app, ["run", "lint", str(project), "--db", db_url, "--check", check, "--check-timeout", "60"]
    )

    assert result.exit_code == 0, result.output
    with SqlStore(db_url) as store:
        batch = store.list_batches()[0]
        [stored] = store.results(batch.id)
    assert batch.options["check"] == check and batch.options["check_timeout_s"] == 60.0
    assert batch.options["bundle"] == str(
        find_bundle("lint").parent
    )  # the directory, as the workers record it
    assert stored.summary.startswith(
        "ruff 2 -> 1 (ruff --fix alone: 1); fixes tried: 1 proposed, 0 kept, "
        "1 failed the check (E711 line 9: exit 1)"
    )
    diff = cli.invoke(app, ["diff", batch.id, "--db", db_url])
    assert "1 failed the check (E711 line 9" in diff.output  # the diff's header says what became of it


def test_sa_run_refuses_a_check_for_a_task_that_takes_none(project: Path, db_url: str) -> None:
    code, output = _run(project, db_url, "--check", "pytest -q")

    assert (
        code == 2 and "the docstring task takes no option check, check_timeout_s (it takes: none)" in output
    )
    assert not Path(db_url.removeprefix("sqlite:///")).exists()


def _invents_for_final_draft(request: GenerationRequest) -> str:
    """The scripted model, but final_draft's summary speaks of something its code never does."""
    text = write_docstring(request)
    return text.replace("Return what final_draft makes.", "Return the triangle of the draft.")


def test_sa_apply_leaves_flagged_changes_unless_asked_and_sa_diff_says_why(
    project: Path, db_url: str
) -> None:
    register_engine(
        ENGINE,
        lambda _settings: ScriptedEngine(
            lambda _key: [_invents_for_final_draft], key=by_run_id, validate_grammar=True
        ),
        replace=True,
    )
    code, output = _run(project, db_url)
    assert code == 0, output

    shown = cli.invoke(app, ["diff", "latest", "--db", db_url])
    assert "geometry/draft_final.py · final_draft · proposed, needs review" in shown.output
    assert "needs review: unknown-words: says triangle" in shown.output
    assert "19 change(s) in batch" in shown.output and "1 of them flagged for review" in shown.output

    applied = cli.invoke(app, ["apply", "latest", "--yes", "--db", db_url])
    assert applied.exit_code == 0, applied.output
    assert "1 change(s) flagged for review left proposed" in applied.output
    assert "18 of 18 change(s) applied" in applied.output
    draft = project / "geometry" / "draft_final.py"
    assert "triangle" not in draft.read_text()
    with SqlStore(db_url) as store:
        [flagged] = [r for r in store.results(store.list_batches()[0].id) if r.flagged]
    assert flagged.status == "proposed" and flagged.target_path == "geometry/draft_final.py"

    included = cli.invoke(app, ["apply", "latest", "--yes", "--include-flagged", "--db", db_url])
    assert included.exit_code == 0 and "1 of 1 change(s) applied" in included.output, included.output
    assert '"""Return the triangle of the draft.' in draft.read_text()


def test_a_second_checkout_of_the_same_code_does_its_own_work(
    project: Path, db_url: str, tmp_path: Path
) -> None:
    code, output = _run(project, db_url)
    assert code == 0 and "0 of 19 skipped" in output, output
    other = shutil.copytree(project, tmp_path / "second-checkout")
    code, output = _run(other, db_url)
    assert code == 0 and "19 succeeded" in output and "0 of 19 skipped" in output, output
    again = _run(other, db_url)[1]
    assert "19 of 19 skipped" in again  # the same checkout run again: its own work, already done


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_sa_apply_branch_commits_the_changes_and_leaves_a_dirty_tree_alone(
    project: Path, db_url: str
) -> None:
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "start")
    utils = project / "utils.py"
    utils.write_text(utils.read_text() + "\n# uncommitted work\n")  # the jobs read this: stale at HEAD
    (project / "notes.txt").write_text("untracked\n")
    schema = project / "geometry" / "schema.generated.py"
    schema.write_text(schema.read_text() + "# staged\n")
    _git(project, "add", "geometry/schema.generated.py")
    code, output = _run(project, db_url)
    assert code == 0, output
    before = {
        path: path.read_bytes() for path in project.rglob("*") if path.is_file() and ".git" not in path.parts
    }
    status, head = _git(project, "status", "--porcelain"), _git(project, "rev-parse", "HEAD")

    done = cli.invoke(app, ["apply", "latest", "--branch", "sa/docstrings", "--db", db_url])

    assert done.exit_code == 0, done.output
    assert (
        "branch sa/docstrings" in done.output
        and "the working tree and the current branch are unchanged" in done.output
    )
    assert "stale" in done.output  # utils.py and the staged file: HEAD holds other content
    after = {
        path: path.read_bytes() for path in project.rglob("*") if path.is_file() and ".git" not in path.parts
    }
    assert after == before
    assert _git(project, "status", "--porcelain") == status and _git(project, "rev-parse", "HEAD") == head
    assert _git(project, "symbolic-ref", "--short", "HEAD").strip() == "main"
    changed = _git(project, "diff", "--name-only", "main", "sa/docstrings").split()
    assert "geometry/shapes.py" in changed and set(changed) <= {
        "geometry/shapes.py",
        "geometry/draft_final.py",
    }
    shapes = _git(project, "show", "sa/docstrings:geometry/shapes.py")
    assert code_without_docstrings(shapes) == code_without_docstrings(
        _git(project, "show", "main:geometry/shapes.py")
    )
    assert '"""' in shapes and "utils.py" not in changed
    message = _git(project, "log", "-1", "--format=%B", "sa/docstrings")
    assert message.startswith("docstring 3.") and "change(s) to" in message

    again = cli.invoke(app, ["apply", "latest", "--branch", "sa/docstrings", "--db", db_url])
    assert again.exit_code == 2 and "already exists" in again.output


def test_sa_apply_branch_outside_a_git_repository_is_refused(project: Path, db_url: str) -> None:
    _run(project, db_url)
    refused = cli.invoke(app, ["apply", "latest", "--branch", "review", "--db", db_url])
    assert refused.exit_code == 2 and "is not in a git repository" in refused.output


def test_ids_may_be_shortened_and_latest_never_applies_another_codebase(
    project: Path, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(project, db_url)
    with SqlStore(db_url) as store:
        [batch] = store.list_batches()
        run = store.list_runs(batch.id)[0]

    shown = cli.invoke(app, ["diff", run.id[:12], "--db", db_url, "--plain"])
    assert shown.exit_code == 0 and f"# {run.target_path}" in shown.output
    assert cli.invoke(app, ["diff", batch.id[:8], "--db", db_url, "--plain"]).exit_code == 0
    short = cli.invoke(app, ["diff", batch.id[:3], "--db", db_url])
    assert short.exit_code == 2 and "no batch or run with id" in short.output

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    refused = cli.invoke(app, ["apply", "latest", "-y", "--db", db_url])
    assert refused.exit_code == 2 and "no batch of the codebase you are in" in refused.output
    assert (project / "utils.py").read_bytes() == (SAMPLE_PROJECT / "utils.py").read_bytes()
    assert (
        cli.invoke(app, ["diff", "latest", "--db", db_url, "--plain"]).exit_code == 0
    )  # reading may fall back


def test_sa_run_over_a_codebase_without_targets_says_so_and_stores_nothing(
    db_url: str, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no Python here\n")

    code, output = _run(empty, db_url)

    assert code == 0 and "nothing to do: the docstring task finds no target under" in output
    assert not Path(db_url.removeprefix("sqlite:///")).exists()
