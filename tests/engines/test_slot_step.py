"""SlotCache and GraphStep: rows decoded in slots give the model's own logits.

The GPU decode loop's step (:mod:`structured_agents.engines.graph_step`) runs here eagerly, on
CPU in float32, over a tiny randomly initialised Gemma 3 (full and sliding-window layers, a
window of 4 so the sliding layers wrap within a few tokens). Each row's logits, in a batch whose
rows join at different times and leave (the last row moving into the gap), must equal what the
model's own forward gives the row decoded alone, up to float noise; a forked slot must continue
as the row would.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
import torch
import transformers
from engines.tiny_gemma import tiny_gemma

from structured_agents.engines.graph_step import GraphStep, bucket
from structured_agents.engines.slot_cache import SlotCache
from structured_agents.engines.slot_stepper import MOST_HELD_STEPS, admitting, slot_capacity
from structured_agents.engines.transformers_engine import cache_kwarg

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine

CAPACITY = 64


@pytest.fixture(scope="module")
def model() -> Any:
    return tiny_gemma()


def _forward(model: Any, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any) -> Any:
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        use_cache=True,
        **{cache_kwarg(model): cache},
    )
    return out.logits[:, -1, :].float()


def _prefill(model: Any, prompts: list[list[int]]) -> tuple[torch.Tensor, Any]:
    """The model's own prefill of the prompts, left padded."""
    width = max(map(len, prompts))
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for j, prompt in enumerate(prompts):
        ids[j, width - len(prompt) :] = torch.tensor(prompt)
        mask[j, width - len(prompt) :] = 1
    cache = transformers.DynamicCache(config=model.config)
    return _forward(model, ids, mask, (mask.cumsum(-1) - 1).clamp(min=0), cache), cache


def _alone(model: Any, prompt: list[int], fed: list[int]) -> list[torch.Tensor]:
    """The model's logits before each fed token, the row decoded alone."""
    logits, cache = _prefill(model, [prompt])
    seen = [logits[0]]
    for at, token in enumerate(fed, start=len(prompt)):
        ids = torch.tensor([[token]])
        seen.append(
            _forward(model, ids, torch.ones((1, at + 1), dtype=torch.long), torch.tensor([[at]]), cache)[0]
        )
    return seen


@torch.inference_mode()
def test_rows_in_slots_decode_as_they_would_alone(model: Any) -> None:
    prompts = {"long": list(range(1, 10)), "short": [7, 3, 5], "late": [11, 12, 13, 14, 15, 16, 17]}
    fed = [21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]
    alone = {name: _alone(model, prompt, fed) for name, prompt in prompts.items()}
    cache = SlotCache(
        model.config, slots=4, capacity=CAPACITY, device=torch.device("cpu"), dtype=torch.float32
    )
    step = GraphStep(model, cache, graphs=False)

    rows = ["long", "short"]  # prefilled together: the short one right padded
    logits = step.prefill([prompts[name] for name in rows], first=0)
    for k, name in enumerate(rows):
        torch.testing.assert_close(logits[k], alone[name][0])
    done = {name: 0 for name in prompts}
    for turn in range(10):
        if turn == 3:  # a row joins mid-flight, prefilled on its own
            logits = step.prefill([prompts["late"]], first=len(rows))
            rows.append("late")
            torch.testing.assert_close(logits[0], alone["late"][0])
        if turn == 6:  # the first row leaves: the last one moves into its slot
            length = max(len(prompts[name]) + done[name] for name in rows)
            cache.move([len(rows) - 1], [0], length)
            rows = [rows[-1], *rows[1:-1]]
        ids = torch.tensor([fed[done[name]] for name in rows])
        positions = torch.tensor([len(prompts[name]) + done[name] for name in rows])
        logits = step(ids, positions, int(positions.max()) + 1)
        for k, name in enumerate(rows):
            done[name] += 1
            torch.testing.assert_close(logits[k], alone[name][done[name]], msg=f"{name} at turn {turn}")
    assert done == {"long": 6, "short": 10, "late": 7}


@torch.inference_mode()
def test_a_prefill_bucket_pads_into_the_scratch_slot(model: Any) -> None:
    """Three prompts joining one live row prefill as a bucket of four: the fourth row writes to
    the scratch slot, not to the live row's slot, and every row decodes as it would alone."""
    prompts = [list(range(1, 10)), [7, 3, 5], [11, 12, 13, 14, 15, 16, 17], [2, 4]]
    fed = [21, 22, 23, 24]
    cache = SlotCache(
        model.config, slots=4, capacity=CAPACITY, device=torch.device("cpu"), dtype=torch.float32
    )
    step = GraphStep(model, cache, graphs=False)
    step.prefill(prompts[:1], first=0)
    kept = cache.kv[:, :, 0].clone()
    logits = step.prefill(prompts[1:], first=1)
    assert torch.equal(cache.kv[:, :, 0], kept)
    alone = [_alone(model, prompt, fed) for prompt in prompts]
    for k in range(3):
        torch.testing.assert_close(logits[k], alone[k + 1][0])
    for done in range(len(fed)):
        positions = torch.tensor([len(p) + done for p in prompts])
        logits = step(torch.tensor([fed[done]] * 4), positions, int(positions.max()) + 1)
        for k in range(4):
            torch.testing.assert_close(logits[k], alone[k][done + 1])


