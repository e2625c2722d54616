"""Gemma's RMSNorm as the hand-written decode steps run it (:mod:`.lean_step` on CPU,
:mod:`.graph_step` on CUDA): ``x * rsqrt(mean(x^2) + eps) * (1 + weight)`` in float32 through
:func:`torch.nn.functional.rms_norm`, which gives the same bits as transformers' four
operations, with the ``1 + weight`` computed once."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["Norm", "layer_norms", "norm", "scaled"]

Norm = tuple[torch.Tensor, float]
"""An RMSNorm's float32 ``1 + weight`` and its eps."""


def scaled(module: Any) -> Norm:
    """The :data:`Norm` of a Gemma RMSNorm module."""
    return 1.0 + module.weight.float(), float(module.eps)


def norm(weights: Norm, x: torch.Tensor) -> torch.Tensor:
    """``x`` normalised by ``weights``, in float32, returned in ``x``'s dtype."""
    return F.rms_norm(x.float(), (x.shape[-1],), weights[0], weights[1]).type_as(x)


def layer_norms(layer: Any) -> tuple[Norm, Norm, Norm, Norm, Norm, Norm]:
    """A Gemma 3 decoder layer's input, query, key, post-attention, pre-feedforward and
    post-feedforward norms."""
    attention = layer.self_attn
    return (
        scaled(layer.input_layernorm),
        scaled(attention.q_norm),
        scaled(attention.k_norm),
        scaled(layer.post_attention_layernorm),
        scaled(layer.pre_feedforward_layernorm),
        scaled(layer.post_feedforward_layernorm),
    )
