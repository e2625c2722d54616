"""The packed SDPA attention: a single-token CPU query's heads packed onto their key/value head
with or without a mask, everything else exactly transformers' ``sdpa``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from structured_agents.engines.packed_attention import NAME, packed_sdpa_forward, use_packed_attention


def _qkv(queries: int, keys: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(2, 4, queries, 32, generator=generator).to(torch.bfloat16)
    key = torch.randn(2, 1, keys, 32, generator=generator).to(torch.bfloat16)
    value = torch.randn(2, 1, keys, 32, generator=generator).to(torch.bfloat16)
    return query, key, value


_MODULE = SimpleNamespace(num_key_value_groups=4, is_causal=True)


@pytest.mark.parametrize("keys", [7, 40, 700])
def test_an_unmasked_decode_query_gets_the_bits_of_transformers_masked_packed_path(keys: int) -> None:
    """Without a mask transformers would take SDPA's grouped-query path; with a mask that hides
    nothing it packs the heads, and that is what this attention computes without one."""
    query, key, value = _qkv(1, keys)
    ours, _ = packed_sdpa_forward(_MODULE, query, key, value, None, scaling=0.17)
    everything = torch.ones(2, 1, 1, keys, dtype=torch.bool)
    packed, _ = sdpa_attention_forward(_MODULE, query, key, value, everything, scaling=0.17)
    grouped, _ = sdpa_attention_forward(_MODULE, query, key, value, None, scaling=0.17)
    assert ours.shape == grouped.shape == (2, 1, 4, 32)
    assert torch.equal(ours, packed)
    torch.testing.assert_close(ours, grouped)  # the same attention, rounded its own way


def test_prefills_and_masked_steps_are_transformers_own() -> None:
    query, key, value = _qkv(5, 5)
    ours, _ = packed_sdpa_forward(_MODULE, query, key, value, None, scaling=0.17)
    theirs, _ = sdpa_attention_forward(_MODULE, query, key, value, None, scaling=0.17)
    assert torch.equal(ours, theirs)
    query, key, value = _qkv(1, 9)
    mask = torch.ones(2, 1, 1, 9, dtype=torch.bool)
    mask[0, ..., :3] = False
    ours, _ = packed_sdpa_forward(_MODULE, query, key, value, mask, scaling=0.17)
    theirs, _ = sdpa_attention_forward(_MODULE, query, key, value, mask, scaling=0.17)
    assert torch.equal(ours, theirs)


def test_only_a_cpu_model_with_sdpa_attention_is_switched() -> None:
    def model(device: str, attention: str, *, switches: bool = True) -> SimpleNamespace:
        config = SimpleNamespace(_attn_implementation=attention)
        switched: list[str] = []

        def switch(name: str) -> None:
            switched.append(name)
            if switches:  # transformers only warns where a model's attention cannot switch
                config._attn_implementation = name

        return SimpleNamespace(
            device=torch.device(device), config=config, set_attn_implementation=switch, switched=switched
        )

    eager, gpu, cpu = model("cpu", "eager"), model("meta", "sdpa"), model("cpu", "sdpa")
    assert not use_packed_attention(eager) and not use_packed_attention(gpu)
    assert use_packed_attention(cpu) and cpu.switched == [NAME]
    assert eager.switched == gpu.switched == []
    stuck = model("cpu", "sdpa", switches=False)
    assert not use_packed_attention(stuck) and stuck.config._attn_implementation == "sdpa"


def test_a_llama_with_grouped_queries_decodes_as_under_transformers_sdpa() -> None:
    """Any CPU model the engine loads gets the packed attention: a small random Llama with 4
    query heads per key/value head gives transformers' ``sdpa`` logits (within rounding) on
    an unmasked decode step, and the same greedy tokens over 12 steps."""
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        attn_implementation="sdpa",
    )
    models = [LlamaForCausalLM(config).eval() for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    assert use_packed_attention(models[1]) and not use_packed_attention(models[0])
    tokens = [[3, 14, 15, 92, 65, 35]]
    caches = [DynamicCache(config=config) for _ in models]
    with torch.inference_mode():
        fed = torch.tensor(tokens)
        for _ in range(12):
            outs = [
                m(input_ids=fed, cache=c, use_cache=True).logits[:, -1]
                for m, c in zip(models, caches, strict=True)
            ]
            torch.testing.assert_close(outs[1], outs[0])
            nxt = [int(out.argmax(-1)) for out in outs]
            assert nxt[0] == nxt[1]
            fed = torch.tensor([[nxt[0]]])
    assert [cache.get_seq_length() for cache in caches] == [6 + 11] * 2  # decoded with the cache
