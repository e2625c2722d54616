"""The JSON-schema string ``pattern`` forms that grammars enforce, read once for every plugin.

``^[^CHARS]*$`` (none of ``CHARS``), ``^[^FIRST][^CHARS]*$`` (a first character that is none of
``FIRST``, then none of ``CHARS``) and ``^(...)?$`` (or the empty string), each optionally
opening on literal words (``^Return [^FIRST][^CHARS]*$``; letters, digits, ``_`` and spaces, a
digit not first); no ``]`` or ``\\`` in the sets. A
plugin turns a :class:`NoneOf` into its own rule; any other pattern is left to the tool's own
validation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NoneOf", "none_of"]

_NONE_OF = re.compile(r"\^(\()?([A-Za-z_][A-Za-z0-9_ ]*)?(?:\[\^([^\]\\]+)\])?\[\^([^\]\\]+)\]\*(?(1)\)\?)\$")


@dataclass(frozen=True, slots=True)
class NoneOf:
    """A pattern of one of the forms above."""

    optional: bool
    """The whole text may be empty (``^(...)?$``)."""
    opening: str
    """Literal words the text opens on (``""``: none)."""
    first: str | None
    """Characters the first character after the opening is none of (None: no such rule)."""
    rest: str
    """Characters no later character is."""


def none_of(pattern: object) -> NoneOf | None:
    """``pattern`` read as a :class:`NoneOf`, or None when it is not of those forms."""
    match = _NONE_OF.fullmatch(pattern) if isinstance(pattern, str) else None
    if match is None:
        return None
    optional, opening, first, rest = match.groups()
    return NoneOf(optional is not None, opening or "", first, rest)
