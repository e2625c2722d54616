"""Int8 weight-only linears (:mod:`structured_agents.engines.int8_weights`) and the rescored LM
head (:mod:`structured_agents.engines.rescored_head`) on real torch kernels: where the int8
copies are used, how far they are from the weight, the kept copies, and the rescored logits."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from structured_agents.engines import rescored_head
from structured_agents.engines.int8_gemv import INT4_GROUP, cpu_has, native
from structured_agents.engines.int8_weights import (
    CACHE_FILE,
    Int8Linear,
    int8_product,
    quantize_linears,
    quantize_weight,
    share_copies,
)
from structured_agents.engines.rescored_head import EXACT, VNNI, RescoredHead, rescore_head
from structured_agents.engines.transformers_engine import resolve_quantization
from structured_agents.errors import ConfigError


class _Tiny(nn.Module):
    """Linears of odd output sizes (so a kept file packs its tensors unaligned), one of an input
    width the kernel does not take, and an LM head."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.model = nn.ModuleDict(
            {"up": nn.Linear(64, 37, bias=True), "down": nn.Linear(37, 64, bias=False)}
        )
        self.lm_head = nn.Linear(64, 301, bias=False)
        for parameter in self.parameters():
            parameter.data = torch.randn(parameter.shape, generator=generator).to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lm_head(self.model["down"](self.model["up"](x)))
        return out

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def set_output_embeddings(self, head: nn.Module) -> None:
        self.lm_head = head


