"""The key/value cache of a batch whose rows join and leave between decode steps.

Rows are left-aligned to one global length ``G``: row ``b``'s tokens sit at the right end of
its attention-mask row, padding (mask 0) at the left. A new row (or a batch of them, prefilled
together in their own cache) joins by left-padding whichever side is shorter, layer by layer,
and concatenating along the batch dimension; rows that finish are selected away, and leading
columns that no remaining row uses are cut off, so a long prompt that has left stops costing
attention.

Layers: transformers' ``DynamicLayer`` (full attention, keeps every position) and
``DynamicSlidingWindowLayer`` (keeps the last ``sliding_window - 1`` positions and counts
``cumulative_length``, Gemma 3's local layers), or their :mod:`.growing_cache` versions, which
the engine's prefill makes (they append in place; tensors assigned to them move into a new
buffer on their next update). Both keep a suffix of the global positions, so
padding both sides to the longer stored length keeps every row's positions aligned. Any other
layer type is refused with an :class:`EngineError` naming it. Each row's rotary positions are
its own (``next_pos``), independent of the padding.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch

from structured_agents.errors import EngineError

__all__ = ["KVBatch", "fork_rows", "select_rows"]


def _left_pad(tensor: torch.Tensor, length: int, dim: int) -> torch.Tensor:
    missing = length - tensor.shape[dim]
    if missing <= 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


def select_rows(
    cache: Any, mask: torch.Tensor, next_pos: torch.Tensor, rows: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``rows`` (in that order; a row may repeat) of ``cache``, in place, and of its
    ``mask`` and ``next_pos``, returned."""
    index = torch.tensor(rows, device=mask.device)
    cache.batch_select_indices(index.to(cache.layers[0].keys.device))
    return mask[index], next_pos[index]


def fork_rows(
    cache: Any, mask: torch.Tensor, next_pos: torch.Tensor, rows: Sequence[int]
) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """A cache of ``rows`` alone (with their mask and next positions) that can be fed without
    changing ``cache``: its layers are copies holding those rows' tensors."""
    index = torch.tensor(list(rows), device=mask.device)
    forked_cache = copy.copy(cache)
    forked_cache.layers = []
    for layer in cache.layers:
        forked = copy.copy(layer)
        forked.keys = layer.keys.index_select(0, index.to(layer.keys.device))
        forked.values = layer.values.index_select(0, index.to(layer.values.device))
        forked_cache.layers.append(forked)
    return forked_cache, mask[index], next_pos[index]


def _check_layers(cache: Any) -> None:
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    from structured_agents.engines.growing_cache import GrowingLayer, GrowingSlidingWindowLayer

    known = (DynamicLayer, DynamicSlidingWindowLayer, GrowingLayer, GrowingSlidingWindowLayer)
    for layer in cache.layers:
        if type(layer) not in known:
            raise EngineError(
                f"continuous batching joins DynamicLayer and DynamicSlidingWindowLayer caches, "
                f"this model's cache has a {type(layer).__name__}"
            )


class KVBatch:
    """The cache, attention mask and next positions of the rows being decoded, in row order."""

    def __init__(self) -> None:
        self.cache: Any = None
        """The transformers ``DynamicCache`` of all rows (None while the batch is empty)."""
        self.mask = torch.zeros((0, 0), dtype=torch.long)
        """``[rows, G]``: 1 where a row has a token."""
        self.next_pos = torch.zeros((0, 1), dtype=torch.long)
        """``[rows, 1]``: each row's rotary position for its next token."""

    def __len__(self) -> int:
        return int(self.mask.shape[0])

    def join(self, cache: Any, mask: torch.Tensor, next_pos: torch.Tensor) -> None:
        """Append rows prefilled together in ``cache`` (with their ``mask`` and ``next_pos``)."""
        _check_layers(cache)
        if self.cache is None or not len(self):
            self.cache, self.mask, self.next_pos = cache, mask, next_pos
            return
        width = max(self.mask.shape[1], mask.shape[1])
        self.mask = torch.cat([_left_pad(self.mask, width, 1), _left_pad(mask, width, 1)])
        self.next_pos = torch.cat([self.next_pos, next_pos])
        for mine, theirs in zip(self.cache.layers, cache.layers, strict=True):
            stored = max(mine.keys.shape[-2], theirs.keys.shape[-2])
            mine.keys = torch.cat([_left_pad(mine.keys, stored, 2), _left_pad(theirs.keys, stored, 2)])
            mine.values = torch.cat([_left_pad(mine.values, stored, 2), _left_pad(theirs.values, stored, 2)])
            if hasattr(mine, "cumulative_length"):
                mine.cumulative_length = width

    def keep(self, rows: list[int]) -> None:
        """Keep only ``rows`` (in that order), then cut the leading columns none of them uses."""
        if len(rows) == len(self):
            return
        if not rows:
            self.__init__()  # type: ignore[misc]
            return
        self.mask, self.next_pos = select_rows(self.cache, self.mask, self.next_pos, rows)
        used = self.mask.any(dim=0).nonzero()
        unused = int(used[0]) if used.numel() else 0
        if unused:
            self.mask = self.mask[:, unused:]
            width = self.mask.shape[1]
            for layer in self.cache.layers:
                stored = min(layer.keys.shape[-2], width)
                layer.keys, layer.values = layer.keys[:, :, -stored:], layer.values[:, :, -stored:]
                if hasattr(layer, "cumulative_length"):
                    layer.cumulative_length = width

    def fork(self, rows: Sequence[int]) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """:func:`fork_rows` of this batch."""
        return fork_rows(self.cache, self.mask, self.next_pos, rows)

    def grow(self) -> None:
        """Open one more column for the tokens about to be fed (before a decode forward)."""
        self.mask = torch.cat([self.mask, self.mask.new_ones((len(self), 1))], dim=1)

    def advance(self) -> None:
        """After a decode forward: every row's next position moves on by one."""
        self.next_pos = self.next_pos + 1
