"""Shared fixtures of the .pym tests: one warm sandbox runner, a cache per test, script builders."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from structured_agents.pym import PymCache, PymRunner, PymScript, load_source


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def runner() -> Iterator[PymRunner]:
    """One runner (and so one Monty pool) for the whole session, as a server would keep it."""
    with PymRunner() as pym_runner:
        yield pym_runner


@pytest.fixture
def cache(tmp_path: Path) -> PymCache:
    return PymCache(tmp_path / "cache")


@pytest.fixture
def make_script(tmp_path: Path, cache: PymCache) -> Callable[[str, str], PymScript]:
    """Write a dedented source as ``tmp_path/<name>.pym`` and load it (raises if rejected)."""

    def make(source: str, name: str = "tool") -> PymScript:
        path = tmp_path / f"{name}.pym"
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return load_source(path.read_text(encoding="utf-8"), path, cache=cache)

    return make
