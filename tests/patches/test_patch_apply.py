"""apply_patches: stale refusal, several patches per file, invalid results, atomic writes."""

from __future__ import annotations

import ast
import os
import shutil
import stat
from pathlib import Path

import pytest

from structured_agents.jobs import source_hash
from structured_agents.patches import Patch, apply_patches, docstring_change, file_change, write_atomic
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
