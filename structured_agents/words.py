"""Words of prose and code, the one tokenizer of the package: identifiers split
(``snake_case``, ``camelCase``, ``HTTPServer``), lowercased, three letters or more.

:func:`words` also stems lightly, so ``formatExponent`` and "formats the exponent" share
``format`` and ``exponent``; :func:`content_words` leaves out the words too common to say
where a text came from (:data:`STOP_WORDS`); :func:`word_grams` gives the runs of consecutive
words a copy keeps. :func:`plain_words` are the words as written, less the words any docstring
may use (:data:`DOCSTRING_WORDS`): what :mod:`structured_agents.borrowed` compares.
"""

from __future__ import annotations

import re

__all__ = ["DOCSTRING_WORDS", "GRAM", "STOP_WORDS", "content_words", "plain_words", "word_grams", "words"]

STOP_WORDS = frozenset(
    (  # noqa: SIM905 (a word list reads best as words)
        "the and for with from that this into onto its are was were has have had not but all any can "
        "may will one two each per via than then when where which while who whom whose what how why "
        "return returns returned yield yields given give gives use used uses using get gets set sets "
        "new none true false value values object objects list lists string strings number numbers "
        "also only more most some such other same out off over under about after before"
    ).split()
)
"""Words too common in docstrings to say where a text came from."""
DOCSTRING_WORDS = frozenset(
    (  # noqa: SIM905 (a word list reads best as words)
        "the and for with this that from are was were not but all any can has have had its into "
        "one two may will when which who what where than then them they their there these those "
        "also only each other such some more most does did should would could been being over "
        "under after before about here how out you your via per etc our "
        "args arg arguments argument param params parameter parameters returns return rtype raises "
        "raise yields yield note notes example examples attributes attribute keyword optional "
        "default none true false self cls"
    ).split()
)
"""English function words and docstring section words: every docstring may use them."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
GRAM = 4
"""A copied run is this many words long."""


def _stem(word: str) -> str:
    """A light stem: plural and verb endings and a final ``e`` cut, a doubled consonant undone
    (``values``, ``valued`` -> ``valu``; ``formatted``, ``formats`` -> ``format``)."""
    for suffixes in (("ies", "es", "s"), ("ing", "ed")):  # a plural first, then a verb ending
        for suffix in suffixes:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
                word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
                break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


_STOPPED = frozenset(_stem(word) for word in STOP_WORDS)


def _parts(text: str) -> list[str]:
    """The words of ``text`` as written: identifiers split, lowercased, three letters or more."""
    found = []
    for token in _WORD.findall(text):
        for part in _CAMEL.findall(token) or [token]:
            if len(part) >= 3:
                found.append(part.lower())
    return found


def words(text: str) -> list[str]:
    """The words of ``text`` (see the module docstring), stemmed lightly (:func:`_stem`), so
    that forms of one word compare equal."""
    return [_stem(part) for part in _parts(text)]


def plain_words(text: str) -> set[str]:
    """The words of ``text`` as written, less :data:`DOCSTRING_WORDS`."""
    return {part for part in _parts(text) if part not in DOCSTRING_WORDS}


def word_grams(text: str, size: int = GRAM) -> set[tuple[str, ...]]:
    """The runs of ``size`` consecutive words of ``text`` (every word kept, stop words too)."""
    sequence = [word.lower() for word in _WORD.findall(text)]
    return {tuple(sequence[i : i + size]) for i in range(len(sequence) - size + 1)}


def content_words(text: str) -> list[str]:
    """:func:`words` without the stop words."""
    return [word for word in words(text) if word not in _STOPPED]
