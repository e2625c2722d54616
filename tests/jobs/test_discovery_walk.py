"""Walking a codebase: .gitignore files at every level, always-skipped directories, git agreement."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sample_tree import SKIPPED_FILES

from structured_agents.jobs import DiscoveryError, iter_source_files
from structured_agents.jobs.source import MAX_FILE_BYTES

EXPECTED = [
    "lint_me.py",
    "utils.py",
    "geometry/__init__.py",
    "geometry/draft_final.py",
    "geometry/schema.generated.py",
    "geometry/shapes.py",
]


def test_walk_respects_gitignore_files(sample_project: Path) -> None:
    found = [path.as_posix() for path in iter_source_files(sample_project)]
    assert found == EXPECTED
    assert not set(found) & set(SKIPPED_FILES)


def test_walk_agrees_with_git(sample_project: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is needed to check the walk against git itself")
    shutil.rmtree(sample_project / ".git")
    subprocess.run([git, "init", "-q"], cwd=sample_project, check=True)
    listed = subprocess.run(
        [git, "ls-files", "--others", "--exclude-standard", "--", "*.py"],
        cwd=sample_project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    expected = {path for path in listed if not path.startswith(".venv/") and "__pycache__" not in path}
    assert {path.as_posix() for path in iter_source_files(sample_project)} == expected


def test_walk_skips_symlinks_and_filters_suffixes(sample_project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.py").write_text("def elsewhere():\n    pass\n")
    (sample_project / "linked_dir").symlink_to(outside, target_is_directory=True)
    (sample_project / "linked.py").symlink_to(outside / "elsewhere.py")
    assert [p.as_posix() for p in iter_source_files(sample_project, (".md",))] == ["README.md"]
    assert [p.as_posix() for p in iter_source_files(sample_project)] == EXPECTED


def test_walk_passes_over_pipes_and_files_over_the_size_limit(tmp_path: Path) -> None:
    """A named pipe is no source; a file over MAX_FILE_BYTES is read by no task (and the lint
    discovery would have ruff read it whole)."""
    (tmp_path / "small.py").write_text("x = 1\n")
    (tmp_path / "limit.py").write_bytes(b"#" * (MAX_FILE_BYTES - 1) + b"\n")
    (tmp_path / "huge.py").write_bytes(b"#" * MAX_FILE_BYTES + b"\n")
    os.mkfifo(tmp_path / "pipe.py")

    assert [p.as_posix() for p in iter_source_files(tmp_path)] == ["limit.py", "small.py"]


def test_walk_of_a_missing_root_fails(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match="not a directory"):
        list(iter_source_files(tmp_path / "missing"))
