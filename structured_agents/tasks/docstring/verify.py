"""The docstring verifier: the checks a reviewer makes that a machine can decide from a
docstring's parts and the code they document, what can be repaired mechanically, and what
cannot be and is flagged.

A docstring is checked as the parts the model wrote (:class:`Parts`: the summary line, a text
per parameter, a text for what the target returns or yields), against the facts of its target
(:class:`Target`: what it hands back, its parameters, its source) and the words of its file.

Repaired (each repair is named in :attr:`Verdict.repairs`):

* a parameter text that is empty, only a type (``Int.``, ``A list of strings.``), only the
  parameter's own name (``The word.``), boilerplate (``The value of the parameter.``), the
  same as another part's, or that repeats itself; a ``Returns``/``Yields`` text that says
  ``None`` of a value, only a type, or repeats the summary. Sections are all or nothing
  (a docstring that documents some parameters and not the others is what ``pydoclint``
  rejects), so one such part drops the sections and the summary stands alone;
* a summary that runs on: cut at its first sentence, and where it starts repeating itself.

Flagged (:attr:`Verdict.findings`, the docstring stored as *needs review*):

* ``return-claim`` / ``yield-claim``: a summary that opens on "Return" for code that returns
  nothing (a class, a function without a value), or on "Yield" for code that is no generator;
* ``unknown-name``: an exception, identifier or dotted name the summary mentions that the code
  and its file never do (``FrozenTypeError``);
* ``unknown-words``: subject words found nowhere in the target's code, its file or its names,
  nor among the words docstrings use about any code (:func:`general_words`, drawn from the
  standard library's docstrings): an invented "triangle" for a rectangle's area;
* ``vacuous``: a summary that says nothing (``Use.``, ``This is a function.``), or only the
  target's own name (``This is a curry class.``, ``Return the identity of x.``);
* ``truncated``: a summary that stops mid-phrase (``... the value of the.``);
* ``code-fragment``: code written where prose belongs (``Yield tuple(iterable).``);
* ``too-long``: a summary over :data:`MAX_SUMMARY_WORDS` words.

Batch-level checks (a summary another target with different code also got) and the model's
confidence are added where the batch and the engine's scores are known
(:mod:`structured_agents.tasks.docstring`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from structured_agents.tasks.docstring.style import clean_line, signature_types, summary_line
from structured_agents.words import STOP_WORDS, words

__all__ = [
    "MAX_SUMMARY_WORDS",
    "Finding",
    "Parts",
    "Target",
    "Verdict",
    "general_words",
    "verify",
]

MAX_SUMMARY_WORDS = 30
"""A summary longer than this many words is flagged (PEP 257: one line)."""

_TYPE_WORDS = frozenset(
    words(
        "int integer str string bool boolean float double list dict dictionary tuple set frozenset "
        "bytes bytearray object callable function func iterable iterator sequence mapping any none "
        "number type class instance generator array optional union char character pointer kwarg arg"
    )
)
"""Words a text that names only a type is made of (``Int.``, ``A list of strings.``)."""
_BOILERPLATE = frozenset(
    words("value parameter argument given param arg object input the a an of to be for this")
)
"""Words of a parameter text that says nothing (``The value of the parameter.``)."""
_ARTICLES = frozenset(("a", "an", "the", "of", "to", "be", "is"))
_NONE_TEXTS = frozenset(("none", "nothing", "no value", "no return value", "returns none", "return none"))
_OPENING = re.compile(r"^\s*(\w+)")
_RETURN_VERBS = frozenset(("return", "returns", "returned", "returning"))
_YIELD_VERBS = frozenset(("yield", "yields", "yielded", "yielding"))
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b")
_IDENTIFIER = re.compile(
    r"(?<![\w.])([A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+|[A-Za-z]*_\w*|[a-z]+[A-Z]\w*|\w+\(\))(?![\w])"
)
"""Code-like names in prose: dotted (``os.path``), snake_case, camelCase, or called (``f()``)."""
_TOKEN = re.compile(r"[A-Za-z]+")
_DANGLING = frozenset(
    (  # noqa: SIM905 (a word list reads best as words)
        "a an the of to in on and or with for is are not if that which by from as at into than its "
        "their this these"
    ).split()
)
"""Words a finished sentence does not end on."""
_NEEDS_NOUN = frozenset(
    (  # noqa: SIM905 (a word list reads best as words)
        "given generated specified provided following corresponding resulting requested selected "
        "current same other new next previous"
    ).split()
)
"""Words that, right after an article, still wait for their noun ("...for the generated.")."""
_ARTICLE_ENDS = frozenset(("a", "an", "the"))
_CALL = re.compile(r"\w\(|\(\w*$|[\[\]{}=]")
"""A call (``tuple(iterable)``), an unclosed parenthesis, brackets or an assignment in prose."""
_NAME_ONLY = frozenset(words("class object function method instance subclass type version wrapper helper"))
"""Words a summary that only restates its target's name adds to it."""
_FUNCTION_WORDS = frozenset(
    words(
        "the and for with from this that into are was were has have had not but all any can may will "
        "one each per via than then when where which while who what how why its return yield given"
    )
)
"""Words that say nothing of the code (a summary of only these and its name says nothing)."""


