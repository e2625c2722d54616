"""``SamplingParams.bad_words`` for the transformers engine, as vLLM implements them.

Each banned text becomes token sequences (:func:`bad_word_ids`): the text as the tokenizer splits
it alone, and with a leading space (mid-sentence); a text given with a leading space is banned
mid-sentence only (the kernel bans a word the call syntax writes that way: ``kernel/bans.py``).
At every step :func:`ban_bad_words` sets to ``-inf`` the token that would complete one of
them: the last token of a sequence whose other tokens the row has just generated (a one-token
sequence is banned outright). vLLM's
``NoBadWordsLogitsProcessor`` does the same, so a text the model has split otherwise (a
different tokenization of the same characters) is not caught; the bundles' own copy checks
(:mod:`structured_agents.bundles.echoes`) still refuse it after the turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from structured_agents.engines.host_copy import on_device

__all__ = ["bad_word_ids", "ban_bad_words"]

Encode = Callable[[str], list[int]]
"""A text's token ids, without the special tokens a tokenizer adds to a prompt."""


def bad_word_ids(words: Sequence[str], encode: Encode) -> tuple[tuple[int, ...], ...]:
    """The token sequences that spell ``words``: each as it starts a text and after a space,
    or only after a space for a word given with a leading space."""
    sequences: dict[tuple[int, ...], None] = {}
    for word in words:
        spaced = " " + word.lstrip()
        for variant in (spaced,) if word.startswith(" ") else (word.lstrip(), spaced):
            ids = tuple(encode(variant))
            if ids:
                sequences[ids] = None
    return tuple(sequences)


def ban_bad_words(
    logits: torch.Tensor, generated: Sequence[Sequence[int]], banned: Sequence[Sequence[tuple[int, ...]]]
) -> None:
    """Set to ``-inf``, in place, each row's tokens that would complete one of its ``banned``
    sequences given the tokens it ``generated`` so far (rows are those of ``logits``)."""
    rows: list[int] = []
    ids: list[int] = []
    width = logits.shape[-1]
    for k, (tokens, sequences) in enumerate(zip(generated, banned, strict=True)):
        for sequence in sequences:
            prefix = sequence[:-1]
            if sequence[-1] < width and (
                not prefix or (len(tokens) >= len(prefix) and tuple(tokens[-len(prefix) :]) == prefix)
            ):
                rows.append(k)
                ids.append(sequence[-1])
    if rows:
        index = on_device([rows, ids], logits.device, torch.long)
        logits[index[0], index[1]] = float("-inf")
