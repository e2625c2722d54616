"""ROUGE-L: how much of a reference sentence a candidate says, in order (Lin, 2004).

F1 of precision and recall of the longest common subsequence of word tokens (lowercased runs
of letters and digits; punctuation and underscores split words). A dozen lines, so written
here: the ``rouge-score`` package would bring nltk and absl for the same arithmetic.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence

__all__ = ["first_line", "lcs_length", "rouge_l", "tokens"]

_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """The lowercased word tokens of ``text``."""
    return _TOKEN.findall(text.lower())


def first_line(docstring: str) -> str:
    """The first non-blank line of a docstring, cleaned as ``inspect.cleandoc`` does."""
    return next((line.strip() for line in inspect.cleandoc(docstring).splitlines() if line.strip()), "")


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (one row of the table at a time)."""
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if item == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 of ``candidate`` against ``reference`` (0.0 when either has no word)."""
    cand, ref = tokens(candidate), tokens(reference)
    common = lcs_length(cand, ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)
