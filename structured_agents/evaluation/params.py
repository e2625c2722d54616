"""Parameter entries of a docstring against the target's real parameters.

The entries are what `docstring_parser <https://pypi.org/project/docstring-parser/>`_ reads
as parameters, keyword arguments and attributes in any of the google, numpy and sphinx styles
(``a, b : int`` is two entries). Names compare without their ``*``/``**``, so ``*args`` and
``args`` are the same parameter. The real parameters are those the docstring task records
(:attr:`~structured_agents.tasks.docstring.DocstringTarget.parameters`: a function's own, ``self`` and
``cls`` left out, or a class's ``__init__`` parameters and annotated attributes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import docstring_parser

__all__ = ["ParameterCheck", "check_parameters", "parameter_entries"]


def _name(raw: str) -> str:
    return raw.strip().strip("`").lstrip("*").strip()


def parameter_entries(docstring: str) -> list[str]:
    """The parameter names ``docstring`` describes, in order (none when it does not parse)."""
    try:
        parsed = docstring_parser.parse(docstring)
    except docstring_parser.ParseError:
        return []
    names = [_name(part) for param in parsed.params for part in param.arg_name.split(",")]
    return [name for name in names if name]


@dataclass(frozen=True, slots=True)
class ParameterCheck:
    """How the parameter entries of one docstring fit the target."""

    entries: int
    """Parameter entries the docstring writes."""
    entries_real: int
    """Of those, the entries naming a real parameter of the target."""
    real: int
    """Real parameters of the target."""
    real_documented: int
    """Of those, the ones some entry describes."""


def check_parameters(docstring: str, parameters: Sequence[str]) -> ParameterCheck:
    """Compare the entries of ``docstring`` with the target's real ``parameters``."""
    real = {_name(name) for name in parameters}
    entries = parameter_entries(docstring)
    return ParameterCheck(
        entries=len(entries),
        entries_real=sum(name in real for name in entries),
        real=len(real),
        real_documented=len(real & set(entries)),
    )
