"""A small, strict JSONPath subset for output transforms and pipeline input mappings.

Grammar: ``$`` followed by any number of segments:

* ``.name`` or ``['name']`` / ``["name"]``: a member of an object (bracket form for any name);
* ``[3]`` / ``[-1]``: an element of an array (negative counts from the end);
* ``.*`` or ``[*]``: every member value or element (the path then selects several values).

There are no filters, slices or recursive descent: paths are parsed when the registry loads,
so a malformed path is a load error naming where it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from structured_agents.registry.errors import RegistryError

__all__ = ["JsonPath"]

_TOKEN = re.compile(
    r"""\.(?P<name>[A-Za-z_][\w-]*)
      | \.(?P<dotstar>\*)
      | \[\s*(?P<index>-?\d+)\s*\]
      | \[\s*(?P<star>\*)\s*\]
      | \[\s*'(?P<sq>(?:[^'\\]|\\.)*)'\s*\]
      | \[\s*"(?P<dq>(?:[^"\\]|\\.)*)"\s*\]""",
    re.VERBOSE,
)
_WILD = object()


@dataclass(frozen=True, slots=True)
class JsonPath:
    """A parsed path; :meth:`select` returns every value it reaches in a document."""

    text: str
    segments: tuple[str | int | object, ...]

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        """Parse ``text``; RegistryError says at which character it stops making sense."""
        if not text.startswith("$"):
            raise RegistryError(f"JSON path {text!r} must start with '$'")
        segments: list[str | int | object] = []
        pos = 1
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise RegistryError(f"JSON path {text!r}: cannot read {text[pos:]!r} (at character {pos})")
            if match.group("name") is not None:
                segments.append(match.group("name"))
            elif match.group("index") is not None:
                segments.append(int(match.group("index")))
            elif match.group("sq") is not None or match.group("dq") is not None:
                quoted = match.group("sq") if match.group("sq") is not None else match.group("dq")
                segments.append(re.sub(r"\\(.)", r"\1", quoted))
            else:
                segments.append(_WILD)
            pos = match.end()
        return cls(text, tuple(segments))

    @property
    def is_single(self) -> bool:
        """True when the path has no wildcard, so it selects at most one value."""
        return _WILD not in self.segments

    @property
    def names(self) -> tuple[str | int, ...]:
        """The leading segments up to the first wildcard (for checking what a path refers to)."""
        out: list[str | int] = []
        for segment in self.segments:
            if not isinstance(segment, str | int):
                break
            out.append(segment)
        return tuple(out)

    def select(self, document: Any) -> list[Any]:
        """Every value the path reaches in ``document`` (empty when it reaches none)."""
        current = [document]
        for segment in self.segments:
            following: list[Any] = []
            for value in current:
                following.extend(_step(value, segment))
            current = following
        return current

    def first(self, document: Any) -> tuple[bool, Any]:
        """``(found, value)``: the one value of a single path, or the list of a wildcard path."""
        values = self.select(document)
        if self.is_single:
            return (True, values[0]) if values else (False, None)
        return True, values

    def __str__(self) -> str:
        return self.text


def _step(value: Any, segment: str | int | object) -> list[Any]:
    if segment is _WILD:
        if isinstance(value, dict):
            return list(value.values())
        return list(value) if isinstance(value, list) else []
    if isinstance(segment, str):
        return [value[segment]] if isinstance(value, dict) and segment in value else []
    if isinstance(segment, int) and isinstance(value, list) and -len(value) <= segment < len(value):
        return [value[segment]]
    return []
