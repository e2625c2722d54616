"""Int8 weight-only linears for CPU decode steps: a decode step reads a quarter of the bytes.

At batch 1 a CPU decode step is bound by memory bandwidth: Gemma 3 270M's step reads its
bfloat16 weights (536 MB, 62 % of them the tied embedding that is also the LM head) once per
token. :class:`Int8Linear` keeps beside a linear layer's weight an int8 copy with one bfloat16
scale per output channel (symmetric, ``round(w / s)`` with ``s = max|w| / 127``), and a call
with few rows (decode steps) multiplies by that copy: with this project's kernel where the
machine built it (:mod:`.int8_gemv`, float32 activations, at the memory's speed: 2.2x torch's
kernel at 1 row), else with torch's ``_weight_int8pack_mm``, bfloat16 activations in and out.
Any other call (a prefill, more rows) multiplies by the original weight: torch's kernel's cost
grows with the rows, and past about 10 rows it is slower than the bfloat16 GEMM.

Measured on this project's 2-core AVX-512 BF16 CPU, milliseconds per call, bfloat16
``F.linear`` against ``torch._weight_int8pack_mm`` (``benchmarks/bench_engine.py`` gives the
whole step):

* the LM head, 262144 x 640: 11.5 / 4.9 at 1 row, 13.6 / 10.5 at 8, 16.3 / 20.5 at 16;
* an MLP projection, 2048 x 640: 0.089 / 0.018 at 1 row, 0.103 / 0.069 at 8, 0.210 / 0.268 at 32.

The int8 copies move the decoder's activations a little, so greedy output differs where two
tokens are close: over 16 docstring prompts of 40 tokens, 8 came out identical to the bfloat16
weights' and the rest parted after 29 tokens on average (the LM head is rescored from its
weight, :mod:`.rescored_head`; with the head's int8 copy read as it is, 3 were identical). What
that does to the work was measured, not assumed: the same 48 docstrings (4 packages), graded
blind, came out 2 / 10 / 36 (accept / edit / reject) from the bfloat16 weights and 2 / 10 / 36
from the int8 copies, and lint's kept changes were identical (its checks decide them).
``auto`` takes it on a CPU in bfloat16, and in float32 on an AVX-512 CPU
(:func:`~.transformers_engine.resolve_quantization`): a float32 model's decode steps give the
kernel their activations in bfloat16 and take its products back in float32.

The int8 copies of a converted model are kept beside it (:data:`CACHE_FILE`, written once,
atomically), so a start reads them (0.05 s for Gemma 3 270M) instead of quantizing again (0.45 s).
"""

from __future__ import annotations

import itertools
import logging
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from structured_agents.engines.int8_gemv import native

__all__ = [
    "CACHE_FILE",
    "MAX_ROWS",
    "STEP_DTYPES",
    "Int8Linear",
    "StepLinear",
    "int8_product",
    "quantize_linears",
    "quantize_weight",
    "share_copies",
]

CACHE_FILE = "int8-weights.safetensors"
"""Beside a converted model: its linears' int8 weights and scales, by module name."""
MAX_ROWS = 8
"""Decode steps of at most this many rows use the int8 weight (the kernel's cost grows with the
rows; past about 10 it is slower than the bfloat16 GEMM)."""
STEP_DTYPES = (torch.bfloat16, torch.float32)
"""The activations a decode step's int8 product takes (:func:`int8_product`)."""
_SCHEME = "int8 weight-only, symmetric, one bfloat16 scale per output row (1)"
"""What a kept file holds; a file of another scheme is quantized again."""
_CHUNK = 16384
_ALIGNMENT = 64
_BLOCK = 16
"""``_weight_int8pack_mm`` reads the inner dimension in blocks of this many values (torch 2.13
crashes the process on any other width): a linear of another input width keeps its weight."""
logger = logging.getLogger(__name__)


