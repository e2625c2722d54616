"""Reviewer scores of the transformers engine: how likely a text is after a row's output.

A request with a :class:`~structured_agents.kernel.engine.Review` gets two kinds of score,
both the summed log likelihood of the review text's tokens:

* its **baseline**, once per distinct prompt, right after the prompt's prefill: the review text
  after the prompt and :attr:`Review.empty`;
* each candidate's **score**, when its row ends on its grammar or a stop: the review text after
  the prompt and the candidate's own tokens.

Both continue a row's key/value cache instead of reading the prompt again:
:func:`score_continuations` forks the rows' caches (:meth:`KVBatch.fork
<structured_agents.engines.kv_batch.KVBatch.fork>`, the batch's cache is left as it is), feeds
each row's sequence in one forward pass (right-padded to the longest), and reads each scored
token's log probability from the final hidden states, a slice of positions at a time through
the LM head (the full ``[rows, tokens, vocabulary]`` logits of a 262k-token vocabulary would
take gigabytes). The first token is scored from the logits the row already has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch

__all__ = ["MAX_REVIEW_TOKENS", "ReviewModel", "score_continuations"]

MAX_REVIEW_TOKENS = 192
"""Most tokens of a review text that are scored (the rest is cut): each costs a position of
every candidate's scoring pass."""
_SLICE = 64
"""Positions sent through the LM head at once."""


class ReviewModel(Protocol):
    """What scoring needs of the engine: its model's hidden states and LM head."""

    pad_token_id: int

    def hidden(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> torch.Tensor:
        """The final hidden states of every position of ``ids``."""
        ...

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Float32 logits of ``hidden`` states."""
        ...


def _logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


@torch.inference_mode()
def score_continuations(
    model: ReviewModel,
    fork: tuple[Any, torch.Tensor, torch.Tensor],
    first_logits: torch.Tensor,
    sequences: Sequence[Sequence[int]],
    scored: Sequence[int],
) -> list[float]:
    """For each row of ``fork`` (``(cache, mask, next_pos)`` of the rows, in order): the summed
    log probability of the last ``scored[i]`` tokens of ``sequences[i]``, fed after what the
    row's cache holds; ``first_logits[i]`` are the row's logits for its sequence's first token."""
    cache, mask, next_pos = fork
    rows = len(sequences)
    totals = [0.0] * rows
    firsts = torch.tensor([seq[0] for seq in sequences], device=first_logits.device)
    first = _logprobs(first_logits, firsts).tolist()
    for i, seq in enumerate(sequences):
        if scored[i] >= len(seq):
            totals[i] += first[i]
    width = max(len(seq) for seq in sequences) - 1
    if width <= 0:
        return totals
    ids = torch.full((rows, width), model.pad_token_id, dtype=torch.long)
    targets = torch.zeros((rows, width), dtype=torch.long)
    weights = torch.zeros((rows, width))
    for i, seq in enumerate(sequences):
        fed = list(seq[:-1])
        ids[i, : len(fed)] = torch.tensor(fed, dtype=torch.long)
        targets[i, : len(fed)] = torch.tensor(seq[1:], dtype=torch.long)
        start = len(seq) - min(scored[i], len(seq))  # the first scored token's index in seq
        weights[i, max(start - 1, 0) : len(fed)] = 1.0
    full_mask = torch.cat([mask, mask.new_ones((rows, width))], dim=1)
    positions = next_pos + torch.arange(width).unsqueeze(0)
    hidden = model.hidden(ids, full_mask, positions, cache)
    for start in range(0, width, _SLICE):
        part = slice(start, start + _SLICE)
        logits = model.head(hidden[:, part, :])
        values = _logprobs(logits, targets[:, part].to(logits.device)).cpu() * weights[:, part]
        for i, value in enumerate(values.sum(dim=1).tolist()):
            totals[i] += value
    return totals
