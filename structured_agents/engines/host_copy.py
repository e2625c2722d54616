"""Small host values (row indices, token ids, positions) as tensors on the decode device.

``torch.tensor(values, device="cuda")`` copies from pageable memory, which CUDA does in step
with the stream: the host waits there for the GPU's queued work (the forward in flight), and
every kernel it launches after that starts late. :func:`on_device` builds the tensor in pinned
memory and copies it without waiting; elsewhere it is the plain tensor, moved.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["on_device"]


def on_device(
    values: Sequence[int] | Sequence[float] | Sequence[Sequence[int]],
    device: torch.device,
    dtype: torch.dtype,
) -> torch.Tensor:
    """``values`` as a ``dtype`` tensor on ``device``, copied asynchronously where it is CUDA."""
    tensor = torch.tensor(values, dtype=dtype)
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)
