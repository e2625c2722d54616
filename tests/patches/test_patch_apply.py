"""apply_patches: stale refusal, several patches per file, invalid results, atomic writes."""

from __future__ import annotations

import ast
import fcntl
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from structured_agents.jobs import source_hash
from structured_agents.patches import (
    Patch,
    PatchError,
    apply_patches,
    combined_diff,
    docstring_change,
    file_change,
    write_atomic,
)
from structured_agents.patches.docstring import set_docstring
from structured_agents.store import SqlStore
from structured_agents.tasks.docstring import discover_docstring_jobs

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the sample project."""
    return Path(shutil.copytree(SAMPLE, tmp_path / "project"))


def doc_patch(root: Path, path: str, qualname: str, text: str, run_id: str) -> Patch:
    """A docstring patch made against the file as it is now."""
    return docstring_change(path, (root / path).read_text(), qualname, text).as_patch(run_id)


def test_several_docstrings_in_one_file_apply_together(project: Path) -> None:
    path = "geometry/shapes.py"
    original = (project / path).read_text()
    targets = {
        "Circle": "A circle.",
        "Circle.__init__": "Make one.",
        "Circle.area": "Its area.",
        "scale": "Scale.",
    }
    patches = [
        doc_patch(project, path, name, text, f"run-{i}") for i, (name, text) in enumerate(targets.items())
    ]
    report = apply_patches(project, patches)
    (file_report,) = report.files
    assert file_report.written and report.run_ids("applied") == [p.run_id for p in patches]
    expected = original
    for name, text in targets.items():
        expected = set_docstring(expected, name, text)
    assert (project / path).read_text() == expected
    assert report.result_statuses() == {p.run_id: "applied" for p in patches}


def test_stale_patches_are_refused_and_the_file_untouched(project: Path) -> None:
    path = project / "utils.py"
    stale = doc_patch(project, "utils.py", "slugify", "Slug.", "old")
    path.write_text(path.read_text() + "\n\nEXTRA = 1\n")
    edited = path.read_bytes()
    fresh = doc_patch(project, "utils.py", "fibonacci", "Fib.", "new")
    report = apply_patches(project, [stale, fresh])
    assert report.run_ids("stale") == ["old"] and report.run_ids("applied") == ["new"]
    text = path.read_text()
    assert '"""Fib."""' in text and '"""Slug."""' not in text
    assert apply_patches(project, [stale]).run_ids("stale") == ["old"]
    assert path.read_bytes() != edited  # the fresh patch was applied, nothing else
    assert report.result_statuses() == {"old": "stale", "new": "applied"}


def test_invalid_results_are_refused_per_file(project: Path) -> None:
    broken_text = (project / "lint_me.py").read_text().replace("def main() -> int:", "def main( -> int:")
    broken = file_change("lint_me.py", (project / "lint_me.py").read_text(), broken_text).as_patch("broken")
    good = doc_patch(project, "utils.py", "slugify", "Slug.", "good")
    before = (project / "lint_me.py").read_bytes()
    report = apply_patches(project, [broken, good])
    assert report.run_ids("invalid") == ["broken"] and report.run_ids("applied") == ["good"]
    assert (project / "lint_me.py").read_bytes() == before
    (lint_report,) = [f for f in report.files if f.path == "lint_me.py"]
    assert not lint_report.written and "does not parse" in lint_report.outcomes[0].detail
    garbage = Patch("garbage", "utils.py", source_hash((project / "utils.py").read_bytes()), "not a diff")
    outside = Patch("outside", "../elsewhere.py", "0" * 64, "x")
    missing = Patch("missing", "gone.py", "0" * 64, "x")
    utils_hash = source_hash((project / "utils.py").read_bytes())
    wrong_file = file_change("lint_me.py", "a\n", "b\n").diff
    misdirected = Patch("misdirected", "utils.py", utils_hash, wrong_file)
    (report_wrong,) = apply_patches(project, [misdirected]).files
    assert (
        report_wrong.outcomes[0].status == "invalid"
        and "not of 'utils.py'" in report_wrong.outcomes[0].detail
    )
    outcomes = {
        o.run_id: o.status
        for f in apply_patches(project, [garbage, outside, missing]).files
        for o in f.outcomes
    }
    assert outcomes == {"garbage": "invalid", "outside": "invalid", "missing": "invalid"}


def test_overlapping_patches_conflict(project: Path) -> None:
    first = doc_patch(project, "utils.py", "slugify", "One.", "first")
    second = doc_patch(project, "utils.py", "slugify", "Two.", "second")
    report = apply_patches(project, [first, second])
    assert report.run_ids("applied") == ["first"] and report.run_ids("conflict") == ["second"]
    assert report.result_statuses()["second"] == "rejected"


def test_whole_file_lint_proposal(project: Path) -> None:
    original = (project / "lint_me.py").read_text()
    fixed = original.replace("import os\n", "").replace("== None", "is None")
    report = apply_patches(project, [file_change("lint_me.py", original, fixed).as_patch("lint")])
    assert report.run_ids("applied") == ["lint"]
    assert (project / "lint_me.py").read_text() == fixed


def test_writes_are_atomic_and_keep_permissions(project: Path) -> None:
    path = project / "utils.py"
    path.chmod(0o640)
    inode = path.stat().st_ino
    apply_patches(project, [doc_patch(project, "utils.py", "slugify", "Slug.", "r")])
    assert path.stat().st_ino != inode  # replaced, never rewritten in place
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in project.iterdir() if p.name.endswith(".tmp")) == []
    directory = project / "not_a_file.py"
    directory.mkdir()
    with pytest.raises(OSError):
        write_atomic(directory, b"x")
    assert [p.name for p in project.iterdir() if p.name.startswith(".not_a_file.py.")] == []


def test_results_from_the_store_apply(project: Path, tmp_path: Path) -> None:
    with SqlStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        batch = store.create_batch("docstrings", "1.0", str(project))
        jobs = [job for job in discover_docstring_jobs(project) if job.path == "geometry/shapes.py"]
        store.add_jobs(batch.id, jobs)
        for job in jobs:
            original = (project / job.path).read_text()
            change = docstring_change(
                job.path, original, job.qualname, f"Docs of {job.qualname}.", line=job.inputs["def_line"]
            )
            store.save_result(
                job.job_id, target_path=job.path, original_hash=job.source_hash, diff=change.diff
            )
        report = apply_patches(project, store.results(batch.id, "proposed"))
        for status in ("applied", "stale", "rejected"):
            ids = [run_id for run_id, s in report.result_statuses().items() if s == status]
            store.set_result_status(ids, status)
        assert len(store.results(batch.id, "applied")) == len(jobs) == 12
    tree = ast.parse((project / "geometry/shapes.py").read_text())
    documented = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef) and ast.get_docstring(n)
    ]
    assert len(documented) == len(jobs) + 3  # Shape, Shape.describe and Rectangle already had one
    assert os.listdir(project / "geometry") == os.listdir(SAMPLE / "geometry")


def test_a_read_only_file_is_not_written_and_its_patch_stays_retryable(project: Path) -> None:
    path = project / "utils.py"
    patch = doc_patch(project, "utils.py", "slugify", "Slug.", "r")
    before = path.read_bytes()
    path.chmod(0o444)
    (file_report,) = apply_patches(project, [patch]).files
    assert not file_report.written and path.read_bytes() == before
    (outcome,) = file_report.outcomes
    assert outcome.status == "failed" and "read-only (mode 0444)" in outcome.detail
    assert file_report.result_statuses() == {"r": "proposed"}  # nothing to record: tried again next time
    path.chmod(0o644)
    assert apply_patches(project, [patch]).run_ids("applied") == ["r"]
    assert '"""Slug."""' in path.read_text()


def _unwritable(directory: Path) -> bool:
    """Make ``directory`` refuse new files (chmod, or ``chattr +i`` for root); whether it does."""
    directory.chmod(0o555)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(directory)], capture_output=True, check=False)
    try:
        (directory / ".probe").touch()
    except OSError:
        return True
    (directory / ".probe").unlink()
    return False


def test_a_write_that_fails_leaves_the_file_and_the_patch_retryable(project: Path) -> None:
    directory = project / "geometry"
    patch = doc_patch(project, "geometry/shapes.py", "scale", "Scale.", "r")
    before = (directory / "shapes.py").read_bytes()
    try:
        if not _unwritable(directory):
            pytest.skip("this user can write into any directory (root without chattr)")
        (file_report,) = apply_patches(project, [patch]).files
    finally:
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True, check=False)
        directory.chmod(0o755)
    (outcome,) = file_report.outcomes
    assert outcome.status == "failed" and "could not be written" in outcome.detail
    assert (directory / "shapes.py").read_bytes() == before
    assert apply_patches(project, [patch]).run_ids("applied") == ["r"]


def test_a_file_already_holding_its_patches_is_applied_not_stale(project: Path) -> None:
    path = "geometry/shapes.py"
    first = doc_patch(project, path, "Circle", "One.", "a-first")
    rival = doc_patch(project, path, "Circle", "Two.", "b-rival")
    other = doc_patch(project, path, "scale", "Scale.", "c-other")
    unparsable = file_change(path, (project / path).read_text(), "def broken(:\n").as_patch("d-broken")
    patches = [first, rival, other, unparsable]
    written = apply_patches(project, patches)  # as if killed before its outcome was recorded
    text = (project / path).read_bytes()
    assert written.result_statuses() == {
        "a-first": "applied",
        "b-rival": "rejected",
        "c-other": "applied",
        "d-broken": "rejected",
    }
    (again,) = apply_patches(project, patches).files
    assert not again.written and (project / path).read_bytes() == text
    assert again.result_statuses() == written.result_statuses()
    assert {o.detail for o in again.outcomes if o.status == "applied"} == {
        "already in the file (an earlier apply was interrupted after writing it)"
    }
    (project / path).write_bytes(text + b"\n# edited since\n")
    assert sorted(apply_patches(project, patches).run_ids("stale")) == [p.run_id for p in patches]


def test_one_apply_at_a_time_per_codebase(project: Path) -> None:
    patch = doc_patch(project, "utils.py", "slugify", "Slug.", "r")
    fd = os.open(project, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a running apply holds
        with pytest.raises(PatchError, match="another apply is running under"):
            apply_patches(project, [patch])
    finally:
        os.close(fd)
    assert apply_patches(project, [patch]).run_ids("applied") == ["r"]
    with pytest.raises(PatchError, match=r"the codebase root .*gone cannot be opened"):
        apply_patches(project / "gone", [patch])


def test_a_files_patches_combine_into_the_one_diff_apply_would_write(project: Path) -> None:
    path = "geometry/shapes.py"
    patches = [
        doc_patch(project, path, "Circle", "A circle.", "a"),
        doc_patch(project, path, "scale", "Scale.", "b"),
    ]
    together = combined_diff(project, path, list(patches))
    assert together is not None and together.count("--- a/") == 1

    apply_patches(project, patches)  # what the one diff says is what apply writes
    written = (project / path).read_text()
    shutil.copytree(SAMPLE, project.parent / "fresh")
    patched = subprocess.run(
        ["patch", "-p1"], input=together, cwd=project.parent / "fresh", capture_output=True, text=True
    )
    assert patched.returncode == 0 and (project.parent / "fresh" / path).read_text() == written
    assert combined_diff(project, path, list(patches)) is None  # the file moved: no combined diff


def test_a_result_that_changes_nothing_has_nothing_to_apply(project: Path) -> None:
    """A lint job that ends with nothing to change stores its summary with no diff (commonmark
    0.9.1's ``render/html.py``): it was reported an invalid patch, and ``sa apply`` rejected it."""
    path = "geometry/shapes.py"
    original = (project / path).read_text()
    empty = Patch("run-0", path, source_hash(original.encode()), "")
    change = doc_patch(project, path, "Circle", "A circle.", "run-1")

    report = apply_patches(project, [empty, change])

    assert report.run_ids("applied") == ["run-1"] and "run-0" not in report.result_statuses()
    assert apply_patches(project, [empty]).files == ()
