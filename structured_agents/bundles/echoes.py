"""Refuse a submission that copies the prompt's fixed text, and ban the copy from the retry.

A small model copies what it sees: a worked example's answer ("A heating control that holds a
room...") or a tool's description ends up in the result of an unrelated job. A call of the
termination tool is refused when one of its string arguments holds a run of
:data:`~structured_agents.words.GRAM` consecutive words that also stands in a worked example's
calls or in a tool's or argument's description (case and punctuation aside; a near copy that
changes a word elsewhere is still caught), unless the run is about the job's own code: it must
have two content words, one of them absent from the job's code (its source, name and path).

The refusal names the copied run, and bans it (:attr:`~structured_agents.types.ToolResult.ban`):
the kernel adds it to the ``bad_words`` of the run's next turns, so an engine that supports
them cannot write it again. While turns remain the model submits again; a run that never
submits anything else fails with the refusal as its reason instead of storing the copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structured_agents.bundles.manifest import FewShotExample, InitialContext
from structured_agents.types import ToolCall, ToolSchema
from structured_agents.words import GRAM, content_words, word_grams, words

__all__ = ["CODE_INPUTS", "EchoCheck", "Refusal", "fixed_texts", "shown_texts", "string_values"]

CODE_INPUTS = ("source", "qualname", "path")
"""The job inputs whose words are the job's own code: a run of them is never a copy."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)


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


def fixed_texts(examples: Sequence[FewShotExample], tools: Sequence[ToolSchema]) -> list[str]:
    """The texts every prompt of a bundle shows: its worked examples' call arguments, and its
    tools' and their arguments' descriptions."""
    texts = [text for example in examples for call in example.calls for text in string_values(call.arguments)]
    for schema in tools:
        texts.append(schema.description)
        texts += [str(spec.get("description", "")) for spec in schema.properties.values()]
    return texts


def shown_texts(
    context: InitialContext, directory: Path, examples: Sequence[FewShotExample], tools: Sequence[ToolSchema]
) -> list[str]:
    """Every text a bundle's prompts show whatever the job: :func:`fixed_texts`, the examples'
    tasks and results, and the system prompt and user template without their Jinja tags
    (``*_file`` read from ``directory``). Their words are those a grounded text must not borrow
    (:mod:`structured_agents.borrowed`)."""
    texts = [text for example in examples for text in (example.user, example.result)]
    texts += fixed_texts(examples, tools)
    for inline, file in (
        (context.system_prompt, context.system_prompt_file),
        (context.user_template, context.user_template_file),
    ):
        text = (directory / file).read_text(encoding="utf-8") if file is not None else inline
        texts.append(_JINJA.sub(" ", text))
    return texts


def _runs(text: str) -> Iterator[tuple[tuple[str, ...], str]]:
    """Each run of GRAM words of ``text``: its lowercased words, and the run as written."""
    found = list(_WORD.finditer(text))
    for i in range(len(found) - GRAM + 1):
        run = found[i : i + GRAM]
        yield tuple(m.group().lower() for m in run), text[run[0].start() : run[-1].end()]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call is refused, and the copied texts to ban from the run's next turns."""

    message: str
    ban: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EchoCheck:
    """The word runs of a bundle's fixed texts that its termination tool must not copy."""

    tool: str
    """The termination tool; calls of other tools are not checked."""
    grams: frozenset[tuple[str, ...]]
    """Every run of GRAM words of the fixed texts, lowercased."""

    @classmethod
    def of(cls, tool: str, examples: Sequence[FewShotExample], tools: Sequence[ToolSchema]) -> EchoCheck:
        """The runs of every example call's string arguments and of every tool's descriptions."""
        return cls(tool, frozenset(g for text in fixed_texts(examples, tools) for g in word_grams(text)))

    def refusal(self, call: ToolCall, inputs: Mapping[str, Any] | None = None) -> Refusal | None:
        """Why ``call`` (of a job with ``inputs``) is refused, or None when it is not."""
        if call.name != self.tool:
            return None
        code = set(words(" ".join(str((inputs or {}).get(key) or "") for key in CODE_INPUTS)))
        copied: list[str] = []
        for text in string_values(call.arguments):
            for gram, written in _runs(text):
                if gram not in self.grams or written in copied:
                    continue
                meaningful = content_words(" ".join(gram))
                if len(meaningful) >= 2 and any(word not in code for word in meaningful):
                    copied.append(written)
        if not copied:
            return None
        return Refusal(
            f"{call.name} refused: {copied[0]!r} is copied from the examples or the tool descriptions; "
            "write about this task's own code, in its own words",
            tuple(copied),
        )