@torch.inference_mode()
def test_a_forked_slot_continues_as_the_row_would(model: Any) -> None:
    prompts = [list(range(1, 10)), [7, 3, 5]]
    fed = [21, 22, 23, 24, 25, 26]
    cache = SlotCache(
        model.config, slots=2, capacity=CAPACITY, device=torch.device("cpu"), dtype=torch.float32
    )
    step = GraphStep(model, cache, graphs=False)
    step.prefill(prompts, first=0)
    for done in range(5):
        step(torch.tensor([fed[done]] * 2), torch.tensor([len(p) + done for p in prompts]), 20)
    forked, mask, next_pos = cache.fork([1, 0], [len(p) + 5 for p in reversed(prompts)], model.config)
    assert next_pos.tolist() == [[8], [14]] and mask.sum(dim=1).tolist() == [8, 14]
    ids = torch.tensor([[fed[5]]] * 2)
    got = _forward(
        model, ids, torch.cat([mask, torch.ones((2, 1), dtype=torch.long)], dim=1), next_pos, forked
    )
    for k, prompt in enumerate(reversed(prompts)):
        torch.testing.assert_close(got[k], _alone(model, prompt, fed)[6])


def test_a_fork_keeps_its_mask_and_positions_on_the_host(model: Any) -> None:
    """As :class:`KVBatch` keeps them, wherever the cache is: the review adds host positions to
    them (on CUDA a fork's device positions made every review fail). A cache on the ``meta``
    device stands in for one on a GPU."""
    cache = SlotCache(model.config, slots=2, capacity=16, device=torch.device("meta"), dtype=torch.float32)
    forked, mask, next_pos = cache.fork([1, 0], [5, 3], model.config)
    assert mask.device.type == next_pos.device.type == "cpu"
    assert next_pos.tolist() == [[5], [3]] and mask.tolist() == [[1] * 5, [0, 0, 1, 1, 1]]
    assert forked.layers[1].keys.device.type == "meta"


def test_buckets_and_capacity(model: Any) -> None:
    assert [bucket(n, most=64) for n in (1, 2, 3, 5, 33, 64, 65)] == [1, 2, 4, 8, 64, 64, 64]
    assert bucket(100, least=128, most=4096) == 128 and bucket(700, least=128, most=4096) == 1024
    per = SlotCache.bytes_per_position(model.config, torch.bfloat16)
    assert per == 2 * 3 * 1 * 16 * 2
    long = model.config.to_dict() | {"max_position_embeddings": 32768}
    config = transformers.Gemma3TextConfig(**long)
    # the model's whole context where a quarter of the free memory holds it, else what it holds
    assert slot_capacity(config, slots=4, dtype=torch.bfloat16, free_bytes=1 << 40) == 32768
    assert slot_capacity(config, slots=4, dtype=torch.bfloat16, free_bytes=4 * 4 * per * 2100) == 2048
    assert slot_capacity(config, slots=4, dtype=torch.bfloat16, free_bytes=0) == 256
    assert slot_capacity(model.config, slots=4, dtype=torch.bfloat16, free_bytes=0) == 128


@pytest.mark.model
def test_prefill_results_are_copied_before_the_next_prefill(engine: TransformersEngine) -> None:
    """A captured prefill returns its graph's output buffer, which the next replay of that
    graph overwrites: prompts of 130 and 250 tokens fall in different prefill groups but one
    bucket. Here every prefill returns a view of one shared buffer, as such a replay would."""
    from engines.slot_loop import slot_loop

    from structured_agents.kernel.engine import GenerationRequest, SamplingParams

    code = engine.tokenizer("\n".join(f"value_{k} = {k} * {k}" for k in range(200)))["input_ids"]
    prose = engine.tokenizer(" ".join(["the cat sat on the mat and looked at the dog"] * 40))["input_ids"]
    prompts = [engine.tokenizer.decode(code[1:130]), engine.tokenizer.decode(prose[1:250])]
    requests = [GenerationRequest(p, sampling=SamplingParams(max_new_tokens=2)) for p in prompts]
    lengths = [len(engine.tokenizer(p)["input_ids"]) for p in prompts]
    assert all(128 < n <= 256 for n in lengths) and lengths[1] > 1.5 * lengths[0] + 32  # two groups
    with slot_loop(engine) as stepper:
        alone = [engine.generate([request])[0].text for request in requests]
        prefill, shared = stepper.graph.prefill, torch.empty(0)

        def replayed(prompts: list[list[int]], first: int) -> torch.Tensor:
            nonlocal shared
            out = prefill(prompts, first)
            shared = torch.empty((16, out.shape[1])) if shared.numel() == 0 else shared
            shared[: len(out)] = out
            return shared[: len(out)]

        stepper.graph.prefill = replayed  # type: ignore[method-assign]
        together = [c.text for c in engine.generate(requests)]
    assert together == alone