def _step(rows: int, width: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(rows, 1, width, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def test_quantized_weight_is_within_half_a_step_of_the_weight() -> None:
    weight = torch.randn(300, 64, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    weight[7] = 0  # an all-zero row keeps a usable scale
    values, scales = quantize_weight(weight)
    assert values.dtype == torch.int8 and scales.dtype == torch.bfloat16 and scales.shape == (300,)
    assert int(values.abs().max()) <= 127
    error = (weight.float() - values.float() * scales.float().unsqueeze(1)).abs()
    assert bool((error <= scales.float().unsqueeze(1) / 2 + 1e-6).all())
    assert bool((values[7] == 0).all())


def test_a_decode_step_multiplies_by_the_int8_copy_and_a_prefill_by_the_weight() -> None:
    linear = nn.Linear(64, 48, bias=True).to(torch.bfloat16)
    values, scales = quantize_weight(linear.weight.detach())
    int8 = Int8Linear(linear, values, scales)
    step = _step(3, 64)
    dequantized = values.float() * scales.float().unsqueeze(1)
    expected = step.float() @ dequantized.T + linear.bias.detach().float()
    got = int8(step)
    assert got.shape == (3, 1, 48) and got.dtype == torch.bfloat16
    assert torch.allclose(got.float(), expected, rtol=2e-2, atol=2e-2)
    exact = step.float() @ linear.weight.detach().float().T + linear.bias.detach().float()
    assert not torch.allclose(got.float(), exact, rtol=1e-3, atol=1e-3)  # the copy, not the weight
    prefill = torch.randn(2, 5, 64).to(torch.bfloat16)
    assert torch.equal(int8(prefill), linear(prefill))
    last = prefill[:, -1:, :]  # the LM head's input after a prefill: a strided view, one step
    assert torch.equal(int8(last), int8(last.contiguous()))
    assert not torch.equal(int8(last), linear(last))
    wide = _step(9, 64)  # more rows than a decode step of the engine: the weight
    assert torch.equal(int8(wide), linear(wide))
    assert int8.weight is linear.weight and int8.out_features == 48
    with pytest.raises(ValueError, match="multiple of 16"):
        Int8Linear(nn.Linear(40, 8), *quantize_weight(torch.zeros(8, 40)))


def test_a_row_does_not_depend_on_the_rows_beside_it() -> None:
    linear = nn.Linear(640, 256, bias=False).to(torch.bfloat16)
    int8 = Int8Linear(linear, *quantize_weight(linear.weight.detach()))
    batch = _step(8, 640)
    together = int8(batch)
    for row in range(8):
        assert torch.equal(int8(batch[row : row + 1]), together[row : row + 1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_quantizing_leaves_the_models_own_weights_as_they_were(dtype: torch.dtype, tmp_path: Path) -> None:
    """A float32 model's first start (no kept copies yet) quantized its weights in place: the
    model's prefills, and its tied embedding, then read int8 values as weights."""
    model = _Tiny().to(dtype)
    before = {name: parameter.detach().clone() for name, parameter in model.named_parameters()}
    quantize_linears(model, cache_dir=tmp_path)
    assert (tmp_path / CACHE_FILE).is_file()
    for name, parameter in model.named_parameters():
        kept = name.replace(".linear.", ".").replace("lm_head.linear", "lm_head")
        assert torch.equal(parameter, before[kept])


def test_int8_copies_are_kept_beside_the_model_and_read_back(tmp_path: Path) -> None:
    first = _Tiny()
    assert quantize_linears(first, cache_dir=tmp_path) == 2
    assert type(first.get_submodule("model.down")) is nn.Linear  # 37 inputs: the kernel's blocks are 16
    kept = tmp_path / CACHE_FILE
    assert kept.is_file()
    stamp = kept.stat().st_mtime_ns
    second = _Tiny()
    assert quantize_linears(second, cache_dir=tmp_path) == 2
    assert kept.stat().st_mtime_ns == stamp  # read, not written again
    for name in ("model.up", "lm_head"):
        one, two = first.get_submodule(name), second.get_submodule(name)
        assert isinstance(one, Int8Linear) and isinstance(two, Int8Linear)
        assert torch.equal(one.values, two.values) and torch.equal(one.scales, two.scales)
    # Every row count of a decode step, on tensors read from the file (which packs them
    # unaligned: the kernel crashed the process on those before they were copied).
    for rows in range(1, 9):
        step = _step(rows, 64, seed=rows)
        assert torch.equal(second(step), first(step))


def test_a_damaged_or_foreign_kept_file_is_quantized_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kept = tmp_path / CACHE_FILE
    kept.write_bytes(b"not a safetensors file")
    reference = _Tiny()
    quantize_linears(reference)
    with caplog.at_level(logging.WARNING, logger="structured_agents.engines.int8_weights"):
        model = _Tiny()
        quantize_linears(model, cache_dir=tmp_path)
    assert "ignoring the int8 weights" in caplog.text
    step = _step(2, 64)
    assert torch.equal(model(step), reference(step))
    caplog.clear()
    other = nn.Module()  # a model of other shapes finds the file does not fit it
    other.lm_head = nn.Linear(64, 300, bias=False).to(torch.bfloat16)
    with caplog.at_level(logging.WARNING, logger="structured_agents.engines.int8_weights"):
        quantize_linears(other, cache_dir=tmp_path)
    assert "do not fit this model" in caplog.text


def test_quantization_is_resolved_for_the_device_and_dtype() -> None:
    cpu = torch.device("cpu")
    assert resolve_quantization("auto", cpu, "bfloat16") == "int8"
    assert resolve_quantization("auto", cpu, "float16") == "none"
    assert resolve_quantization("none", cpu, "bfloat16") == "none"
    assert resolve_quantization("int8", cpu, "bfloat16") == "int8"
    assert resolve_quantization("int8", cpu, "float32") == "int8"
    with pytest.raises(ConfigError, match="needs device cpu and dtype bfloat16 or float32"):
        resolve_quantization("int8", cpu, "float16")
    with pytest.raises(ConfigError, match="auto, none or int8"):
        resolve_quantization("int4", cpu, "bfloat16")


@pytest.fixture(params=["int4", "onednn"])
def estimate(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way the head is estimated: this project's kernel (which the test command's machine
    builds: it installs a C compiler), and oneDNN's, as on a machine without the kernel."""
    if request.param == "int4":
        if not cpu_has("avx512f"):
            pytest.skip("the CPU has no AVX-512: the kernel is not built here")
        assert native() is not None, "the int8 kernel was not built: see the log of int8_gemv"
    else:
        if not cpu_has(*VNNI):
            pytest.skip("the CPU has no VNNI: the head is not rescored by oneDNN here (see below)")
        monkeypatch.setattr(rescored_head, "native", lambda: None)
    return str(request.param)


def _rescored(vocabulary: int = 3000, seed: int = 3) -> tuple[nn.Linear, nn.Module]:
    model = _Tiny(seed)
    model.lm_head = nn.Linear(64, vocabulary, bias=False)
    model.lm_head.weight.data = torch.randn(vocabulary, 64, generator=torch.Generator().manual_seed(seed)).to(
        torch.bfloat16
    )
    plain = model.lm_head
    quantize_linears(model)
    assert rescore_head(model)
    head = model.get_output_embeddings()
    assert isinstance(head, RescoredHead) and head.weight is plain.weight and head.wait()
    return plain, head


def _estimate_bound(x: torch.Tensor, weight: torch.Tensor, kind: str) -> torch.Tensor:
    """How far the head's estimate of each logit may be from ``x`` by ``weight``: the weight's
    rounding to the estimate's values (the int8 copy regrouped as 4-bit groups where this
    project's kernel estimates, else the int8 copy) and the activations' to int8."""
    values, scales = quantize_weight(weight)
    if kind == "onednn":
        dequantized = values.float() * scales.float().unsqueeze(1)
        activations = x.abs().max() / 127  # one scale for the batch, rounded to a whole step
    else:
        groups = values.float().view(values.shape[0], -1, INT4_GROUP)
        most = groups.abs().amax(dim=2, keepdim=True)
        steps = scales.float().view(-1, 1, 1) * most / 7
        fours = torch.where(most > 0, (groups * 7 / most.clamp(min=1)).round(), 0)
        dequantized = (fours * steps).view_as(values)
        activations = x.abs().max() / 254  # one scale a row, rounded to the nearest
    weight = weight.float()
    return x.norm() * (weight - dequantized).norm(dim=1) + activations * dequantized.abs().sum(dim=1)


def test_the_rescored_head_computes_its_best_estimates_again_from_the_weight(estimate: str) -> None:
    plain, head = _rescored()
    assert isinstance(head, RescoredHead)
    step = _step(5, 64, seed=4)
    got = head(step).reshape(5, -1)
    exact = plain(step).reshape(5, -1).float()  # the plain head: bfloat16 logits
    estimated = head.estimate(step.reshape(5, 64))
    assert estimated is not None
    assert got.dtype == torch.float32 and got.shape == exact.shape == estimated.shape
    x = step.reshape(5, 64).float()
    for row in range(5):
        rescored = torch.topk(estimated[row], EXACT).indices  # the estimate's best carry exact logits
        assert torch.allclose(got[row, rescored], exact[row, rescored], rtol=2**-7, atol=1e-3)
        others = torch.ones_like(got[row], dtype=torch.bool)
        others[rescored] = False
        assert torch.equal(got[row, others], estimated[row, others])  # every other logit is the estimate
        bound = _estimate_bound(x[row], plain.weight.detach(), estimate) + 1e-3 * exact[row].abs() + 1e-3
        assert bool(((estimated[row] - exact[row]).abs() <= bound).all())
        assert int(exact[row].argmax()) in rescored.tolist()


def test_the_rescored_head_multiplies_by_the_weight_outside_a_decode_step(estimate: str) -> None:
    plain, head = _rescored()
    prefill = torch.randn(2, 5, 64).to(torch.bfloat16)
    assert torch.equal(head(prefill), plain(prefill))
    wide = _step(9, 64)
    assert torch.equal(head(wide), plain(wide))


def test_a_decode_step_waits_for_the_heads_packing_which_the_load_does_not(estimate: str) -> None:
    """The engine's load returns while the head is packed on a thread of its own: the first
    decode step waits for the packing, then rescores as a head packed in advance does."""
    _, packed_head = _rescored()
    assert isinstance(packed_head, RescoredHead)
    model = _Tiny(3)
    model.lm_head = nn.Linear(64, 3000, bias=False)
    model.lm_head.weight.data = packed_head.weight.data
    quantize_linears(model)
    copy = model.get_output_embeddings()
    assert isinstance(copy, Int8Linear)
    pending: Future[Any] = Future()
    head = RescoredHead(copy, pending)
    step = _step(3, 64, seed=6)
    done: list[torch.Tensor] = []
    decoding = threading.Thread(target=lambda: done.append(head(step)))
    decoding.start()
    decoding.join(0.3)
    assert decoding.is_alive() and not done  # waiting for the packing
    pending.set_result(packed_head._estimate.result())
    decoding.join(10)
    assert done and torch.equal(done[0], packed_head(step))
    prefill = torch.randn(1, 4, 64).to(torch.bfloat16)
    assert torch.equal(RescoredHead(copy, Future())(prefill), copy.linear(prefill))  # no wait outside a step


def test_a_head_this_torch_cannot_pack_decodes_from_its_int8_copy(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A torch without quantized tensors (2.13 deprecates them), on a machine without this
    project's kernel: the head is still rescored in name, and its decode steps multiply by the
    int8 copy, every row alone."""
    monkeypatch.setattr(rescored_head, "native", lambda: None)
    monkeypatch.setattr(rescored_head, "cpu_has", lambda *_: True)

    def missing(*_: object) -> torch.Tensor:
        raise RuntimeError("quantized tensors are gone")

    model = _Tiny(4)
    quantize_linears(model)
    copy = model.get_output_embeddings()
    assert isinstance(copy, Int8Linear)
    monkeypatch.setattr(torch, "_make_per_channel_quantized_tensor", missing)
    with caplog.at_level(logging.WARNING):
        assert rescore_head(model)
    head = model.get_output_embeddings()
    assert isinstance(head, RescoredHead) and not head.wait()
    assert "keeps its int8 copy" in caplog.text
    step = _step(4, 64, seed=7)
    assert torch.equal(head(step), copy(step))


def test_without_the_kernel_or_vnni_the_head_decodes_from_its_int8_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An AVX2 CPU (an AMD EPYC): oneDNN's estimate there strayed past the rescoring's bound."""
    monkeypatch.setattr(rescored_head, "native", lambda: None)
    monkeypatch.setattr(rescored_head, "cpu_has", lambda *_: False)
    model = _Tiny(4)
    quantize_linears(model)
    copy = model.get_output_embeddings()

    assert not rescore_head(model) and model.get_output_embeddings() is copy


def test_only_an_int8_head_is_rescored() -> None:
    model = _Tiny()
    assert not rescore_head(model)  # its head is the plain linear
    assert type(model.get_output_embeddings()) is nn.Linear


def test_rows_that_sample_take_every_logit_from_the_weight_whatever_the_batch(estimate: str) -> None:
    """oneDNN's estimate quantizes the whole batch's activations with one scale; a row that
    samples (``exact_rows``, set by the engine) must not move with its neighbours, and takes
    every logit from the weight whichever estimate the machine has."""
    plain, head = _rescored()
    assert isinstance(head, RescoredHead)
    step = _step(4, 64, seed=5)
    head.exact_rows = frozenset({1})
    got = head(step).reshape(4, -1)
    assert torch.equal(got[1], plain(step[1:2]).reshape(-1).float())
    louder = step.clone()
    louder[0] *= 40  # a neighbour that widens the batch's activation range
    assert torch.equal(head(louder).reshape(4, -1)[1], got[1])
    head.exact_rows = frozenset(range(4))
    assert torch.equal(head(step), plain(step))


def _int8(out_features: int, seed: int, *, bias: bool = False, width: int = 64) -> Int8Linear:
    linear = nn.Linear(width, out_features, bias=bias)
    linear.weight.data = torch.randn(out_features, width, generator=torch.Generator().manual_seed(seed))
    linear = linear.to(torch.bfloat16)
    return Int8Linear(linear, *quantize_weight(linear.weight))


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_shared_copies_give_each_layers_bits_in_one_product_and_add_no_memory(rows: int) -> None:
    layers = [_int8(64, 1), _int8(32, 2), _int8(32, 3)]  # q, k, v of one input
    x = _step(rows, 64)
    alone = [layer(x) for layer in layers]
    shared = share_copies(layers)
    assert shared is not None
    values, scales = shared
    assert values.shape == (128, 64) and scales.shape == (128,)
    for layer in layers:  # each copy is a view of the shared one now
        assert layer.values.untyped_storage().data_ptr() == values.untyped_storage().data_ptr()
    together = int8_product(x.reshape(rows, 64), values, scales).split([64, 32, 32], dim=-1)
    for one, part, layer in zip(alone, together, layers, strict=True):
        assert torch.equal(one.reshape(rows, -1), part)
        assert torch.equal(layer(x), one)  # the layer's own call is unchanged


def test_copies_are_not_shared_with_a_bias_another_input_or_a_plain_linear() -> None:
    assert share_copies([_int8(16, 1), _int8(16, 2, bias=True)]) is None
    assert share_copies([_int8(16, 1), _int8(16, 2, width=32)]) is None
    plain = nn.Linear(64, 16).to(torch.bfloat16)
    assert share_copies([_int8(16, 1), plain]) is None
    assert share_copies([]) is None
    one = _int8(16, 4)
    assert share_copies([one]) == (one.values, one.scales)  # one layer: its own copy, no new tensor


def test_copies_whose_views_would_be_unaligned_are_not_shared() -> None:
    """Scales of 16 bfloat16 rows end 32 bytes in: the next layer's view would crash the kernel."""
    layers = [_int8(16, 1), _int8(16, 2)]
    before = [layer.values for layer in layers]
    assert share_copies(layers) is None
    assert all(layer.values is kept for layer, kept in zip(layers, before, strict=True))
