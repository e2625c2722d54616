"""Docstring styles: detected from a codebase's docstrings, and a submission's parts written out."""

from __future__ import annotations

import pytest

from structured_agents.tasks.docstring import docstring_text
from structured_agents.tasks.docstring.style import (
    clean_line,
    detect_style,
    format_docstring,
    signature_types,
    summary_line,
)

GOOGLE = 'def f(a):\n    """Do.\n\n    Args:\n        a: A.\n\n    Returns:\n        B.\n    """\n'
NUMPY = 'def f(a):\n    """Do.\n\n    Parameters\n    ----------\n    a : int\n        A.\n    """\n'
SPHINX = 'def f(a):\n    """Do.\n\n    :param a: A.\n    :returns: B.\n    """\n'
PROSE = 'def f(a):\n    """Do a thing with a."""\n'


@pytest.mark.parametrize(
    ("sources", "style"),
    [
        ([GOOGLE, PROSE], "google"),
        ([NUMPY, NUMPY, GOOGLE], "numpy"),
        ([SPHINX, PROSE], "sphinx"),
        ([PROSE, PROSE, PROSE], "plain"),
        ([PROSE], "google"),  # too little to call prose the project's style
        (["def broken(:\n"], "google"),
    ],
)
def test_the_style_is_the_one_the_docstrings_use_most(sources: list[str], style: str) -> None:
    assert detect_style(sources) == style


def test_a_line_is_cleaned_of_markup_quotes_and_spaces() -> None:
    assert clean_line('  """convert   the value<escape>},x') == "Convert the value."
    assert clean_line("Already done!") == "Already done!"
    assert clean_line(" <escape>") == ""


def test_a_summary_is_its_first_sentence() -> None:
    assert (
        summary_line("return a zip of items in the codes. перегов.") == "Return a zip of items in the codes."
    )
    assert summary_line("Yield rows! Then more words") == "Yield rows!"
    assert summary_line("Return the value, e.g. 3 or 4.") == "Return the value, e.g. 3 or 4."
    assert summary_line("Return the value of x.y as text.") == "Return the value of x.y as text."
    assert summary_line("One sentence") == "One sentence." and summary_line("") == ""


SOURCE = "def scale(value: float, *factors: int, **options) -> float:\n    return value\n"
ENTRIES = [("value", "The value."), ("*factors", "The factors."), ("**options", "")]


def test_google_numpy_sphinx_and_plain() -> None:
    gives = ("returns", "The scaled value.")
    assert format_docstring("google", "Scale a value.", ENTRIES, gives) == (
        "Scale a value.\n\nArgs:\n    value: The value.\n    *factors: The factors.\n\n"
        "Returns:\n    The scaled value."
    )
    assert format_docstring("numpy", "Scale a value.", ENTRIES, gives, source=SOURCE) == (
        "Scale a value.\n\nParameters\n----------\nvalue : float\n    The value.\n*factors : int\n"
        "    The factors.\n\nReturns\n-------\nfloat\n    The scaled value."
    )
    assert format_docstring("sphinx", "Scale a value.", ENTRIES, ("yields", "Steps.")) == (
        "Scale a value.\n\n:param value: The value.\n:param factors: The factors.\n:yields: Steps."
    )
    assert format_docstring("plain", "Scale a value.", ENTRIES, gives) == "Scale a value."
    assert format_docstring("google", "Scale a value.") == "Scale a value."


def test_the_types_come_from_the_signature() -> None:
    assert signature_types(SOURCE) == {"value": "float", "factors": "int", "return": "float"}
    assert signature_types("class C:\n    pass\n") == {}


def test_a_submission_is_written_in_the_jobs_style_in_signature_order() -> None:
    inputs = {
        "parameter_names": ["value", "*factors"],
        "gives": "returns",
        "style": "google",
        "source": SOURCE,
    }
    submitted = {
        "description": "scale a value",
        "parameters": {"factors": "the factors", "value": "the value"},
        "returns": "the result",
    }
    assert docstring_text(submitted, inputs) == (
        "Scale a value.\n\nArgs:\n    value: The value.\n    *factors: The factors.\n\n"
        "Returns:\n    The result."
    )
    assert docstring_text({"docstring": "  Whole text.  "}, inputs) == "Whole text."
    assert docstring_text({"description": " "}, inputs) == ""
