"""Fixtures of the runner tests: one sandbox for the session, a project copy and a store per test
(in memory; ``db_url`` a SQLite database for ``sa run`` itself)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_helpers import copy_sample_project

from structured_agents.bundles import Bundle, load_bundle
from structured_agents.pym import PymRunner
from structured_agents.store import MemoryStore, Store


@pytest.fixture(scope="session")
def pym_runner() -> Iterator[PymRunner]:
    """One .pym sandbox pool shared by every bundle of the session."""
    with PymRunner() as runner:
        yield runner


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of tests/fixtures/sample_project."""
    return copy_sample_project(tmp_path / "project")


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A SQLite database of the test's own."""
    return f"sqlite:///{tmp_path / 'sa.db'}"


@pytest.fixture
def store() -> Iterator[Store]:
    """An in-memory store: these tests are about the runner, not SQL (``sa run`` through the
    CLI, in test_cli_run.py, keeps its SQLite database)."""
    with MemoryStore() as opened:
        yield opened


@pytest.fixture
def docstring_bundle(pym_runner: PymRunner) -> Iterator[Bundle]:
    """The tool-call docstring bundle (docstring_calls), whose calls the scripted models of
    these tests write (``runner_helpers.submit_docstring``); the default bundle runs in
    test_cli_run.py, test_ctrl_c.py and (with the real model) test_model_e2e.py."""
    bundle = load_bundle("docstring_calls", runner=pym_runner)
    yield bundle
    bundle.close()


@pytest.fixture
def lint_bundle(pym_runner: PymRunner) -> Iterator[Bundle]:
    bundle = load_bundle("lint", runner=pym_runner)
    yield bundle
    bundle.close()
