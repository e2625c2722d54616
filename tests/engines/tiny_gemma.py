"""A tiny randomly initialised Gemma 3: full and sliding-window layers, a window of 4 so the
sliding layers wrap within a few tokens (the cache tests' model)."""

from __future__ import annotations

from typing import Any

import torch
import transformers


def tiny_gemma() -> Any:
    """The model, in eval mode, the same weights every call."""
    torch.manual_seed(0)
    config = transformers.Gemma3TextConfig(
        vocab_size=50,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        max_position_embeddings=128,
    )
    return transformers.Gemma3ForCausalLM(config).eval()
