"""Docstring styles: which one a codebase uses, and a submission written out in it.

The model submits the parts of a docstring (a one-line summary, a line per parameter, a line
for what the target returns or yields); this module writes them in the codebase's style, so the
form is always right and only the content is the model's:

=========  =============================================================================
google     ``Args:`` / ``Returns:`` / ``Yields:`` sections, entries ``name: text``
numpy      ``Parameters`` / ``Returns`` / ``Yields`` headings underlined with dashes,
           entries ``name : type`` (the annotation, when the code has one) and the text below
sphinx     ``:param name: text`` / ``:returns: text`` / ``:yields: text`` fields
plain      the summary alone: the codebase documents in prose, without sections
=========  =============================================================================
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from structured_agents import syntax

__all__ = [
    "STYLES",
    "Style",
    "clean_line",
    "detect_style",
    "format_docstring",
    "signature_types",
    "style_of",
    "summary_line",
]

Style = Literal["google", "numpy", "sphinx", "plain"]
STYLES: tuple[Style, ...] = ("google", "numpy", "sphinx", "plain")

_MARKERS: dict[Style, re.Pattern[str]] = {
    "google": re.compile(r"^\s*(Args|Arguments|Returns|Raises|Yields|Attributes):\s*$", re.MULTILINE),
    "numpy": re.compile(r"^\s*(Parameters|Returns|Yields|Raises)\s*\n\s*-{3,}\s*$", re.MULTILINE),
    "sphinx": re.compile(r"^\s*:(param|returns?|rtype|raises|type)\b", re.MULTILINE),
}
_MIN_DOCSTRINGS = 3
"""Documented definitions a codebase needs before prose without sections counts as its style."""


def _docstrings(sources: Iterable[str]) -> Iterable[str]:
    for text in sources:
        try:
            tree = syntax.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                docstring = ast.get_docstring(node)
                if docstring:
                    yield docstring


def detect_style(sources: Iterable[str]) -> Style:
    """The style of the docstrings in ``sources`` (module texts): the one most of them are
    written in (by their section markers); ``plain`` when enough use none; ``google`` without
    docstrings."""
    return style_of(_docstrings(sources))


def style_of(docstrings: Iterable[str]) -> Style:
    """The style most of ``docstrings`` are written in (see :func:`detect_style`)."""
    counts: dict[Style, int] = dict.fromkeys(STYLES, 0)
    documented = 0
    for docstring in docstrings:
        documented += 1
        found = {style: len(marker.findall(docstring)) for style, marker in _MARKERS.items()}
        style = max(found, key=lambda name: found[name])
        if found[style]:
            counts[style] += 1
    sectioned: tuple[Style, ...] = ("google", "numpy", "sphinx")
    best = max(sectioned, key=lambda style: counts[style])
    if counts[best] == 0:
        return "plain" if documented >= _MIN_DOCSTRINGS else "google"
    return best


_MARKUP = re.compile(r"<(start|end)_function|<escape>|<(start|end)_of_turn>|</?\w+_function\w*>")


def clean_line(text: str) -> str:
    """One line of prose: call-format markers and quotes cut, spaces collapsed, the first letter
    capitalised and a final period added."""
    match = _MARKUP.search(text)
    text = text[: match.start()] if match else text
    text = " ".join(text.replace('"""', " ").replace("'''", " ").split()).strip(" \"'`")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


_SENTENCE_END = re.compile(r"(?<!\.\w)[.!?]\s+(?=\S)")
"""The end of a sentence that more text follows (not the dot of ``e.g.``, ``i.e.``)."""


def summary_line(text: str) -> str:
    """The summary of a docstring: :func:`clean_line` of the first sentence of ``text``, PEP 257's
    one-sentence summary line (a small model runs on past it, ``... in the codes. перегов.``)."""
    line = clean_line(text)
    end = _SENTENCE_END.search(line)
    return line[: end.start() + 1] if end else line


def signature_types(source: str) -> dict[str, str]:
    """The annotations of a definition's parameters (and ``return``), as written."""
    try:
        tree = syntax.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError):
        return {}
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    if node is None:
        return {}
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    types = {a.arg: ast.unparse(a.annotation) for a in every if a is not None and a.annotation is not None}
    if node.returns is not None:
        types["return"] = ast.unparse(node.returns)
    return types


def _numpy(
    summary: str, entries: Sequence[tuple[str, str]], gives: tuple[str, str] | None, types: Mapping[str, str]
) -> list[str]:
    lines = [summary]
    if entries:
        lines += ["", "Parameters", "----------"]
        for name, text in entries:
            bare = name.lstrip("*")
            lines += [f"{name} : {types[bare]}" if bare in types else name, f"    {text}"]
    if gives is not None:
        kind, text = gives
        heading = kind.capitalize()
        lines += ["", heading, "-" * len(heading)]
        lines += [types["return"], f"    {text}"] if "return" in types else [text]
    return lines


def format_docstring(
    style: Style,
    summary: str,
    entries: Sequence[tuple[str, str]] = (),
    gives: tuple[str, str] | None = None,
    *,
    source: str = "",
) -> str:
    """The docstring of ``summary``, parameter ``entries`` (name as in the signature, ``*args``
    with its stars; text) and ``gives`` (``returns`` or ``yields``; text), in ``style``.
    ``source`` (the definition) gives numpy entries their types."""
    entries = [(name, text) for name, text in entries if text]
    if gives is not None and not gives[1]:
        gives = None
    if style == "plain":
        return summary
    if style == "numpy":
        return "\n".join(_numpy(summary, entries, gives, signature_types(source)))
    lines = [summary]
    if style == "sphinx":
        if entries or gives:
            lines.append("")
        lines += [f":param {name.lstrip('*')}: {text}" for name, text in entries]
        if gives is not None:
            lines.append(f":{gives[0]}: {gives[1]}")
        return "\n".join(lines)
    if entries:
        lines += ["", "Args:", *(f"    {name}: {text}" for name, text in entries)]
    if gives is not None:
        lines += ["", f"{gives[0].capitalize()}:", f"    {gives[1]}"]
    return "\n".join(lines)
