"""The words a written docstring leaked from the bundle's prompt rather than took from the code
it documents: the words :mod:`structured_agents.borrowed` defines, the bundle's fixed texts read
from the loaded bundle (:func:`~structured_agents.bundles.echoes.shown_texts`). The docstring
task bans the same words at decode time; a leaked word is one that got through anyway.
"""

from __future__ import annotations

from structured_agents.borrowed import borrowed_words, vocabulary
from structured_agents.bundles import Bundle
from structured_agents.bundles.echoes import shown_texts

__all__ = ["bundle_texts", "bundle_vocabulary", "leaked_words"]


def bundle_texts(bundle: Bundle) -> list[str]:
    """The bundle's fixed text: its examples (tasks, calls, results), its prompts without the
    Jinja tags, and its tools' and their arguments' descriptions (connect an MCP bundle first)."""
    context = bundle.manifest.initial_context
    return shown_texts(context, bundle.directory, bundle.examples, bundle.tools.tools())


def bundle_vocabulary(bundle: Bundle) -> frozenset[str]:
    """The words of :func:`bundle_texts`."""
    return vocabulary(bundle_texts(bundle))


def leaked_words(docstring: str, file_text: str, fixed: frozenset[str]) -> list[str]:
    """The words of ``docstring`` that are in ``fixed`` but not in ``file_text``, sorted."""
    return borrowed_words(docstring, file_text, fixed)
