"""KVBatch: a row that joins a running batch mid-flight, or sees others leave, decodes as it would alone.

A tiny randomly initialised Gemma 3 (full and sliding-window layers, a window of 4 so the
sliding layers wrap) is fed fixed tokens; every row's logits in the shared batch must equal
its logits decoded alone, up to float noise.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers
from engines.tiny_gemma import tiny_gemma

from structured_agents.engines.kv_batch import KVBatch
from structured_agents.engines.transformers_engine import cache_kwarg
from structured_agents.errors import EngineError


@pytest.fixture(scope="module")
def model() -> Any:
    return tiny_gemma()


def _forward(model: Any, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any) -> Any:
    with torch.inference_mode():
        out = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            **{cache_kwarg(model): cache},  # the engine's own choice of name
        )
    return out.logits[:, -1, :]


def _prefill(model: Any, prompt: list[int]) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
    cache = transformers.DynamicCache(config=model.config)
    ids = torch.tensor([prompt])
    mask = torch.ones_like(ids)
    positions = torch.arange(len(prompt)).unsqueeze(0)
    return _forward(model, ids, mask, positions, cache), cache, mask, positions[:, -1:] + 1


def _alone(model: Any, prompt: list[int], fed: list[int]) -> list[torch.Tensor]:
    """The logits before each fed token, decoding the row alone."""
    batch = KVBatch()
    logits, *state = _prefill(model, prompt)
    batch.join(*state)
    seen = [logits[0]]
    for token in fed:
        seen.append(_step(model, batch, [token])[0])
    return seen


def _step(model: Any, batch: KVBatch, tokens: list[int]) -> torch.Tensor:
    batch.grow()
    logits = _forward(model, torch.tensor(tokens).unsqueeze(1), batch.mask, batch.next_pos, batch.cache)
    batch.advance()
    return logits


def test_rows_that_join_and_leave_decode_as_they_would_alone(model: Any) -> None:
    long_prompt, short_prompt, late_prompt = list(range(1, 10)), [7, 3, 5], [11, 12, 13, 14, 15, 16, 17]
    fed = [21, 22, 23, 24, 25, 26, 27, 28, 29, 30]
    long_alone = _alone(model, long_prompt, fed)
    short_alone = _alone(model, short_prompt, fed)
    late_alone = _alone(model, late_prompt, fed)

    batch = KVBatch()
    logits, *state = _prefill(model, short_prompt)
    batch.join(*state)
    torch.testing.assert_close(logits[0], short_alone[0])
    logits = _step(model, batch, fed[:1])  # the short row runs one step alone
    torch.testing.assert_close(logits[0], short_alone[1])

    joined, *state = _prefill(model, long_prompt)  # a longer prompt joins: the batch is padded
    torch.testing.assert_close(joined[0], long_alone[0])
    batch.join(*state)
    logits = _step(model, batch, [fed[1], fed[0]])
    torch.testing.assert_close(logits[0], short_alone[2])
    torch.testing.assert_close(logits[1], long_alone[1])
    for i in range(2, 5):  # past the sliding window together
        logits = _step(model, batch, [fed[i], fed[i - 1]])
        torch.testing.assert_close(logits[0], short_alone[i + 1])
        torch.testing.assert_close(logits[1], long_alone[i])

    width = batch.mask.shape[1]
    batch.keep([0])  # the long row leaves: its unused leading columns are cut
    assert len(batch) == 1 and batch.mask.shape[1] < width and bool(batch.mask.all())
    late, *state = _prefill(model, late_prompt)  # and a third row joins the short one
    batch.join(*state)
    torch.testing.assert_close(late[0], late_alone[0])
    for i in range(5, 9):
        logits = _step(model, batch, [fed[i], fed[i - 5]])
        torch.testing.assert_close(logits[0], short_alone[i + 1])
        torch.testing.assert_close(logits[1], late_alone[i - 4])

    batch.keep([])
    assert len(batch) == 0 and batch.cache is None


def test_a_cache_of_another_kind_is_refused(model: Any) -> None:
    cache = transformers.StaticCache(config=model.config, max_cache_len=16)
    with pytest.raises(EngineError, match="StaticSlidingWindowLayer"):
        KVBatch().join(cache, torch.ones((1, 2), dtype=torch.long), torch.ones((1, 1), dtype=torch.long))