@cache
def general_words() -> frozenset[str]:
    """The stems (:func:`structured_agents.words.words`) docstrings use about any code: those
    the docstrings of at least twelve modules of CPython's standard library use
    (``scripts/general_words.py`` writes ``general_words.txt``), read once."""
    text = resources.files(__package__).joinpath("general_words.txt").read_text(encoding="utf-8")
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a reviewer would object to."""

    code: str
    """``return-claim``, ``yield-claim``, ``unknown-name``, ``unknown-words``, ``vacuous``,
    ``too-long``, ``shared-summary`` or ``low-confidence``."""
    message: str
    """What is wrong, in words a reviewer reads (``says 'Return' but the code returns nothing``)."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class Parts:
    """A docstring as the model writes it: a summary, a text per parameter, what it hands back."""

    summary: str
    parameters: dict[str, str] = field(default_factory=dict)
    """Parameter name (bare, no stars) -> its text."""
    gives: tuple[str, str] | None = None
    """``("returns" | "yields", text)``."""

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> Parts:
        """The parts of a ``submit_result`` call's arguments (``description``, ``parameters``,
        ``returns`` or ``yields``)."""
        described = arguments.get("parameters")
        parameters = (
            {str(name).lstrip("*"): str(text or "") for name, text in described.items()}
            if isinstance(described, Mapping)
            else {}
        )
        gives = next(
            ((kind, str(arguments[kind])) for kind in ("returns", "yields") if arguments.get(kind)), None
        )
        return cls(str(arguments.get("description") or ""), parameters, gives)

    def arguments(self) -> dict[str, Any]:
        """The parts as a ``submit_result`` call's arguments (the inverse of :meth:`of`)."""
        out: dict[str, Any] = {"description": self.summary}
        if self.parameters:
            out["parameters"] = dict(self.parameters)
        if self.gives is not None:
            out[self.gives[0]] = self.gives[1]
        return out


