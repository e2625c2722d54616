"""A Gemma 3 decode step without transformers' per-call machinery, bit for bit the same.

Once the weights are int8 (:mod:`.int8_weights`), much of a batch-1 decode step of Gemma 3 270M
through ``model(...)`` is Python: 18 layers of module calls, keyword plumbing, deprecation and
output-capturing wrappers around about 20 tensor operations each, and Gemma's RMSNorm as four
operations 109 times. :class:`LeanStep` runs the same operations in one loop: transformers' own
embedding, masks (``create_causal_mask`` and ``create_sliding_window_causal_mask``), rotary
embeddings and cache update, the layers' own weights, gathered once per layer, and
``F.rms_norm`` for the ``(1 + weight)`` RMSNorm in float32, which gives the same bits as
transformers' four operations (15 us against 10 us a call here). A layer's q/k/v products, and
its gate and up products, are one int8 kernel call each where the copies are int8
(:func:`~.int8_weights.share_copies`: the same bits). Attention is the packed SDPA of
:mod:`.packed_attention`, which the engine sets the model to as well. The test decodes past the
sliding window through both, two rows with one left-padded and one row alone, and compares the
logits with ``torch.equal``.

Queries and keys are rotated together, ``x * cos + x.roll(dim / 2) * sin`` with the first half
of ``sin`` negated (transformers' ``rotate_half``, the same bits).

Measured on 2 cores, a batch-1 step (``benchmarks/bench_engine.py`` for whole runs): through
``model(...)`` about 14 ms; the first lean step, 12.5-13.5 ms (batch 1 from 70.7 to 80.1
tokens/s); with the shared copies and gathered layers, 12.6 ms; with the packed attention,
11.5 ms; rotating queries and keys together, 0.3-1.3 ms less over 300 steps.

It is used for decode steps (one new token per row) of a ``gemma3_text`` model on CPU with the
packed attention; :meth:`LeanStep.of` gives None for any other model or device, and the engine
then calls the model as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from structured_agents.engines import packed_attention
from structured_agents.engines.gemma_norm import Norm, layer_norms, norm, scaled
from structured_agents.engines.int8_weights import STEP_DTYPES, StepLinear, int8_product, share_copies

__all__ = ["LeanStep"]


def _linear(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``layer`` (an ``nn.Linear`` or a :class:`StepLinear`) applied to ``x``, without the
    module call's hooks."""
    if isinstance(layer, StepLinear):
        return layer.forward(x)
    assert isinstance(layer, nn.Linear)
    return F.linear(x, layer.weight, layer.bias)


class _Product:
    """A decode step's product by linear layers that read the same input (a layer's q/k/v, its
    gate and up projections, or one layer): one int8 kernel call where their int8 copies are
    shared (:func:`~.int8_weights.share_copies`), as :class:`~.int8_weights.Int8Linear` calls
    it; each layer's own call where they are not, or for more rows than the copies take."""

    def __init__(self, layers: Sequence[nn.Linear | StepLinear]) -> None:
        self._layers = tuple(layers)
        self._widths = [layer.out_features for layer in layers]
        self._shared = share_copies(layers)
        first = layers[0]
        self._max_rows = first.max_rows if self._shared is not None and isinstance(first, StepLinear) else 0

    def __call__(self, x: torch.Tensor) -> Sequence[torch.Tensor]:
        """Each layer's product of ``x`` (``[rows, 1, in]``)."""
        rows = x.shape[0]
        if self._shared is None or rows > self._max_rows or x.dtype not in STEP_DTYPES:
            return [_linear(layer, x) for layer in self._layers]
        out = int8_product(x.reshape(rows, -1), *self._shared)
        return torch.split_with_sizes(out.reshape(rows, 1, -1), self._widths, dim=-1)


@dataclass(frozen=True)
class _Layer:
    """What a decode step reads of one decoder layer, gathered once."""

    kind: str
    scaling: float
    head_dim: int
    groups: int
    """Query heads per key/value head."""
    norms: tuple[Norm, Norm, Norm, Norm, Norm, Norm]
    """input, q, k, post-attention, pre-feedforward and post-feedforward norms."""
    qkv: _Product
    out: _Product
    gate_up: _Product
    down: _Product
    act: Callable[[torch.Tensor], torch.Tensor]


