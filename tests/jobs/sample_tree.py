"""The sample codebase (``tests/fixtures/sample_project``) and the files git would not commit."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"

SKIPPED_FILES = {
    "build/output.py": "def built():\n    return 1\n",
    "scratch.py": "def scratch():\n    return 2\n",
    "legacy.generated.py": "def legacy():\n    return 3\n",
    "geometry/draft_circle.py": "def draft():\n    return 4\n",
    ".venv/lib/site.py": "def site():\n    return 5\n",
    "geometry/__pycache__/shapes.py": "def cached():\n    return 6\n",
    ".git/hooks/hook.py": "def hook():\n    return 7\n",
}
"""Files the sample project's ``.gitignore`` files ignore, and files in always-skipped
directories. They are written by :func:`copy_sample_project` because git refuses to commit them."""


def copy_sample_project(destination: Path) -> Path:
    """Copy the sample project to ``destination`` and add the skipped files; returns the copy."""
    shutil.copytree(FIXTURE, destination, ignore=shutil.ignore_patterns("__pycache__", ".ruff_cache"))
    for relative, text in SKIPPED_FILES.items():
        path = destination / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return destination
