"""Load YAML keeping where each value came from, so errors can name the file and the line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["LocatedYaml", "load_located_yaml"]


class LocatedYaml:
    """A parsed YAML document plus the line/column of every node, addressed by its path."""

    def __init__(
        self,
        path: Path,
        data: Any,
        marks: dict[tuple[str | int, ...], tuple[int, int]],
        scalars: dict[tuple[str | int, ...], tuple[int, str]] | None = None,
    ) -> None:
        self.path = path
        self.data = data
        self._marks = marks
        self._scalars = scalars or {}

    def where(self, loc: Sequence[str | int]) -> str:
        """``file:line:col`` of the deepest known node on ``loc`` (1-based)."""
        key = tuple(loc)
        while key and key not in self._marks:
            key = key[:-1]
        line, col = self._marks.get(key, (0, 0))
        return f"{self.path}:{line + 1}:{col + 1}"

    def text_line(self, loc: Sequence[str | int], line: int) -> int:
        """File line (1-based) of line ``line`` (1-based) of the string value at ``loc``.

        Block scalars (``|``, ``>``) start on the line after their indicator; other scalars on
        their own line. Unknown locations give the line of the deepest known node.
        """
        found = self._scalars.get(tuple(loc))
        if found is None:
            key = tuple(loc)
            while key and key not in self._marks:
                key = key[:-1]
            return self._marks.get(key, (0, 0))[0] + 1
        start, style = found
        return start + (1 if style in ("|", ">") else 0) + line


def _walk(
    node: yaml.Node,
    loc: tuple[str | int, ...],
    marks: dict[tuple[str | int, ...], tuple[int, int]],
    scalars: dict[tuple[str | int, ...], tuple[int, str]],
) -> None:
    marks[loc] = (node.start_mark.line, node.start_mark.column)
    if isinstance(node, yaml.ScalarNode):
        scalars[loc] = (node.start_mark.line, node.style or "")
    elif isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            marks[(*loc, key)] = (key_node.start_mark.line, key_node.start_mark.column)
            _walk(value_node, (*loc, key), marks, scalars)
            # pydantic reports the key's position for missing/extra fields: keep the key's mark
            marks[(*loc, key)] = (key_node.start_mark.line, key_node.start_mark.column)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*loc, index), marks, scalars)


def load_located_yaml(path: Path) -> LocatedYaml:
    """Parse ``path``; raises ``yaml.YAMLError`` (with its own line) on malformed YAML."""
    text = path.read_text(encoding="utf-8")
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    marks: dict[tuple[str | int, ...], tuple[int, int]] = {}
    scalars: dict[tuple[str | int, ...], tuple[int, str]] = {}
    if node is not None:
        _walk(node, (), marks, scalars)
    data = yaml.safe_load(text)
    return LocatedYaml(path, data, marks, scalars)
