"""Block-wise argmax and top-k give what torch's give, on every kind of row."""

from __future__ import annotations

import pytest
import torch

from structured_agents.engines.vocab_rank import BLOCK, _blocks, argmax_rows, topk_rows


def _rows(seed: int, rows: int = 5, width: int = 256 * BLOCK) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, width, generator=generator)


@pytest.mark.parametrize("seed", range(5))
def test_argmax_is_torchs_on_random_rows(seed: int) -> None:
    x = _rows(seed)
    assert torch.equal(argmax_rows(x), torch.argmax(x, dim=-1))


def test_argmax_takes_the_first_of_tied_maxima_across_blocks() -> None:
    x = torch.zeros(3, 8 * BLOCK)
    x[0, [5 * BLOCK + 3, BLOCK + 7, 7 * BLOCK]] = 2.0  # the first is in block 1
    x[1, [3, 2]] = 1.0  # within one block
    x[2] = float("-inf")  # nothing is larger than anything: id 0, as torch.argmax
    assert argmax_rows(x).tolist() == [BLOCK + 7, 2, 0]
    assert torch.equal(argmax_rows(x), torch.argmax(x, dim=-1))


def test_argmax_counts_nan_as_the_maximum_as_torch_does() -> None:
    x = _rows(7, rows=2)
    x[0, 3 * BLOCK + 1] = float("nan")
    x[1, [6 * BLOCK, 2 * BLOCK + 9]] = float("nan")
    assert argmax_rows(x).tolist() == torch.argmax(x, dim=-1).tolist() == [3 * BLOCK + 1, 2 * BLOCK + 9]


@pytest.mark.parametrize("k", [1, 8, 64])
@pytest.mark.parametrize("seed", range(3))
def test_topk_gives_torchs_values_and_ids_that_hold_them(seed: int, k: int) -> None:
    x = _rows(seed)
    assert _blocks(x, 2 * k) is not None  # the block path, not torch's own
    values, ids = topk_rows(x, k)
    top = torch.topk(x, k, dim=-1)
    assert torch.equal(values, top.values)
    assert torch.equal(x.gather(1, ids), values)
    assert all(len(set(row)) == k for row in ids.tolist())


def test_topk_finds_the_best_logits_crowded_into_one_block() -> None:
    """A block with many of the best logits: pooling by block maxima must still keep them all."""
    x = _rows(11, rows=1)
    x[0, 9 * BLOCK : 10 * BLOCK] = torch.linspace(10.0, 20.0, BLOCK)
    values, ids = topk_rows(x, 64)
    assert torch.equal(values, torch.topk(x, 64, dim=-1).values)
    assert sorted(ids[0].tolist()) == list(range(10 * BLOCK - 64, 10 * BLOCK))


def test_topk_with_ties_at_the_kth_value_keeps_the_values() -> None:
    x = torch.zeros(2, 16 * BLOCK)
    x[:, ::BLOCK] = 1.0  # 16 tied maxima, one per block
    values, ids = topk_rows(x, 8)
    assert torch.equal(values, torch.ones(2, 8))
    assert torch.equal(x.gather(1, ids), values)


@pytest.mark.parametrize("width", [BLOCK * 3 + 5, 100, 64 * BLOCK])
def test_rows_the_blocks_do_not_fit_take_torchs_own(width: int) -> None:
    """A width that is not a multiple of the block, or too few blocks for k: torch decides."""
    x = _rows(3, rows=2, width=width)
    assert torch.equal(argmax_rows(x), torch.argmax(x, dim=-1))
    k = min(64, width) if width != 64 * BLOCK else 40  # 64 blocks hold no 2 * 40 blocks
    values, ids = topk_rows(x, k)
    top = torch.topk(x, k, dim=-1)
    assert torch.equal(values, top.values)
    assert torch.equal(ids, top.indices)


@pytest.mark.parametrize("width", [256 * BLOCK, 100])
def test_topk_lists_equal_values_lowest_id_first(width: int) -> None:
    """Ties in the order argmax breaks them, on the block path and on torch's own."""
    x = torch.zeros(1, width)
    x[0, [90, 17, 60, 3]] = 1.0
    x[0, [70, 40]] = 2.0
    values, ids = topk_rows(x, 6)
    assert ids[0].tolist() == [40, 70, 3, 17, 60, 90]
    assert values[0].tolist() == [2.0, 2.0, 1.0, 1.0, 1.0, 1.0]
