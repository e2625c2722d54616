"""Docstrings grounded in their target: what each job's model may write, and which of its
candidates is kept.

:func:`narrow` is the task's tool view: the termination tool of a docstring job takes a
one-line ``description``, one line per real parameter of the target under ``parameters`` (an
object whose keys are exactly the target's parameter names, so the grammar lets the model name
no other), and ``returns`` or ``yields`` only when the target hands something back; every
part is prose (:data:`PROSE`: no call syntax or markup inside), and the summary of a function
that returns or yields a value opens on PEP 257's verb, ``Return`` or ``Yield`` (:func:`opening`).

:class:`Grounding` picks among a turn's candidates (``SamplingParams.n``) the one whose words
come from the target's code rather than from the bundle's fixed texts: it scores the share of
the summary's words found in the code (identifier parts, strings, comments, the target's name
and path) and the share of the target's own name it says, and takes points off for words that
stand in the worked examples or the tool descriptions but not in the code, for any four-word
run copied from them, for a summary too short or too long, for repeated words within a part,
and for call markup, code or a foreign script written inside one (``</escape>``,
``,default``, ``one=1``, letters outside ASCII the code does not use: a candidate that ran on
past the end of its answer).

:meth:`Grounding.bad_words` is the task's ban (``KernelConfig.job_bad_words``): every word of
the bundle's prompts (:func:`structured_agents.borrowed.vocabulary`) that the target's file
does not use, lowercase and capitalized, so no candidate can borrow it (the kernel keeps the
ones the call syntax needs, such as ``description``, writable in lowercase).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from structured_agents.borrowed import file_text, file_words, vocabulary
from structured_agents.context import RunContext
from structured_agents.kernel.config import ParsedTurn
from structured_agents.tasks.docstring.verify import Parts, Target, verify
from structured_agents.types import ToolResult, ToolSchema
from structured_agents.words import content_words, plain_words, word_grams, words

__all__ = ["PROSE", "Grounding", "narrow", "opening"]

_MARKUP = re.compile(r"</?[A-Za-z_\\-]+")
"""A tag-like run (``</escape>``, ``<end-function_call>``): call markup written inside a value."""
_BROKEN = re.compile(r"^\s*[^\w\s`'\"(\[*]|=|\w\(\w*\(")
"""A value that opens on punctuation (``,default``, ``) return``), assigns (``one=1``) or nests
calls (``Print(str(tb), end``): the rest of a call or of the code written where prose belongs."""


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)


def _code(inputs: Mapping[str, Any]) -> str:
    """The text of a job's own code: its target's source, name and path."""
    return " ".join(str(inputs.get(key) or "") for key in ("source", "qualname", "path"))


def narrow(
    tools: Sequence[ToolSchema],
    inputs: Mapping[str, Any],
    results: Sequence[ToolResult] = (),
    *,
    termination: str,
) -> list[ToolSchema]:
    """The tools of one docstring job: ``termination`` shaped to the target (module docstring),
    the same on every turn (``results`` are not read)."""
    return [_shaped(tool, inputs) if tool.name == termination else tool for tool in tools]


_PROSE_TEXT = "[^<>{}:=,;.) ][^<>{}:=]*"
PROSE = f"^({_PROSE_TEXT})?$"
"""The ``pattern`` of every part of a docstring: no call syntax (``{``, ``}``, ``:``, ``=``), no
markup (``<``, ``>``), and no opening on punctuation or a space, which the FunctionGemma grammar
enforces (an empty part is left to the tool, which refuses it with its reason). A small model
that loses track of its string otherwise writes the rest of the call into it
(``,parameters:{additionalProperties:``, ``,default``, ``one=1``)."""

_OPENINGS = {"returns": "Return ", "yields": "Yield "}
"""The first word of the summary of a function that returns or yields a value: PEP 257's
imperative ("Return the ...", "Yield each ..."), which a small model otherwise trades for the
worked examples' verbs ("Add ...", "Convert ...")."""


def opening(inputs: Mapping[str, Any]) -> str:
    """The words a job's summary must open with (``""``: any), from what its target hands back."""
    return _OPENINGS.get(str(inputs.get("gives")), "")


def _line(what: str, opening: str = "") -> dict[str, Any]:
    """A part's schema; one that ``opening`` words begin cannot be empty either: a model whose
    own first word the grammar refuses would otherwise close the string at once."""
    pattern = f"^{opening}{_PROSE_TEXT}$" if opening else PROSE
    return {"type": "string", "description": f"One line: {what}.", "pattern": pattern}


def _shaped(tool: ToolSchema, inputs: Mapping[str, Any]) -> ToolSchema:
    properties: dict[str, Any] = {"description": _line("what the code does", opening(inputs))}
    style = inputs.get("style")
    names = [str(name).lstrip("*") for name in inputs.get("parameter_names") or ()]
    if names and style != "plain":
        entries = {name: _line(f"what {name} is") for name in names}
        properties["parameters"] = {
            "type": "object",
            "properties": entries,
            "required": names,
            "additionalProperties": False,
        }
    gives = inputs.get("gives")
    if gives in ("returns", "yields") and style != "plain":
        properties[gives] = _line(f"what the code {gives}")
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return ToolSchema(tool.name, tool.description, schema)


@dataclass(frozen=True, slots=True)
class Grounding:
    """Chooses a docstring job's candidate (see the module docstring)."""

    termination: str
    """The tool whose call carries the docstring."""
    fixed_words: frozenset[str]
    """Words of the bundle's worked examples and tool descriptions."""
    fixed_grams: frozenset[tuple[str, ...]]
    """Four-word runs of the same texts."""
    borrowable: frozenset[str] = frozenset()
    """The words of every text the bundle's prompts show (:func:`structured_agents.borrowed.vocabulary`)."""

    @classmethod
    def of(cls, termination: str, fixed_texts: Iterable[str], shown_texts: Iterable[str] = ()) -> Grounding:
        """The grounding of a bundle whose fixed texts are ``fixed_texts`` and whose prompts
        show ``shown_texts``."""
        texts = list(fixed_texts)
        fixed = frozenset(word for text in texts for word in content_words(text))
        grams = frozenset(gram for text in texts for gram in word_grams(text))
        return cls(termination, fixed, grams, vocabulary(shown_texts))

    def bad_words(self, context: RunContext) -> list[str]:
        """The words a job's docstring must not borrow, each lowercase and capitalized."""
        own = self._own(context)
        return [variant for word in sorted(self.borrowable - own) for variant in (word, word.capitalize())]

    def choose(
        self, context: RunContext, parsed: Sequence[ParsedTurn | None], margins: Sequence[float | None] = ()
    ) -> int:
        """The index of the best candidate (the first among equals): the one with the fewest
        findings left once the verifier repaired it (:mod:`.verify`), then the best review
        margin (how much more likely it makes the target's body: ``margins``, where the engine
        measured them), then the best grounded."""
        text = _code(context.inputs)
        code = set(words(text)) | {char for char in text if char.isalpha() and not char.isascii()}
        own = self._own(context)
        name = set(words(str(context.inputs.get("qualname") or "").rpartition(".")[2]))
        target = Target.of(
            context.inputs, file_text(context.workspace, str(context.inputs.get("path") or ""))
        )
        keys = []
        for index, turn in enumerate(parsed):
            call = next((c for c in (turn[1] if turn else ()) if c.name == self.termination), None)
            grounded = self.score(turn, code, own, name)
            if call is None:
                keys.append((0, 0, float("-inf"), grounded))
                continue
            findings = len(verify(Parts.of(call.arguments), target).findings)
            margin = margins[index] if index < len(margins) else None
            keys.append((1, -findings, margin if margin is not None else 0.0, grounded))
        return keys.index(max(keys))

    @staticmethod
    def _own(context: RunContext) -> set[str]:
        """The words a job's docstring may use although the prompts show them: its file's (read
        from the run's workspace) and its code's."""
        inputs = context.inputs
        return set(file_words(context.workspace, str(inputs.get("path") or ""))) | plain_words(_code(inputs))

    def score(
        self,
        turn: ParsedTurn | None,
        code: set[str],
        own: set[str] | None = None,
        name: set[str] | None = None,
    ) -> float:
        """How well one parsed candidate is grounded in ``code`` (the target's words, stemmed,
        and the letters outside ASCII it uses);
        ``own``: the words of the target's file (:func:`structured_agents.borrowed.file_words`);
        ``name``: the words of the target's own name, which a summary that says them gains by."""
        call = next((c for c in (turn[1] if turn else ()) if c.name == self.termination), None)
        if call is None:
            return -100.0
        summary = str(call.arguments.get("description") or call.arguments.get("docstring") or "")
        summary_words = content_words(summary)
        if not summary_words:
            return -50.0
        texts = list(_strings(call.arguments))
        every = " ".join(texts)
        leaked = {word for word in words(every) if word in self.fixed_words and word not in code}
        borrowed = (plain_words(every) & self.borrowable) - (own or set())
        copied = any(gram in self.fixed_grams for gram in word_grams(every))
        markup = any(_MARKUP.search(text) or _BROKEN.search(text) for text in texts) or any(
            char.isalpha() and not char.isascii() and char not in code for char in every
        )
        grounded = sum(word in code for word in summary_words) / len(summary_words)
        size = len(summary.split())
        shape = 0.0 if 3 <= size <= 16 else -0.5
        repeated = sum(len(found) - len(set(found)) for found in map(content_words, texts))
        named = len(name & set(summary_words)) / len(name) if name else 0.0
        penalty = 1.5 * len(leaked | borrowed) + 4.0 * copied + 3.0 * markup + 0.5 * repeated
        return 2.0 * grounded + named + shape - penalty
