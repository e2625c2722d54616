"""Fixtures of the bundle tests: one sandbox pool for the session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bundle_helpers import copy_bundle

from structured_agents.pym import PymRunner


@pytest.fixture(scope="session")
def pym_runner() -> Iterator[PymRunner]:
    with PymRunner() as runner:
        yield runner


@pytest.fixture
def docstring_copy(tmp_path: Path) -> Path:
    """A copy of the tool-call docstring bundle, docstring_calls (its directory)."""
    return copy_bundle("docstring_calls", tmp_path / "docstring_calls")
