"""on_device: host values as tensors where the decode runs (CUDA's asynchronous path needs a GPU;
these are the others)."""

from __future__ import annotations

import torch

from structured_agents.engines.host_copy import on_device


def test_values_land_on_the_device_with_their_dtype() -> None:
    on_cpu = on_device([[1, 2], [3, 4]], torch.device("cpu"), torch.long)
    assert on_cpu.dtype == torch.long and on_cpu.tolist() == [[1, 2], [3, 4]]
    elsewhere = on_device([0.5, 1.5], torch.device("meta"), torch.float32)
    assert elsewhere.device.type == "meta" and elsewhere.dtype == torch.float32 and elsewhere.shape == (2,)