def _rotary(cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A step's rotary ``cos`` and ``sin`` (``[rows, 1, dim]``) for transformers'
    ``x * cos + rotate_half(x) * sin`` written as ``x * cos + x.roll(dim / 2) * sin``: the first
    half of ``sin`` negated in place of the rotated half of ``x`` (the same bits: a product's
    sign is exact), so queries and keys rotate in three operations, together."""
    half = sin.shape[-1] // 2
    signed = torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)
    return cos.unsqueeze(1), signed.unsqueeze(1)


class LeanStep:
    """One decode step of a transformers Gemma 3 text model: the logits of each row's new token."""

    def __init__(self, model: Any) -> None:
        from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

        self._model = model
        self._decoder = model.get_decoder()
        self._config = self._decoder.config
        self._masks = {
            "full_attention": create_causal_mask,
            "sliding_attention": create_sliding_window_causal_mask,
        }
        self._final_norm = scaled(self._decoder.norm)
        self._layers = [
            self._plan(layer, self._config.layer_types[index])
            for index, layer in enumerate(self._decoder.layers[: self._config.num_hidden_layers])
        ]

    @staticmethod
    def _plan(layer: Any, kind: str) -> _Layer:
        attention, mlp = layer.self_attn, layer.mlp
        return _Layer(
            kind=kind,
            scaling=attention.scaling,
            head_dim=attention.head_dim,
            groups=attention.num_key_value_groups,
            norms=layer_norms(layer),
            qkv=_Product([attention.q_proj, attention.k_proj, attention.v_proj]),
            out=_Product([attention.o_proj]),
            gate_up=_Product([mlp.gate_proj, mlp.up_proj]),
            down=_Product([mlp.down_proj]),
            act=mlp.act_fn,
        )

    @classmethod
    def of(cls, model: Any) -> LeanStep | None:
        """A lean step for ``model``, or None where it is not a Gemma 3 text model on CPU this
        step reproduces (causal, no soft-capping of attention or logits, and the packed SDPA
        attention of :mod:`.packed_attention`, which this step's attention is). On CUDA the
        same bits are not measured yet (``F.rms_norm`` has its own kernel there)."""
        config = getattr(model, "config", None)
        if (
            getattr(getattr(model, "device", None), "type", None) != "cpu"
            or getattr(config, "model_type", None) != "gemma3_text"
            or getattr(config, "_attn_implementation", None) != packed_attention.NAME
            or getattr(config, "use_bidirectional_attention", False)
            or getattr(config, "attn_logit_softcapping", None) is not None
            or getattr(config, "final_logit_softcapping", None) is not None
        ):
            return None
        return cls(model)

    def __call__(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> torch.Tensor:
        """The float32 logits ``[rows, vocab]`` after feeding ``ids`` (``[rows, 1]``) at
        ``positions``, with ``mask`` the rows' 2D attention mask and ``cache`` their cache."""
        decoder, config = self._decoder, self._config
        hidden = decoder.embed_tokens(ids)
        found = {"config": config, "inputs_embeds": hidden, "attention_mask": mask, "cache": cache}
        masks = {kind: make(**found, position_ids=positions) for kind, make in self._masks.items()}
        rotary = {
            kind: _rotary(*decoder.rotary_emb(hidden, positions, kind)) for kind in set(config.layer_types)
        }
        rows = hidden.shape[0]
        for index, layer in enumerate(self._layers):
            before, q_norm, k_norm, after, before_mlp, after_mlp = layer.norms
            residual = hidden
            shape = (rows, 1, -1, layer.head_dim)
            query, key, value = (t.view(shape).transpose(1, 2) for t in layer.qkv(norm(before, hidden)))
            heads = query.shape[1]
            cos, sin = rotary[layer.kind]
            both = torch.cat((norm(q_norm, query), norm(k_norm, key)), dim=1)
            both = both * cos + both.roll(both.shape[-1] // 2, dims=-1) * sin
            query, key = both[:, :heads], both[:, heads:]
            key, value = cache.update(key, value, index)
            out = F.scaled_dot_product_attention(
                query.reshape(rows, -1, layer.groups, layer.head_dim),  # a key/value head's queries
                key,
                value,
                attn_mask=masks[layer.kind],
                dropout_p=0.0,
                scale=layer.scaling,
            )
            (out,) = layer.out(out.reshape(rows, 1, -1))
            hidden = residual + norm(after, out)
            residual = hidden
            gate, up = layer.gate_up(norm(before_mlp, hidden))
            (down,) = layer.down(layer.act(gate) * up)
            hidden = residual + norm(after_mlp, down)
        hidden = norm(self._final_norm, hidden)
        logits: torch.Tensor = self._model.get_output_embeddings()(hidden)
        return logits[:, -1, :].float()
