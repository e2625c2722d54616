"""Helpers of the bundle tests: copies of the shipped bundles to break on purpose."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "bundles"
SAMPLE_PROJECT = REPO / "tests" / "fixtures" / "sample_project"


SHARED_TOOLS = "    path: ../docstring/tools\n"
"""The registry line of a bundle whose tools are the docstring bundle's (``docstring_calls``)."""


def copy_bundle(name: str, destination: Path) -> Path:
    """A copy of the shipped bundle ``name``; returns its directory. A bundle that uses the
    docstring bundle's tools gets a copy of them of its own (``tools``), so the copy loads
    wherever it is and a test may break its tools without touching the shipped ones."""
    shutil.copytree(SHIPPED / name, destination)
    manifest = destination / "bundle.yaml"
    text = manifest.read_text()
    if SHARED_TOOLS in text:
        shutil.copytree(SHIPPED / "docstring" / "tools", destination / "tools")
        manifest.write_text(text.replace(SHARED_TOOLS, "    path: tools\n"))
    return destination


def edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) with ``new`` in the file at ``path``."""
    text = path.read_text()
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    """1-based line of the first line of ``path`` containing ``needle``."""
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if needle in line)