def quantize_weight(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``weight`` ([out, in]) as int8 values and one bfloat16 scale per output row, such that
    ``values * scale`` is the weight to within half a scale step per entry."""
    scales = (weight.abs().amax(dim=1).float() / 127).clamp(min=torch.finfo(torch.float32).tiny)
    scales = scales.to(torch.bfloat16)
    values = torch.empty(weight.shape, dtype=torch.int8)
    for start in range(0, weight.shape[0], _CHUNK):  # in chunks: no float32 copy of the whole weight
        # a copy: ``float()`` of a float32 weight is the weight itself, which ``div_`` would overwrite
        rows = slice(start, start + _CHUNK)
        chunk = weight[rows].to(torch.float32, copy=True).div_(scales[rows].float().unsqueeze(1))
        values[rows] = chunk.round_().clamp_(-127, 127).to(torch.int8)
    return values, scales


def _aligned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, contiguous and 64-byte aligned: ``_weight_int8pack_mm`` reads its operands
    with aligned vector loads and crashes the process on the packed tensors of a safetensors
    file (torch 2.13, rows > 1); torch's own allocator aligns to 64 bytes."""
    if tensor.is_contiguous() and tensor.data_ptr() % _ALIGNMENT == 0:
        return tensor
    return tensor.clone(memory_format=torch.contiguous_format)


class StepLinear(nn.Module):
    """A linear layer with a faster product for a CPU decode step (``[rows, 1, in]``, at most
    ``max_rows`` rows, bfloat16 or float32), :meth:`step`; any other call multiplies by its own
    weight."""

    def __init__(self, linear: nn.Linear, *, max_rows: int) -> None:
        super().__init__()
        self.linear = linear
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.max_rows = max_rows

    @property
    def weight(self) -> torch.Tensor:
        """The original weight (tied embeddings read it)."""
        return self.linear.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        one_step = x.dim() == 3 and x.shape[1] == 1 and rows <= self.max_rows
        if not one_step or x.dtype not in STEP_DTYPES or x.device.type != "cpu":
            out: torch.Tensor = self.linear(x)
            return out
        return self.step(x.reshape(rows, self.in_features)).reshape(rows, 1, self.out_features)

    def step(self, x: torch.Tensor) -> torch.Tensor:
        """The product of a decode step's ``[rows, in]`` input, ``[rows, out]``, in its dtype."""
        raise NotImplementedError


class Int8Linear(StepLinear):
    """A linear layer that multiplies a decode step by its int8 copy. The kernel works row by
    row, so a row's result does not depend on the rows beside it."""

    values: torch.Tensor
    scales: torch.Tensor

    def __init__(
        self, linear: nn.Linear, values: torch.Tensor, scales: torch.Tensor, *, max_rows: int = MAX_ROWS
    ) -> None:
        super().__init__(linear, max_rows=max_rows)
        if linear.in_features % _BLOCK:
            raise ValueError(
                f"Int8Linear: the input width must be a multiple of {_BLOCK}, got {linear.in_features}"
            )
        if values.shape != linear.weight.shape or scales.shape != (linear.weight.shape[0],):
            raise ValueError(
                f"Int8Linear: int8 weight {tuple(values.shape)} and scales {tuple(scales.shape)} do not "
                f"fit a weight of {tuple(linear.weight.shape)}"
            )
        self.register_buffer("values", _aligned(values), persistent=False)
        self.register_buffer("scales", _aligned(scales.to(torch.bfloat16)), persistent=False)

    def step(self, x: torch.Tensor) -> torch.Tensor:
        out = int8_product(x, self.values, self.scales)
        return out if self.linear.bias is None else out + self.linear.bias


def int8_product(x: torch.Tensor, values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """``x`` (``[rows, in]``, bfloat16 or float32) by the int8 copy ``values`` with ``scales``,
    in ``x``'s dtype: by this project's kernel where the machine built it
    (:func:`~.int8_gemv.native`, float32 activations), else by torch's, which takes bfloat16
    activations, so float32 ones are rounded to bfloat16 on the way in."""
    kernel = native()
    if kernel is not None and x.shape[0] <= kernel.max_rows:
        return kernel.product(x, values, scales)
    if x.dtype == torch.bfloat16:
        return torch._weight_int8pack_mm(x, values, scales)
    return torch._weight_int8pack_mm(x.to(torch.bfloat16), values, scales).to(x.dtype)


def share_copies(layers: Sequence[nn.Module]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """One int8 copy for ``layers``, linear layers that read the same input (a decoder layer's
    q/k/v, or its gate and up projections): their values and scales by output row, one layer's
    after another, each layer's own copy then a view of them. A decode step multiplies by all of
    them in one kernel call, with the same bits (the kernel computes each output row on its own)
    and no memory added. None, nothing changed, where one is not an :class:`Int8Linear` without
    bias, their input widths or row limits differ, or a view would not be 64-byte aligned."""
    int8: list[Int8Linear] = []
    for layer in layers:
        if isinstance(layer, Int8Linear) and getattr(layer.linear, "bias", None) is None:
            int8.append(layer)
    if not int8 or len(int8) != len(layers) or len({(q.in_features, q.max_rows) for q in int8}) != 1:
        return None
    if len(int8) == 1:
        return int8[0].values, int8[0].scales
    values = torch.cat([layer.values for layer in int8])
    scales = torch.cat([layer.scales for layer in int8])
    starts = list(itertools.accumulate((layer.out_features for layer in int8), initial=0))
    views = [(values[a:b], scales[a:b]) for a, b in itertools.pairwise(starts)]
    if any(v.data_ptr() % _ALIGNMENT or s.data_ptr() % _ALIGNMENT for v, s in views):
        return None
    for layer, (layer_values, layer_scales) in zip(int8, views, strict=True):
        layer.values, layer.scales = layer_values, layer_scales
    return values, scales


def _linears(model: Any) -> dict[str, nn.Linear]:
    """The model's linear layers (its decoder's and its LM head) that the kernel takes, by
    module name."""
    return {
        name: module
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and module.in_features % _BLOCK == 0
    }


def _read_cache(path: Path, names: dict[str, nn.Linear]) -> dict[str, torch.Tensor] | None:
    """The int8 weights kept at ``path`` for ``names``; None (and a warning) when the file is
    unreadable, of another scheme, or does not fit these layers."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as kept:
            if (kept.metadata() or {}).get("scheme") != _SCHEME:
                logger.warning("ignoring the int8 weights at %s: another scheme", path)
                return None
            tensors = {key: kept.get_tensor(key) for key in kept.keys()}  # noqa: SIM118  # not a dict
    except (OSError, SafetensorError) as exc:
        logger.warning("ignoring the int8 weights at %s: %s", path, exc)
        return None
    for name, linear in names.items():
        values, scales = tensors.get(f"{name}.values"), tensors.get(f"{name}.scales")
        if (
            values is None
            or scales is None
            or values.dtype != torch.int8
            or values.shape != linear.weight.shape
            or scales.shape != (linear.weight.shape[0],)
        ):
            logger.warning("ignoring the int8 weights at %s: they do not fit this model (%s)", path, name)
            return None
    return tensors


def _write_cache(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save_file

    partial = path.with_name(f".{path.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        save_file(tensors, str(partial), metadata={"scheme": _SCHEME})
        os.replace(partial, path)
    except OSError as exc:  # a read-only cache: quantize again on the next start
        logger.warning("could not keep the int8 weights at %s: %s", path, exc)
        partial.unlink(missing_ok=True)


def quantize_linears(model: Any, *, cache_dir: Path | None = None, max_rows: int = MAX_ROWS) -> int:
    """Give every linear layer of ``model``'s decoder, and its LM head, an int8 copy
    (:class:`Int8Linear`; those whose input width the kernel takes), read from ``cache_dir``
    when it has them and kept there otherwise (None: quantized here, kept nowhere); the number
    of layers converted. :func:`~.rescored_head.rescore_head` then makes the head's copy an
    estimate."""
    names = _linears(model)
    path = None if cache_dir is None else cache_dir / CACHE_FILE
    tensors = _read_cache(path, names) if path is not None and path.is_file() else None
    if tensors is None:
        tensors = {}
        for name, linear in names.items():
            values, scales = quantize_weight(linear.weight.detach())
            tensors[f"{name}.values"], tensors[f"{name}.scales"] = values, scales
        if path is not None:
            _write_cache(path, tensors)
    for name, linear in names.items():
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        values, scales = tensors[f"{name}.values"], tensors[f"{name}.scales"]
        setattr(parent, child, Int8Linear(linear, values, scales, max_rows=max_rows))
    native()  # built (once per machine) or loaded with the model, not in its first decode step
    return len(names)
