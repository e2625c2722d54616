"""A static key/value cache with one slot per batch row: the GPU decode loop's cache.

:class:`~.kv_batch.KVBatch` grows and cuts tensors as rows join and leave, so every decode
step has new shapes and a new set of kernel launches; a captured CUDA graph needs the same
addresses every time. :class:`SlotCache` allocates once: for every layer, keys and values of
``slots`` rows of ``capacity`` positions (one tensor, ``[2, layers, slots, kv_heads, capacity,
head_dim]``). The live rows are always slots ``0 .. rows - 1``: row ``k`` of the batch is slot
``k``, its token at position ``p`` is stored at position ``p`` of its slot (no padding, so a
row's rotary position is its slot position), and the step attends to each row's positions
``<= p`` (sliding layers: the last ``sliding_window`` of them).

* :meth:`~.graph_step.GraphStep.prefill` writes prompts' keys and values into their slots.
* :meth:`move` copies slots into others (rows that leave are replaced by the last rows, so only
  the moved rows are copied).
* :meth:`fork` rebuilds a ``DynamicCache`` of some slots, left padded as a prefill would have
  left it, for the review scoring of :mod:`.review` (which decodes through the model).

Positions past a row's length hold stale but finite values (the buffer starts zeroed): the
attention masks them out, and a masked ``NaN`` would still spoil the softmax.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from structured_agents.engines.host_copy import on_device

__all__ = ["SlotCache"]


class SlotCache:
    """Keys and values of ``slots`` rows of up to ``capacity`` positions, for every layer."""

    def __init__(
        self, config: Any, *, slots: int, capacity: int, device: torch.device, dtype: torch.dtype
    ) -> None:
        self.slots = slots
        self.capacity = capacity
        self.layers = int(config.num_hidden_layers)
        self.window = int(getattr(config, "sliding_window", None) or capacity)
        self.kinds: list[str] = list(getattr(config, "layer_types", None) or ["full_attention"] * self.layers)
        heads = int(config.num_key_value_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        shape = (2, self.layers, slots + 1, heads, capacity, head_dim)
        self.kv = torch.zeros(shape, device=device, dtype=dtype)
        """``kv[0, layer]`` the keys, ``kv[1, layer]`` the values, each ``[slots + 1, heads, capacity,
        dim]``: the last, :attr:`scratch`, is no row's."""
        self.scratch = slots
        """The slot a captured prefill's padding rows write to (a graph's rows are a bucket's)."""

    @staticmethod
    def bytes_per_position(config: Any, dtype: torch.dtype) -> int:
        """What one position of one slot costs, over every layer's keys and values."""
        heads = int(config.num_key_value_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        return (
            2 * int(config.num_hidden_layers) * heads * head_dim * torch.empty((), dtype=dtype).element_size()
        )

    def move(self, sources: Sequence[int], targets: Sequence[int], length: int) -> None:
        """Copy slots ``sources`` into slots ``targets`` (disjoint), their first ``length`` positions."""
        if not sources:
            return
        device = self.kv.device
        source = on_device(list(sources), device, torch.long)
        target = on_device(list(targets), device, torch.long)
        self.kv[:, :, target, :, :length] = self.kv[:, :, source, :, :length]

    def fork(
        self, slots: Sequence[int], lengths: Sequence[int], config: Any
    ) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """A ``DynamicCache`` of ``slots`` (holding ``lengths`` tokens), left padded to the longest,
        with its attention mask and next positions on the host, as :func:`~.kv_batch.fork_rows`
        gives them (:mod:`.review` builds on them with host tensors)."""
        from transformers import DynamicCache

        device = self.kv.device
        width = max(lengths)
        pad = on_device([width - length for length in lengths], device, torch.long).unsqueeze(1)
        source = (torch.arange(width, device=device).unsqueeze(0) - pad).clamp(min=0)  # [rows, width]
        index = on_device(list(slots), device, torch.long)
        mask = (
            torch.arange(width).unsqueeze(0) >= torch.tensor([width - n for n in lengths]).unsqueeze(1)
        ).long()
        cache: Any = DynamicCache(config=config)
        for layer in range(self.layers):
            keys, values = (
                self.kv[part, layer, index].gather(
                    2, source[:, None, :, None].expand(-1, self.kv.shape[3], -1, self.kv.shape[-1])
                )
                for part in (0, 1)
            )
            cache.layers[layer].update(keys, values)
        next_pos = torch.tensor([[length] for length in lengths])
        return cache, mask, next_pos
