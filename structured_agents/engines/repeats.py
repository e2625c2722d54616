"""``SamplingParams.no_repeat_ngram_size`` for the transformers engine.

At every step, each row whose last ``n - 1`` tokens already stood earlier in its output has
the tokens that followed them there pushed down by :data:`REPEAT_PENALTY` (not to ``-inf``: a
grammar that allows nothing else, such as the forced markup between a docstring's sections,
still gets its token, while anything else it allows is taken first).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from structured_agents.engines.host_copy import on_device

__all__ = ["REPEAT_PENALTY", "ban_repeats", "repeated_next"]

REPEAT_PENALTY = 1.0e4
"""Subtracted from the logit of a token that would repeat a run."""


def repeated_next(tokens: Sequence[int], size: int) -> set[int]:
    """The tokens that would complete a run of ``size`` tokens ``tokens`` already holds."""
    if size < 1 or len(tokens) < size - 1:
        return set()
    if size == 1:
        return set(tokens)
    prefix = tuple(tokens[len(tokens) - size + 1 :])
    found = set()
    for start in range(len(tokens) - size + 1):
        if tuple(tokens[start : start + size - 1]) == prefix:
            found.add(tokens[start + size - 1])
    return found


def ban_repeats(logits: torch.Tensor, generated: Sequence[Sequence[int]], sizes: Sequence[int]) -> None:
    """Push down, in place, each row's tokens that would repeat a run of ``sizes[k]`` tokens
    of what it ``generated`` (rows are those of ``logits``; a size of 0 leaves the row alone)."""
    rows: list[int] = []
    ids: list[int] = []
    width = logits.shape[-1]
    for k, (tokens, size) in enumerate(zip(generated, sizes, strict=True)):
        if size:
            for token in repeated_next(tokens, size):
                if token < width:
                    rows.append(k)
                    ids.append(token)
    if rows:
        index = on_device([rows, ids], logits.device, torch.long)
        logits.index_put_(
            (index[0], index[1]),
            torch.full((len(rows),), -REPEAT_PENALTY, dtype=logits.dtype, device=logits.device),
            accumulate=True,
        )
