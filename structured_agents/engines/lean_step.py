"""A Gemma 3 decode step without transformers' per-call machinery, bit for bit the same.

Once the weights are int8 (:mod:`.int8_weights`), much of a batch-1 decode step of Gemma 3 270M
through ``model(...)`` is Python: 18 layers of module calls, keyword plumbing, deprecation and
output-capturing wrappers around about 20 tensor operations each, and Gemma's RMSNorm as four
operations 109 times. :class:`LeanStep` runs the same operations in one loop: transformers' own
embedding, masks (``create_causal_mask`` and ``create_sliding_window_causal_mask``), rotary
embeddings, cache update and SDPA attention function, the layers' own weights (a linear layer's
product called without the module call), and ``F.rms_norm`` for the ``(1 + weight)`` RMSNorm in
float32, which gives the same bits as transformers' four operations (15 us against 10 us a call
here). The test decodes two rows, one left-padded, past the sliding window through both and
compares the logits with ``torch.equal``. Measured with ``benchmarks/bench_engine.py`` on 2
cores: batch 1 from 70.7 to 80.1 tokens/s, batch 8 from 322 to 332.

It is used for decode steps (one new token per row) of a ``gemma3_text`` model on CPU with SDPA
attention; :meth:`LeanStep.of` gives None for any other model or device, and the engine then
calls the model as before.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from structured_agents.engines.int8_weights import StepLinear

__all__ = ["LeanStep"]


def _linear(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``layer`` (an ``nn.Linear`` or a :class:`StepLinear`) applied to ``x``, without the
    module call's hooks."""
    if isinstance(layer, StepLinear):
        return layer.forward(x)
    assert isinstance(layer, nn.Linear)
    return F.linear(x, layer.weight, layer.bias)


class LeanStep:
    """One decode step of a transformers Gemma 3 text model: the logits of each row's new token."""

    def __init__(self, model: Any) -> None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask
        from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm, apply_rotary_pos_emb

        self._model = model
        self._decoder = model.get_decoder()
        self._config = self._decoder.config
        self._masks = {
            "full_attention": create_causal_mask,
            "sliding_attention": create_sliding_window_causal_mask,
        }
        self._attention = sdpa_attention_forward
        self._rotate = apply_rotary_pos_emb
        self._scales = {
            id(norm): 1.0 + norm.weight.float()
            for norm in self._decoder.modules()
            if isinstance(norm, Gemma3RMSNorm)
        }
        """Each RMSNorm's float32 ``1 + weight``, by the norm's identity."""

    @classmethod
    def of(cls, model: Any) -> LeanStep | None:
        """A lean step for ``model``, or None where it is not a Gemma 3 text model on CPU this
        step reproduces (SDPA attention, causal, no soft-capping of attention or logits). On
        CUDA the same bits are not measured yet (``F.rms_norm`` has its own kernel there)."""
        config = getattr(model, "config", None)
        if (
            getattr(getattr(model, "device", None), "type", None) != "cpu"
            or getattr(config, "model_type", None) != "gemma3_text"
            or getattr(config, "_attn_implementation", None) != "sdpa"
            or getattr(config, "use_bidirectional_attention", False)
            or getattr(config, "attn_logit_softcapping", None) is not None
            or getattr(config, "final_logit_softcapping", None) is not None
        ):
            return None
        return cls(model)

    def _norm(self, norm: Any, x: torch.Tensor) -> torch.Tensor:
        """Gemma's RMSNorm (``x * rsqrt(mean(x^2) + eps) * (1 + weight)`` in float32)."""
        return F.rms_norm(x.float(), (x.shape[-1],), self._scales[id(norm)], norm.eps).type_as(x)

    def __call__(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> torch.Tensor:
        """The float32 logits ``[rows, vocab]`` after feeding ``ids`` (``[rows, 1]``) at
        ``positions``, with ``mask`` the rows' 2D attention mask and ``cache`` their cache."""
        decoder, config = self._decoder, self._config
        hidden = decoder.embed_tokens(ids)
        found = {"config": config, "inputs_embeds": hidden, "attention_mask": mask, "cache": cache}
        masks = {kind: make(**found, position_ids=positions) for kind, make in self._masks.items()}
        rotary = {kind: decoder.rotary_emb(hidden, positions, kind) for kind in set(config.layer_types)}
        rows = hidden.shape[0]
        for index, layer in enumerate(decoder.layers[: config.num_hidden_layers]):
            kind = config.layer_types[index]
            attention = layer.self_attn
            residual = hidden
            x = self._norm(layer.input_layernorm, hidden)
            shape = (rows, 1, -1, attention.head_dim)
            query = _linear(attention.q_proj, x).view(shape).transpose(1, 2)
            key = _linear(attention.k_proj, x).view(shape).transpose(1, 2)
            value = _linear(attention.v_proj, x).view(shape).transpose(1, 2)
            query, key = self._norm(attention.q_norm, query), self._norm(attention.k_norm, key)
            query, key = self._rotate(query, key, *rotary[kind])
            key, value = cache.update(key, value, index)
            out, _ = self._attention(
                attention,
                query,
                key,
                value,
                masks[kind],
                dropout=0.0,
                scaling=attention.scaling,
                sliding_window=attention.sliding_window,
            )
            out = _linear(attention.o_proj, out.reshape(rows, 1, -1).contiguous())
            hidden = residual + self._norm(layer.post_attention_layernorm, out)
            residual = hidden
            x = self._norm(layer.pre_feedforward_layernorm, hidden)
            mlp = layer.mlp
            x = _linear(mlp.down_proj, mlp.act_fn(_linear(mlp.gate_proj, x)) * _linear(mlp.up_proj, x))
            hidden = residual + self._norm(layer.post_feedforward_layernorm, x)
        hidden = self._norm(decoder.norm, hidden)
        logits: torch.Tensor = self._model.get_output_embeddings()(hidden)
        return logits[:, -1, :].float()
