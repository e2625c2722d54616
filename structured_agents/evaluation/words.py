"""Words a docstring borrowed from the bundle's prompt rather than from the code it documents.

A small model copies what it is shown: "Add a number to the stack." for a function that formats
numbers. A written docstring *leaks* when it carries a word (lowercased, three letters or more,
camelCase and snake_case split, minus :data:`STOP_WORDS`) that stands in the bundle's fixed
text (its worked examples, prompt files and tool descriptions, read from the loaded bundle)
but nowhere in the target's file as its author wrote it, docstrings included.
"""

from __future__ import annotations

import re

from structured_agents.bundles import Bundle
from structured_agents.bundles.echoes import string_values

__all__ = ["STOP_WORDS", "bundle_texts", "bundle_vocabulary", "leaked_words", "words"]

_STOP_TEXT = """
    the and for with this that from are was were not but all any can has have had its into
    one two may will when which who what where than then them they their there these those
    also only each other such some more most does did should would could been being over
    under after before about here how out you your via per etc our its it's
    args arg arguments argument param params parameter parameters returns return rtype raises
    raise yields yield note notes example examples attributes attribute keyword optional
    default none true false self cls
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
"""English function words and docstring section words: every docstring may use them."""

_WORD = re.compile(r"[A-Za-z]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)


def words(text: str) -> set[str]:
    """The words of ``text`` that count (see the module docstring)."""
    found = (word.lower() for word in _WORD.findall(_CAMEL.sub(" ", text)))
    return {word for word in found if len(word) >= 3 and word not in STOP_WORDS}


def bundle_texts(bundle: Bundle) -> list[str]:
    """The bundle's fixed text: its examples (tasks, calls, results), its prompts without the
    Jinja tags, and its tools' and their arguments' descriptions (connect an MCP bundle first)."""
    texts: list[str] = []
    for example in bundle.examples:
        texts.append(example.user)
        texts += [text for call in example.calls for text in string_values(call.arguments)]
        texts.append(example.result)
    context = bundle.manifest.initial_context
    for inline, file in (
        (context.system_prompt, context.system_prompt_file),
        (context.user_template, context.user_template_file),
    ):
        text = (bundle.directory / file).read_text(encoding="utf-8") if file is not None else inline
        texts.append(_JINJA.sub(" ", text))
    for schema in bundle.tools.tools():
        texts.append(schema.description)
        texts += [str(spec.get("description", "")) for spec in schema.properties.values()]
    return texts


def bundle_vocabulary(bundle: Bundle) -> frozenset[str]:
    """The words of :func:`bundle_texts`."""
    return frozenset(word for text in bundle_texts(bundle) for word in words(text))


def leaked_words(docstring: str, file_text: str, vocabulary: frozenset[str]) -> list[str]:
    """The words of ``docstring`` that are in ``vocabulary`` but not in ``file_text``, sorted."""
    return sorted((words(docstring) & vocabulary) - words(file_text))
