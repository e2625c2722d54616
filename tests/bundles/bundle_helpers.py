"""Helpers of the bundle tests: copies of the shipped bundles to break on purpose."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "bundles"
SAMPLE_PROJECT = REPO / "tests" / "fixtures" / "sample_project"


def copy_bundle(name: str, destination: Path) -> Path:
    """A copy of the shipped bundle ``name``; returns its directory."""
    shutil.copytree(SHIPPED / name, destination)
    return destination


def edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) with ``new`` in the file at ``path``."""
    text = path.read_text()
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    """1-based line of the first line of ``path`` containing ``needle``."""
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if needle in line)
