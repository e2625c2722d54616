"""The public names of the store, jobs and patches packages: sorted, unique, importable."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "package", ["structured_agents.store", "structured_agents.jobs", "structured_agents.patches"]
)
def test_all_is_sorted_and_importable(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    # isort-style, as ruff's RUF022 keeps it: CONSTANTS, then Classes, then functions
    assert names == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(module, name) is not None
