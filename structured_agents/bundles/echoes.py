"""Refuse a submission that repeats the prompt's fixed text word for word.

A small model copies what it sees: a worked example's answer ("A last-in, first-out stack of
items.") or a tool's description ends up in the result of an unrelated job. A call of the
termination tool with a string argument holding a line of at least :data:`MIN_WORDS` words
that also stands in a worked example's calls or in a tool's or argument's description (spaces
and case aside) is refused: the model is told which line it copied and, while turns remain,
submits again. A run that never submits anything else fails with that reason instead of
storing the copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from structured_agents.bundles.manifest import FewShotExample
from structured_agents.types import ToolCall, ToolSchema

__all__ = ["MIN_WORDS", "EchoCheck", "string_values"]

MIN_WORDS = 5
"""Shorter lines (``Returns:``, ``a : int``, ``The first integer.``) are common to many answers;
a longer one that stands word for word in an example was copied from it."""


def string_values(value: object) -> Iterator[str]:
    """Every string in ``value``, a tool call's arguments (nested dicts and lists walked)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from string_values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from string_values(item)


def _lines(texts: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Each long enough line as written and as compared (spaces collapsed, case folded)."""
    for text in texts:
        for line in text.splitlines():
            words = line.split()
            if len(words) >= MIN_WORDS:
                yield line.strip(), " ".join(words).casefold()


@dataclass(frozen=True, slots=True)
class EchoCheck:
    """The fixed lines of a bundle's prompt that its termination tool must not repeat."""

    tool: str
    """The termination tool; calls of other tools are not checked."""
    lines: frozenset[str]
    """The lines to refuse, spaces collapsed and case folded."""

    @classmethod
    def of(cls, tool: str, examples: Sequence[FewShotExample], tools: Sequence[ToolSchema]) -> EchoCheck:
        """The lines of every example call's string arguments and of every tool's descriptions."""
        texts = [
            text for example in examples for call in example.calls for text in string_values(call.arguments)
        ]
        for schema in tools:
            texts.append(schema.description)
            texts += [str(spec.get("description", "")) for spec in schema.properties.values()]
        return cls(tool, frozenset(key for _, key in _lines(texts)))

    def refusal(self, call: ToolCall) -> str | None:
        """Why ``call`` is refused (the first copied line), or None when it is not."""
        if call.name != self.tool:
            return None
        for line, key in _lines(string_values(call.arguments)):
            if key in self.lines:
                return (
                    f"{call.name} refused: {line!r} is copied word for word from the examples or "
                    "the tool descriptions; write it about this task's own code"
                )
        return None