@dataclass(frozen=True, slots=True)
class Target:
    """What the verifier knows of the code a docstring documents."""

    qualname: str
    kind: str
    """``function``, ``method`` or ``class``."""
    source: str
    """The definition's source."""
    gives: str | None = None
    """``returns``, ``yields`` or None (the task's discovery decides, from the AST)."""
    parameters: tuple[str, ...] = ()
    file_text: str = ""
    """The whole file the target is in (its other names and comments count as its words)."""

    @classmethod
    def of(cls, inputs: Mapping[str, Any], file_text: str = "") -> Target:
        """The target of a docstring job's inputs."""
        return cls(
            qualname=str(inputs.get("qualname") or ""),
            kind=str(inputs.get("target_kind") or "function"),
            source=str(inputs.get("source") or ""),
            gives=str(inputs["gives"]) if inputs.get("gives") in ("returns", "yields") else None,
            parameters=tuple(str(name).lstrip("*") for name in inputs.get("parameter_names") or ()),
            file_text=file_text,
        )

    @property
    def is_property(self) -> bool:
        """A ``@property`` (or cached one): its summary describes a value, "Return" is no false claim."""
        return bool(re.search(r"^\s*@(\w+\.)?(cached_)?property\b", self.source, re.MULTILINE))

    def stems(self) -> frozenset[str]:
        """The words of the target's code, name and file (:func:`structured_agents.words.words`)."""
        return frozenset(words(" ".join((self.source, self.qualname, self.file_text))))

    def text(self) -> str:
        return f"{self.source}\n{self.qualname}\n{self.file_text}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A docstring's parts after repair, with what was repaired and what is still wrong."""

    parts: Parts
    repairs: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.findings


def _normal(text: str) -> str:
    return " ".join(_TOKEN.findall(text.lower()))


def _repeats(text: str) -> int | None:
    """Where ``text`` starts repeating itself (the start of the second copy of a three-word run,
    or of a word said twice in a row), as a character offset; None when it does not."""
    tokens = [(m.group().lower(), m.start()) for m in _TOKEN.finditer(text)]
    seen: dict[tuple[str, ...], int] = {}
    for i in range(len(tokens)):
        if i and tokens[i][0] == tokens[i - 1][0] and len(tokens[i][0]) > 2:
            return tokens[i][1]
        gram = tuple(word for word, _ in tokens[i : i + 3])
        if len(gram) == 3:
            if gram in seen and seen[gram] + 3 <= i:
                return tokens[i][1]
            seen.setdefault(gram, i)
    return None


def _cut_repeat(text: str) -> str:
    at = _repeats(text)
    return text if at is None else text[:at].rstrip(" ,;:-")


def _part_fault(name: str | None, text: str, target: Target) -> str | None:
    """Why a section's text is not worth keeping (None: it is)."""
    plain = _normal(text)
    if not plain:
        return "empty"
    if _repeats(text) is not None:
        return "repeats itself"
    stems = set(words(text))
    if name is None and plain in _NONE_TEXTS:
        return f"says {text.strip()!r} of a value the code {target.gives or 'returns'}"
    annotation = signature_types(target.source).get(name or "return", "")
    if not stems - _TYPE_WORDS - set(words(annotation)):  # "Int.", "Context." for ctx: Context
        return "names only a type"
    if name is not None:
        own = set(words(name))
        if stems <= own | _BOILERPLATE | _TYPE_WORDS:
            return "says only the parameter's name" if stems & own else "is boilerplate"
    return None


def _repair_sections(parts: Parts, target: Target) -> tuple[Parts, list[str]]:
    """The sections kept when every part passes, else the summary alone (module docstring)."""
    faults: list[str] = []
    seen: dict[str, str] = {_normal(parts.summary): "the summary"}
    for name, text in parts.parameters.items():
        fault = _part_fault(name, text, target)
        key = _normal(text)
        if fault is None and key in seen:
            fault = f"repeats {seen[key]}"
        seen.setdefault(key, name)
        if fault is not None:
            faults.append(f"{name}: {fault}")
    if parts.gives is not None:
        kind, text = parts.gives
        fault = _part_fault(None, text, target)
        if fault is None and _normal(text) in seen:
            fault = f"repeats {seen[_normal(text)]}"
        if fault is not None:
            faults.append(f"{kind}: {fault}")
    if not faults:
        return parts, []
    return Parts(parts.summary), [f"sections dropped ({'; '.join(faults)})"]


def _opening(text: str) -> str:
    match = _OPENING.match(text)
    return match.group(1).lower() if match else ""


