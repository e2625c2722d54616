"""The C kernel of a CPU decode step's int8 products and of the LM head's 4-bit estimate, built
on this machine (the test command installs a C compiler)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from structured_agents.engines import int8_gemv
from structured_agents.engines.int8_gemv import INT4_GROUP, Native, cpu_has, native
from structured_agents.engines.int8_weights import quantize_weight

AVX512 = cpu_has("avx512f")
needs_avx512 = pytest.mark.skipif(
    not AVX512, reason="the CPU has no AVX-512: the kernel is not built here (see the test below)"
)


@pytest.fixture
def kernel() -> Native:
    if not AVX512:
        pytest.skip("the CPU has no AVX-512: the kernel is not built here")
    built = native()
    assert built is not None, "the int8 kernel was not built: see the log of int8_gemv"
    return built


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache and no kernel loaded yet in this process; the process's kernel again after."""
    monkeypatch.setattr(int8_gemv, "cache_dir", lambda: tmp_path)
    native.cache_clear()
    yield tmp_path / "native"
    native.cache_clear()


def _weight(rows: int, width: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return quantize_weight(torch.randn(rows, width, generator=generator) / 8)


def _x(rows: int, width: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(rows, width, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 8])
def test_the_product_is_the_int8_copys_to_float32_rounding(kernel: Native, rows: int) -> None:
    values, scales = _weight(301, 640)  # an odd number of outputs: the last one alone
    x = _x(rows, 640)
    got = kernel.product(x, values, scales)
    reference = x.double() @ (values.double() * scales.double().unsqueeze(1)).T
    assert got.dtype == torch.float32 and got.shape == (rows, 301)
    assert torch.allclose(got.double(), reference, rtol=1e-5, atol=1e-4)
    half = kernel.product(x.to(torch.bfloat16), values, scales)
    assert half.dtype == torch.bfloat16
    assert torch.equal(half, kernel.product(x.to(torch.bfloat16).float(), values, scales).to(torch.bfloat16))


def test_a_row_does_not_depend_on_the_rows_beside_it_or_the_threads(kernel: Native) -> None:
    values, scales = _weight(1023, 2048)
    x = _x(8, 2048)
    together = kernel.product(x, values, scales)
    for row in range(8):
        assert torch.equal(kernel.product(x[row : row + 1], values, scales), together[row : row + 1])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert torch.equal(kernel.product(x, values, scales), together)
    finally:
        torch.set_num_threads(threads)


def test_sizes_the_kernel_does_not_take_are_refused(kernel: Native) -> None:
    values, scales = _weight(32, 64)
    with pytest.raises(ValueError, match="at most 8"):
        kernel.product(_x(9, 64), values, scales)
    odd, odd_scales = _weight(32, 40)
    with pytest.raises(ValueError, match="multiple of 16"):
        kernel.product(_x(1, 40), odd, odd_scales)
    with pytest.raises(ValueError, match="int8_gemv"):
        kernel.product(_x(1, 64), values.float(), scales)


def test_the_4_bit_groups_hold_each_groups_values_scaled_to_7(kernel: Native) -> None:
    values, scales = _weight(300, 640)
    values[3, :64] = 0  # an all-zero group
    packed, group_scales = kernel.int4_pack(values, scales)
    assert packed.shape == (300, 320) and packed.dtype == torch.uint8
    assert group_scales.shape == (300, 640 // INT4_GROUP) and group_scales.dtype == torch.float32
    groups = values.view(300, -1, INT4_GROUP).to(torch.int64)
    most = groups.abs().amax(dim=2, keepdim=True)
    # round(7 v / most), halves away from zero, in whole numbers
    rounded = (14 * groups.abs() + most) // (2 * most.clamp(min=1))
    fours = torch.where(most > 0, torch.sign(groups) * rounded, 0)
    nibbles = packed.view(300, -1, 32).to(torch.int64)
    unpacked = torch.cat((nibbles & 15, nibbles >> 4), dim=2) - 8
    assert torch.equal(unpacked, fours)
    expected = scales.float().unsqueeze(1) * most.squeeze(2).float() / 7
    assert torch.allclose(group_scales, expected, rtol=1e-6, atol=0)
    assert bool((unpacked[3, 0] == 0).all()) and float(group_scales[3, 0]) == 0.0


@pytest.mark.parametrize("rows", [1, 4, 8])
def test_the_4_bit_product_is_exact_on_each_rows_int8_activations(kernel: Native, rows: int) -> None:
    values, scales = _weight(257, 640, seed=2)
    packed, group_scales = kernel.int4_pack(values, scales)
    x = _x(rows, 640, seed=3)
    got = kernel.int4_product(x, packed, group_scales)
    nibbles = packed.view(257, -1, 32).to(torch.int64)
    fours = (torch.cat((nibbles & 15, nibbles >> 4), dim=2) - 8).double()
    dequantized = (fours * group_scales.double().unsqueeze(2)).view(257, 640)
    step = x.double().abs().amax(dim=1, keepdim=True) / 127
    quantized = torch.sign(x.double()) * torch.floor(x.double().abs() / step.float().double() + 0.5)
    reference = (quantized @ dequantized.T) * step.float().double()
    assert got.shape == (rows, 257)
    assert torch.allclose(got.double(), reference, rtol=1e-5, atol=1e-3)
    for row in range(rows):  # each row quantized alone: its neighbours do not move it
        assert torch.equal(kernel.int4_product(x[row : row + 1], packed, group_scales), got[row : row + 1])
    with pytest.raises(ValueError, match="int4_product"):
        kernel.int4_product(_x(1, 64), packed, group_scales)
    wide = kernel.int4_pack(*_weight(2, 8256))
    with pytest.raises(ValueError, match="at most 8192"):
        kernel.int4_product(_x(1, 8256), *wide)


def test_the_kernel_is_built_exactly_where_the_cpu_runs_it(
    fresh: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=int8_gemv.__name__):
        built = native()
    if AVX512:
        assert built is not None and built.path.parent == fresh
    else:
        assert built is None and "the CPU has no AVX-512" in caplog.text and "torch's kernel" in caplog.text


@needs_avx512
def test_the_kernel_is_built_once_into_the_cache_and_loaded_after(fresh: Path) -> None:
    fresh.mkdir()
    (fresh / "int8_gemv-0123456789abcdef.so").write_bytes(b"an older source's build")
    first = native()
    assert first is not None and first.path.parent == fresh
    built = sorted(fresh.iterdir())
    assert built == [first.path]  # no partial file left beside it, nor an older build
    stamp = first.path.stat().st_mtime_ns
    native.cache_clear()
    second = native()
    assert second is not None and second.path == first.path and first.path.stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    ("compiler", "reason"), [("/nonexistent/cc", "no C compiler"), ("false", "could not build")]
)
def test_without_a_working_compiler_decode_steps_take_torchs_kernel(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, compiler: str, reason: str
) -> None:
    monkeypatch.setenv("CC", compiler)
    monkeypatch.setattr(int8_gemv, "_cpu_flags", lambda: "avx512f")  # a CPU that could run it
    with caplog.at_level(logging.INFO, logger=int8_gemv.__name__):
        assert native() is None
    assert reason in caplog.text and "torch's kernel" in caplog.text
    assert not fresh.exists() or not any(fresh.iterdir())
