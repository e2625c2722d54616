"""The public API of ``structured_agents.pym`` and its error tree."""

from __future__ import annotations

import structured_agents.pym as pym
from structured_agents.errors import ToolError, ToolExecutionError


def test_exports_are_sorted_and_importable() -> None:
    def isort_style(name: str) -> tuple[int, str]:  # CONSTANTS, then Classes, then functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert pym.__all__ == sorted(pym.__all__, key=isort_style)
    for name in pym.__all__:
        assert getattr(pym, name) is not None


def test_error_tree() -> None:
    for error in (pym.PymCheckError, pym.PymInputError, pym.PymRunError):
        assert issubclass(error, pym.PymError) and issubclass(error, ToolError)
    assert issubclass(pym.PymParseError, pym.PymCheckError)
    for run_error in (pym.PymExecutionError, pym.PymExternalError, pym.PymLimitError, pym.PymOutputError):
        assert issubclass(run_error, pym.PymRunError) and issubclass(run_error, ToolExecutionError)


def test_error_locations() -> None:
    assert str(pym.PymExecutionError("boom", path="t.pym", line=3, column=7)) == "t.pym:3:7: boom"
    assert str(pym.PymInputError("bad", path="t.pym")) == "t.pym: bad"
    assert str(pym.PymLimitError("slow", limit="duration")) == "slow"
