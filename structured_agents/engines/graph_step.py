"""A Gemma 3 decode step over a :class:`~.slot_cache.SlotCache`, replayed as CUDA graphs.

On a GPU an eager decode step of Gemma 3 270M takes 20-35 ms whatever the batch: about 400
kernel launches from Python, each a few microseconds of host time, while the kernels
themselves take a few milliseconds (``../shared/GPU-NOTES.md``). :class:`GraphStep` writes the
step with fixed shapes over fixed buffers, so it can be captured once as a CUDA graph and
replayed with one launch:

* inputs: the rows' tokens and positions, copied into static buffers (device to device for
  the tokens, which the previous step chose on the device);
* shapes: the rows are padded up to a bucket (1, 2, 4, 8, 16, ... up to the slots) and the
  attended positions to a power of two (at least 128, at most the capacity); one graph per
  bucket pair is captured on its first use (a warm-up run, then the capture), into one shared
  memory pool. Padding rows are slots nobody uses: what they compute is never read.
* the step: the embedding, then each layer's norms, projections, rotary embedding (tables of
  every position, built once from the model's own rotary module), the new key and value
  written into each row's slot at its position, attention over the slot's first ``span``
  positions under a mask of each row's own positions (causal; sliding layers, the last
  ``sliding_window``), the MLP; the final norm and the LM head, in float32 out.

The arithmetic is the model's (transformers' Gemma 3 in eager form: ``(1 + weight)`` RMSNorm in
float32, ``gelu_pytorch_tanh``, the query scaling of ``query_pre_attn_scalar``), through
:func:`torch.nn.functional.scaled_dot_product_attention` with a boolean mask, so the logits
match the model's forward up to the attention kernel's rounding (the tests compare them on
CPU, where the same code runs eagerly without graphs). :meth:`GraphStep.of` gives None for
models it does not reproduce (not Gemma 3 text, soft-capping, bidirectional attention).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from structured_agents.engines.gemma_norm import Norm, layer_norms, norm, scaled
from structured_agents.engines.host_copy import on_device
from structured_agents.engines.int8_weights import StepLinear
from structured_agents.engines.slot_cache import SlotCache

__all__ = ["MIN_PROMPT", "GraphStep", "bucket"]

_MIN_SPAN = 128
"""The fewest positions a step attends to (spans are powers of two from here)."""
MIN_PROMPT = 16
"""The shortest prompt bucket a prefill is captured for (then powers of two)."""


def bucket(value: int, *, least: int = 1, most: int) -> int:
    """The power of two at least ``value`` (and at least ``least``), capped at ``most``."""
    size = least
    while size < value:
        size *= 2
    return min(size, most)


@dataclass(frozen=True)
class _Layer:
    kind: str
    scaling: float
    norms: tuple[Norm, Norm, Norm, Norm, Norm, Norm]
    """input, q, k, post-attention, pre-feedforward and post-feedforward norms."""
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    o: torch.Tensor
    gate: torch.Tensor
    up: torch.Tensor
    down: torch.Tensor
    act: Callable[[torch.Tensor], torch.Tensor]


def _plain(module: Any) -> nn.Linear:
    """The linear layer ``module`` is, or wraps (a CPU engine's :class:`~.int8_weights.StepLinear`,
    whose step this one does not take: it multiplies by the weight)."""
    plain: nn.Linear = module.linear if isinstance(module, StepLinear) else module
    return plain


class GraphStep:
    """One decode step of every live row of ``cache`` (rows are slots ``0 .. rows - 1``)."""

    def __init__(self, model: Any, cache: SlotCache, *, graphs: bool) -> None:
        self._model = model
        self._decoder = model.get_decoder()
        config = self._decoder.config
        self._cache = cache
        self._graphs = graphs
        device = cache.kv.device
        self._heads = int(config.num_attention_heads)
        self._kv_heads = int(config.num_key_value_heads)
        self._head_dim = cache.kv.shape[-1]
        self._head = model.get_output_embeddings().weight
        self._final = scaled(self._decoder.norm)
        self._layers = [self._plan(layer, cache.kinds[i]) for i, layer in enumerate(self._decoder.layers)]
        self._ids = torch.zeros(cache.slots, dtype=torch.long, device=device)
        self._positions = torch.zeros(cache.slots, dtype=torch.long, device=device)
        self._slots = torch.arange(cache.slots, device=device)
        self._columns = torch.arange(cache.capacity, device=device)
        self._rotary = {kind: self._table(kind) for kind in set(cache.kinds)}
        self._captured: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self._prefills: dict[
            tuple[int, int], tuple[torch.cuda.CUDAGraph, tuple[torch.Tensor, ...], torch.Tensor]
        ] = {}
        self._pool: Any = None

    @classmethod
    def of(cls, model: Any) -> bool:
        """Whether this step reproduces ``model``: a causal Gemma 3 text model without
        soft-capping, whose layers share one key/value shape."""
        config = getattr(model, "config", None)
        return (
            getattr(config, "model_type", None) == "gemma3_text"
            and not getattr(config, "use_bidirectional_attention", False)
            and getattr(config, "attn_logit_softcapping", None) is None
            and getattr(config, "final_logit_softcapping", None) is None
        )

    def _plan(self, layer: Any, kind: str) -> _Layer:
        attention, mlp = layer.self_attn, layer.mlp
        projections = (attention.q_proj, attention.k_proj, attention.v_proj, attention.o_proj)
        if any(_plain(p).bias is not None for p in projections):
            raise ValueError("GraphStep: attention projections with a bias are not reproduced")
        return _Layer(
            kind=kind,
            scaling=float(attention.scaling),
            norms=layer_norms(layer),
            q=attention.q_proj.weight,
            k=attention.k_proj.weight,
            v=attention.v_proj.weight,
            o=attention.o_proj.weight,
            gate=mlp.gate_proj.weight,
            up=mlp.up_proj.weight,
            down=mlp.down_proj.weight,
            act=mlp.act_fn,
        )

    def _table(self, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``cos`` and signed ``sin`` of every position for ``kind``'s rotary embedding
        (``x * cos + x.roll(dim / 2) * sin`` is transformers' ``x * cos + rotate_half(x) * sin``)."""
        positions = self._columns.unsqueeze(0)
        probe = torch.zeros((), dtype=self._head.dtype, device=self._head.device)
        cos, sin = self._decoder.rotary_emb(probe, positions, kind)
        half = sin.shape[-1] // 2
        return cos[0], torch.cat((-sin[0, :, :half], sin[0, :, half:]), dim=-1)

    def __call__(self, ids: torch.Tensor, positions: torch.Tensor, span: int) -> torch.Tensor:
        """The float32 logits ``[rows, vocab]`` after feeding ``ids`` (``[rows]``, on the device)
        at ``positions`` (``[rows]``) into slots ``0 .. rows - 1``; ``span`` is more than the
        largest position. The result is the graph's output buffer: read it before the next call."""
        rows = ids.shape[0]
        if span > self._cache.capacity:
            raise ValueError(f"GraphStep: position {span - 1} is past the cache's {self._cache.capacity}")
        size = bucket(rows, most=self._cache.slots)
        width = bucket(span, least=_MIN_SPAN, most=self._cache.capacity)
        self._ids[:rows].copy_(ids, non_blocking=True)
        self._positions[:rows].copy_(positions, non_blocking=True)
        if not self._graphs:
            return self._step(size, width)[:rows]
        key = (size, width)
        with torch.cuda.device(self._cache.kv.device):  # the engine's device, not the thread's current one
            if key not in self._captured:
                self._captured[key] = self._capture(lambda: self._step(size, width))
            graph, out = self._captured[key]
            graph.replay()
        return out[:rows]

    def prefill(self, prompts: Sequence[Sequence[int]], first: int) -> torch.Tensor:
        """Feed each of ``prompts`` whole into its slot (``first``, ``first + 1``, ..., from
        position 0): their keys and values written into the slots, and the float32 logits
        ``[rows, vocab]`` of each prompt's last token.

        One pass over the layers for the rows together, right padded (a padded position is a
        key no query attends to: its stale key and value past the row's length, as the cache
        allows), captured as a CUDA graph per bucket of rows and of prompt length (powers of
        two from :data:`MIN_PROMPT`), the bucket's extra rows writing to the cache's scratch
        slot. Transformers' own forward took 24-35 ms on a GPU machine's host whatever the
        rows, with its dynamic cache and its masks, and then had to be gathered into the
        slots; fed a prefill almost every step, a stream of short requests ran at a tenth of
        the decode's speed. The result is the graph's output buffer: read it before the next
        call."""
        rows, width = len(prompts), max(map(len, prompts))
        if width > self._cache.capacity:
            raise ValueError(f"GraphStep: a {width}-token prompt is past the cache's {self._cache.capacity}")
        size = bucket(rows, most=self._cache.slots)
        span = bucket(width, least=MIN_PROMPT, most=self._cache.capacity)
        padding = [[0] * span] * (size - rows)
        ids = [token for p in [*prompts, *padding] for token in (*p, *[0] * (span - len(p)))]
        lengths = [*map(len, prompts), *[1] * (size - rows)]
        slots = [*range(first, first + rows), *[self._cache.scratch] * (size - rows)]
        device = self._cache.kv.device
        inputs = (
            on_device(ids, device, torch.long).view(size, span),
            on_device(lengths, device, torch.long),
            on_device(slots, device, torch.long),
        )
        if not self._graphs:
            return self._prefill(*inputs)[:rows]
        key = (size, span)
        with torch.cuda.device(device):
            if key not in self._prefills:
                static = tuple(torch.empty_like(tensor) for tensor in inputs)
                for buffer, tensor in zip(static, inputs, strict=True):
                    buffer.copy_(tensor)
                graph, out = self._capture(lambda: self._prefill(*static))
                self._prefills[key] = (graph, static, out)
            graph, static, out = self._prefills[key]
            for buffer, tensor in zip(static, inputs, strict=True):
                buffer.copy_(tensor, non_blocking=True)
            graph.replay()
        return out[:rows]

    def _prefill(self, ids: torch.Tensor, lengths: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """:meth:`prefill`'s pass: ``ids`` ``[rows, width]`` right padded, each row's length and slot."""
        rows, width = ids.shape
        device = ids.device
        columns = self._columns[:width]
        causal = (columns.unsqueeze(0) <= columns.unsqueeze(1)).unsqueeze(0)  # [1, query, key]
        seen = causal & (columns < lengths.unsqueeze(1)).unsqueeze(1)  # [rows, query, key]
        near = columns.unsqueeze(0) > columns.unsqueeze(1) - self._cache.window
        masks = {"full_attention": seen.unsqueeze(1), "sliding_attention": (seen & near).unsqueeze(1)}
        rotary = {kind: (cos[:width], sin[:width]) for kind, (cos, sin) in self._rotary.items()}
        hidden = self._decoder.embed_tokens(ids)  # [rows, width, hidden]
        groups = self._heads // self._kv_heads
        for index, layer in enumerate(self._layers):
            query, key, value = self._projected(layer, hidden, *rotary[layer.kind])
            self._cache.kv[0, index, slots, :, :width] = key
            self._cache.kv[1, index, slots, :, :width] = value
            out = F.scaled_dot_product_attention(
                query,
                key.repeat_interleave(groups, dim=1),
                value.repeat_interleave(groups, dim=1),
                attn_mask=masks[layer.kind],
                scale=layer.scaling,
            )
            hidden = self._attended(layer, hidden, out.transpose(1, 2).reshape(rows, width, -1))
        last = hidden[torch.arange(rows, device=device), lengths - 1]  # [rows, hidden]
        return F.linear(norm(self._final, last), self._head).float()

    def _capture(self, run: Callable[[], torch.Tensor]) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
        """``run`` as a CUDA graph, and its output. The warm-up runs write what the captured run
        writes (the same keys at the same places)."""
        side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool):
            out = run()
        self._pool = graph.pool()
        return graph, out

    def _step(self, size: int, width: int) -> torch.Tensor:
        ids, positions, slots = self._ids[:size], self._positions[:size], self._slots[:size]
        columns = self._columns[:width].unsqueeze(0)
        seen = columns <= positions.unsqueeze(1)
        masks = {
            "full_attention": seen[:, None, None, :],
            "sliding_attention": (seen & (columns > positions.unsqueeze(1) - self._cache.window))[
                :, None, None, :
            ],
        }
        rotary = {
            kind: (cos[positions][:, None, None, :], sin[positions][:, None, None, :])
            for kind, (cos, sin) in self._rotary.items()
        }
        hidden = self._decoder.embed_tokens(ids.unsqueeze(1))  # [size, 1, hidden]
        dim, groups = self._head_dim, self._heads // self._kv_heads
        for index, layer in enumerate(self._layers):
            query, key, value = self._projected(layer, hidden, *rotary[layer.kind])
            keys, values = self._cache.kv[0, index], self._cache.kv[1, index]
            keys[slots, :, positions] = key[:, :, 0]
            values[slots, :, positions] = value[:, :, 0]
            out = F.scaled_dot_product_attention(
                query.reshape(size, self._kv_heads, groups, dim),  # a key/value head's queries
                keys[:size, :, :width],
                values[:size, :, :width],
                attn_mask=masks[layer.kind],
                scale=layer.scaling,
            )
            hidden = self._attended(layer, hidden, out.reshape(size, 1, -1))
        logits = F.linear(norm(self._final, hidden), self._head)
        return logits[:, 0, :].float()

    def _projected(
        self, layer: _Layer, hidden: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``layer``'s queries, keys and values of ``hidden`` (``[rows, tokens, hidden]``), each
        ``[rows, heads, tokens, dim]``: the queries and keys normed and turned by the rotary
        ``cos`` and ``sin`` of their positions."""
        before, q_norm, k_norm = layer.norms[:3]
        rows, tokens, dim = hidden.shape[0], hidden.shape[1], self._head_dim
        x = norm(before, hidden)
        query = F.linear(x, layer.q).view(rows, tokens, self._heads, dim).transpose(1, 2)
        key = F.linear(x, layer.k).view(rows, tokens, self._kv_heads, dim).transpose(1, 2)
        value = F.linear(x, layer.v).view(rows, tokens, self._kv_heads, dim).transpose(1, 2)
        both = torch.cat((norm(q_norm, query), norm(k_norm, key)), dim=1)
        both = both * cos + both.roll(dim // 2, dims=-1) * sin
        return both[:, : self._heads], both[:, self._heads :], value

    @staticmethod
    def _attended(layer: _Layer, hidden: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """``hidden`` after ``layer``'s output projection of its attention ``out`` (``[rows,
        tokens, heads * dim]``) and its MLP, each normed and added to the residual."""
        after, before_mlp, after_mlp = layer.norms[3:]
        hidden = hidden + norm(after, F.linear(out, layer.o))
        x = norm(before_mlp, hidden)
        return hidden + norm(
            after_mlp, F.linear(layer.act(F.linear(x, layer.gate)) * F.linear(x, layer.up), layer.down)
        )
