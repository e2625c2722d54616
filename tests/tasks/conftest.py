"""Task fixtures: a fresh copy of the sample project (see ``tests/jobs/sample_tree.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobs.sample_tree import copy_sample_project


@pytest.fixture
def sample_project(tmp_path: Path) -> Path:
    """A fresh copy of ``tests/fixtures/sample_project`` with its ignored files present."""
    return copy_sample_project(tmp_path / "sample_project")