def test_rows_join_in_groups_unless_they_waited() -> None:
    """An admission is a prefill pass: at 64 slots rows join 16 at a time, unless the batch is
    empty or the free slots have been held back for MOST_HELD_STEPS steps."""
    assert admitting(64, 0, 0) == 64
    assert admitting(64, 49, 0) == 0 and admitting(64, 48, 0) == 16 and admitting(64, 10, 0) == 54
    assert admitting(64, 63, MOST_HELD_STEPS - 1) == 0 and admitting(64, 63, MOST_HELD_STEPS) == 1
    assert admitting(8, 7, 0) == 0 and admitting(8, 6, 0) == 2
    assert admitting(3, 2, 0) == 1  # at 7 slots or fewer, every free slot takes a row at once
    assert admitting(64, 64, MOST_HELD_STEPS) == 0


def test_a_prompt_past_the_capacity_is_refused(model: Any) -> None:
    cache = SlotCache(model.config, slots=2, capacity=16, device=torch.device("cpu"), dtype=torch.float32)
    with pytest.raises(ValueError, match="17-token prompt is past the cache's 16"):
        GraphStep(model, cache, graphs=False).prefill([[1] * 17], first=0)


def test_the_step_is_for_causal_gemma_3_only() -> None:
    from types import SimpleNamespace

    def model(**config: object) -> object:
        return SimpleNamespace(config=SimpleNamespace(**{"model_type": "gemma3_text", **config}))

    assert GraphStep.of(model())
    assert not GraphStep.of(model(model_type="llama"))
    assert not GraphStep.of(model(use_bidirectional_attention=True))
    assert not GraphStep.of(model(final_logit_softcapping=30.0))
    assert not GraphStep.of(model(attn_logit_softcapping=50.0))


@pytest.mark.model
def test_the_slot_loop_keeps_every_row_in_its_grammar(engine: TransformersEngine) -> None:
    """Through the slot loop on the real model: rows of different lengths leave at different
    steps (the last rows moving into their slots), a cancelled row leaves at once, rows join
    rows already decoding (only the new rows' bitmasks filled, unless the bitmask grew), and
    every constrained row that ends says a tool call of the grammar."""
    from engines.slot_loop import slot_loop

    from structured_agents.grammar.config import GrammarConfig
    from structured_agents.kernel.engine import GenerationRequest, SamplingParams
    from structured_agents.plugins import get_plugin
    from structured_agents.types import ToolSchema

    tools = [
        ToolSchema(name, f"The {name} tool.", {"type": "object", "properties": {"path": {"type": "string"}}})
        for name in ("read_file", "delete_file")
    ]
    grammar = get_plugin("function_gemma").build_grammar(tools, GrammarConfig(mode="json_schema"))
    asks = ["Call the tool that reads src/app.py:", "Call the tool that deletes notes.txt:"]
    requests = [
        GenerationRequest(asks[k % 2], grammar=grammar, sampling=SamplingParams(max_new_tokens=n))
        for k, n in enumerate((6, 40, 12, 40, 3))
    ]
    requests.append(GenerationRequest("def add(a, b):", sampling=SamplingParams(max_new_tokens=9)))
    assert engine.loop == "eager"  # on CPU; CUDA takes the slot loop by itself
    with slot_loop(engine) as stepper:
        assert engine.loop == "slot"
        cancelled = engine.submit(
            GenerationRequest("Count to a thousand:", sampling=SamplingParams(max_new_tokens=200))
        )
        cancelled.cancel()
        first = [engine.submit(r) for r in requests[1::2]]  # constrained rows already decoding ...
        while sum(len(row.tokens) for row in stepper.rows) < 2:
            time.sleep(0.005)
        done = engine.generate(requests)  # ... when these join (their bitmasks filled alone)
        done += [stream.result() for stream in first]
        assert stepper.live() == 0
    requests += requests[1::2]
    for request, completion in zip(requests, done, strict=True):
        assert completion.finish_reason in ("grammar", "length", "stop"), completion.text
        assert completion.usage.completion_tokens <= request.sampling.max_new_tokens
        if completion.finish_reason == "grammar":
            call = json.loads(completion.text)
            assert call["name"] in {"read_file", "delete_file"}
        if completion.finish_reason == "length":
            assert completion.usage.completion_tokens == request.sampling.max_new_tokens
    assert cancelled.cancelled