def _claims(summary: str, target: Target) -> list[Finding]:
    verb = _opening(summary)
    found = []
    if verb in _RETURN_VERBS and target.gives is None and not target.is_property:
        what = "it documents a class" if target.kind == "class" else "the code returns no value"
        found.append(Finding("return-claim", f"opens on {verb!r}, but {what}"))
    if verb in _YIELD_VERBS and target.gives != "yields":
        found.append(Finding("yield-claim", f"opens on {verb!r}, but the code is no generator"))
    return found


def _names(summary: str, target: Target) -> list[Finding]:
    text = target.text()
    names = set(_EXCEPTION.findall(summary))
    names.update(match.group(1) for match in _IDENTIFIER.finditer(summary))
    unknown = sorted(name for name in names if name.rstrip("()") not in text)
    return (
        [Finding("unknown-name", f"mentions {', '.join(unknown)}, which the code never does")]
        if unknown
        else []
    )


def _unknown_words(summary: str, target: Target) -> list[Finding]:
    own, general = target.stems(), general_words()
    names = {name.replace("_", "").lower() for name in re.findall(r"\w+", target.text())}
    unknown = sorted(
        {
            raw.lower()
            for raw in _TOKEN.findall(summary)
            if len(raw) >= 4
            and raw.lower() not in STOP_WORDS
            and raw.lower() not in names  # "sortedlist" for the code's SortedList
            and not any(name.startswith(raw.lower()) for name in names)  # "slug" for slugify
            and (stem := words(raw))
            and all(part not in own and part not in general for part in stem)
        }
    )
    if not unknown:
        return []
    return [Finding("unknown-words", f"says {', '.join(unknown)}, found nowhere in the code or its file")]


def _vacuous(summary: str, target: Target) -> list[Finding]:
    tokens = _TOKEN.findall(summary)
    meaningful = [word for word in tokens if word.lower() not in STOP_WORDS and word.lower() not in _ARTICLES]
    said = set(words(summary)) - _FUNCTION_WORDS - _TYPE_WORDS
    name = set(words(target.qualname.rpartition(".")[2]))
    if len(tokens) < 3 or not meaningful:
        return [Finding("vacuous", f"{summary!r} says nothing of what the code does")]
    if said <= name | _NAME_ONLY:
        return [Finding("vacuous", f"{summary!r} says only the name {target.qualname!r}")]
    if tokens[-1].lower() in _DANGLING and summary.rstrip(".").endswith(tokens[-1]):
        return [Finding("truncated", f"the summary stops mid-phrase, on {tokens[-1]!r}")]
    if len(tokens) > 2 and tokens[-2].lower() in _ARTICLE_ENDS and tokens[-1].lower() in _NEEDS_NOUN:
        return [Finding("truncated", f"the summary stops before its noun, on {tokens[-2]} {tokens[-1]!r}")]
    if _CALL.search(summary.rstrip(".")):
        return [Finding("code-fragment", f"the summary holds code, not prose: {summary!r}")]
    if len(tokens) > MAX_SUMMARY_WORDS:
        return [Finding("too-long", f"the summary has {len(tokens)} words, more than {MAX_SUMMARY_WORDS}")]
    return []


def verify(parts: Parts, target: Target) -> Verdict:
    """Repair what can be repaired in ``parts``, then check what is left against ``target``
    (see the module docstring)."""
    repairs: list[str] = []
    summary = summary_line(parts.summary)
    cut = _cut_repeat(summary)
    if cut != summary:
        repairs.append("summary cut where it started repeating itself")
        summary = clean_line(cut)
    parts, dropped = _repair_sections(replace(parts, summary=summary), target)
    repairs += dropped
    if not summary:
        return Verdict(parts, tuple(repairs), (Finding("vacuous", "the summary is empty"),))
    findings = [*_vacuous(summary, target), *_claims(summary, target), *_names(summary, target)]
    findings += _unknown_words(summary, target)
    return Verdict(parts, tuple(repairs), tuple(findings))
