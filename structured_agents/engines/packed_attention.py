"""SDPA attention whose single-token queries on CPU always pack their heads onto the key/value
heads they share.

transformers' ``sdpa`` attention packs a decode step's query heads onto their key/value head
(``[rows, heads, 1, dim]`` as ``[rows, kv_heads, heads / kv_heads, dim]``, its ``pack_gqa``) only
where the step has an attention mask; without one (a row with no padding, before the sliding
window) it passes ``enable_gqa=True``, and torch's CPU flash kernel then takes 6 times longer:
69.5 against 11.4 us a call for Gemma 3 270M at batch 1 and 100 keys (4 query heads on 1
key/value head), about 1 ms of an 13 ms decode step over 18 layers. :data:`NAME` is transformers'
``sdpa`` with that one path changed; :func:`use_packed_attention` sets a CPU model to it. The
model's forward and :class:`~.lean_step.LeanStep` then run the same attention, which the lean
step's bit-for-bit model test holds them to; prefills (several query tokens) are unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["NAME", "packed_sdpa_forward", "use_packed_attention"]

NAME = "sa_packed_sdpa"
"""The attention implementation's name, as ``config._attn_implementation`` carries it."""


def packed_sdpa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' ``sdpa_attention_forward``, except that a single-token query on CPU
    without a mask packs its heads, as that function does where there is a mask."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = int(getattr(module, "num_key_value_groups", 1))
    plain = kwargs.get("softcap") is None and kwargs.get("position_bias") is None
    single = query.shape[2] == 1 and groups > 1 and query.device.type == "cpu"
    if attention_mask is not None or not single or not plain:
        out: tuple[torch.Tensor, None] = sdpa_attention_forward(
            module, query, key, value, attention_mask, **kwargs
        )
        return out
    rows, heads, _, dim = query.shape
    attended = F.scaled_dot_product_attention(
        query.reshape(rows, heads // groups, groups, dim),  # transformers' pack_gqa
        key,
        value,
        dropout_p=float(kwargs.get("dropout", 0.0)),
        scale=kwargs.get("scaling"),
    )
    return attended.reshape(rows, heads, 1, dim).transpose(1, 2).contiguous(), None


def use_packed_attention(model: Any) -> bool:
    """Set ``model`` (on CPU, with ``sdpa`` attention) to :data:`NAME`; False, unchanged, for
    any other model, or one whose attention transformers cannot switch (it warns)."""
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    from transformers.modeling_utils import AttentionInterface

    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa" or model.device.type != "cpu":
        return False
    AttentionInterface.register(NAME, packed_sdpa_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
    return bool(model.config._attn_implementation == NAME)
