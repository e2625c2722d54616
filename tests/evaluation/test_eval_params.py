"""Parameter entries of google, numpy and sphinx docstrings against the real parameters."""

from __future__ import annotations

from structured_agents.evaluation.params import ParameterCheck, check_parameters, parameter_entries

GOOGLE = "Add two integers.\n\nArgs:\n    a: The first.\n    *rest: The others.\n\nReturns:\n    The sum."
NUMPY = "Add.\n\nParameters\n----------\na, b : int\n    The numbers.\nscale : float\n    Factor.\n"
SPHINX = "Add.\n\n:param a: The first.\n:param int b: The second.\n:returns: The sum."


def test_entries_are_read_in_every_style() -> None:
    assert parameter_entries(GOOGLE) == ["a", "rest"]
    assert parameter_entries(NUMPY) == ["a", "b", "scale"]
    assert parameter_entries(SPHINX) == ["a", "b"]


def test_prose_has_no_entries() -> None:
    assert parameter_entries("Add two integers and return the sum.") == []


def test_entries_naming_no_real_parameter_count_as_wrong() -> None:
    # the worked example's "a" and "b" on a function of (value, factor)
    check = check_parameters(SPHINX, ["value", "factor"])
    assert check == ParameterCheck(entries=2, entries_real=0, real=2, real_documented=0)


def test_stars_do_not_matter_and_each_real_parameter_counts_once() -> None:
    docstring = "Add.\n\nArgs:\n    a: The first.\n    *rest: The others.\n    a: Again."
    check = check_parameters(docstring, ["a", "b", "*rest"])
    assert check == ParameterCheck(entries=3, entries_real=3, real=3, real_documented=2)


def test_class_attributes_are_entries_too() -> None:
    check = check_parameters("A point.\n\nAttributes:\n    x: Across.\n    y: Down.", ["x", "y"])
    assert check == ParameterCheck(entries=2, entries_real=2, real=2, real_documented=2)
