"""The growing cache layers against transformers' own, step by step, bit for bit."""

from __future__ import annotations

import copy
from typing import Any

import torch
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from structured_agents.engines.growing_cache import GrowingLayer, GrowingSlidingWindowLayer, growing_cache

WINDOW = 8


def _states(rows: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    shape = (rows, 2, length, 4)
    return torch.randn(shape, generator=generator), torch.randn(shape, generator=generator)


def _same(mine: Any, theirs: Any) -> None:
    for name in ("keys", "values"):
        assert torch.equal(getattr(mine, name), getattr(theirs, name)), name
    assert getattr(mine, "cumulative_length", None) == getattr(theirs, "cumulative_length", None)


def _pairs() -> list[tuple[Any, Any]]:
    return [
        (GrowingLayer(), DynamicLayer()),
        (GrowingSlidingWindowLayer(sliding_window=WINDOW), DynamicSlidingWindowLayer(sliding_window=WINDOW)),
    ]


def test_updates_return_and_keep_what_transformers_layers_do() -> None:
    """A prefill, then one token at a time far past the window and past the buffers' room,
    with the batch changing the stored tensors between steps as :mod:`.kv_batch` does."""
    for mine, theirs in _pairs():
        seed = 0
        for step in range(150):
            rows = 3 if step < 60 else 2
            length = 5 if step == 0 else 1
            keys, values = _states(rows, length, seed := seed + 1)
            got, want = mine.update(keys, values), theirs.update(keys, values)
            assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True)), step
            _same(mine, theirs)
            if step == 59:  # a row leaves: the batch selects the others
                for layer in (mine, theirs):
                    layer.keys, layer.values = layer.keys[[0, 2]], layer.values[[0, 2]]
            if step == 90:  # leading columns no row uses are cut
                for layer in (mine, theirs):
                    stored = min(layer.keys.shape[-2], 4)
                    layer.keys = layer.keys[:, :, -stored:]
                    layer.values = layer.values[:, :, -stored:]


def test_a_forked_layer_does_not_write_into_the_original() -> None:
    """A review forks the batch's layers (``copy.copy`` with rows selected): feeding the fork
    leaves what the original stores and returns next as it was."""
    for mine, theirs in _pairs():
        for seed in range(12):
            keys, values = _states(2, 1 if seed else 6, seed)
            mine.update(keys, values)
            theirs.update(keys, values)
        fork = copy.copy(mine)
        assert fork._room is not mine._room  # the fork's updates keep their own bookkeeping
        fork.keys, fork.values = mine.keys.index_select(0, torch.tensor([1])), mine.values[[1]]
        for seed in range(20, 30):
            fork.update(*_states(1, 1, seed))
        _same(mine, theirs)
        buffer = mine._room._keys
        keys, values = _states(2, 1, 99)
        got, want = mine.update(keys, values), theirs.update(keys, values)
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
        assert mine._room._keys is buffer  # no second move of the original's cache


def test_the_cache_has_a_growing_layer_where_transformers_makes_each_kind() -> None:
    from transformers import Gemma3TextConfig

    config = Gemma3TextConfig(
        num_hidden_layers=6, sliding_window=WINDOW, layer_types=["sliding_attention"] * 5 + ["full_attention"]
    )
    layers: list[Any] = growing_cache(config).layers
    assert [type(layer) for layer in layers] == [GrowingSlidingWindowLayer] * 5 + [GrowingLayer]
    assert all(layer.sliding_window == WINDOW for layer in layers[:5])
