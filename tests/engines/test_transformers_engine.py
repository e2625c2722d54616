"""TransformersEngine: row stop rules, masking and sampling (fast), then the real model (``-m model``).

The model tests share one engine (``conftest.engine``) and decode few, short, batched requests.
Prompts carry a few worked examples: the default model is a base model.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING
from unittest.mock import patch

import pytest
import torch
import xgrammar
from torch import nn

import structured_agents.engines.logits as logits_module
from structured_agents.engines.bad_words import bad_word_ids, ban_bad_words
from structured_agents.engines.int8_gemv import cpu_has, native
from structured_agents.engines.int8_weights import CACHE_FILE, Int8Linear
from structured_agents.engines.lean_step import LeanStep
from structured_agents.engines.logits import NO_TOKEN, GrammarMasker, penalize, select_tokens
from structured_agents.engines.model_store import ModelStore
from structured_agents.engines.packed_attention import NAME as PACKED
from structured_agents.engines.rescored_head import VNNI, RescoredHead
from structured_agents.engines.rows import Row, find_stop
from structured_agents.engines.transformers_engine import resolve_device, resolve_dtype
from structured_agents.errors import ConfigError
from structured_agents.grammar.artifacts import EBNFGrammar, JsonSchemaGrammar
from structured_agents.grammar.check import grammar_problem
from structured_agents.grammar.config import GrammarConfig, GrammarMode
from structured_agents.kernel.engine import GenerationRequest, SamplingParams
from structured_agents.plugins import get_plugin
from structured_agents.types import Message, ToolCall, ToolSchema

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine


def _params(**props: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {key: {"type": "string", "description": text} for key, text in props.items()},
        "required": list(props),
    }


TOOLS = [
    ToolSchema("read_file", "Read a file of the repository and return its text.", _params(path="file path")),
    ToolSchema("search_code", "Search the codebase for a text.", _params(query="text to search for")),
    ToolSchema("write_file", "Write text into a file.", _params(path="file path", content="new text")),
    ToolSchema("finish", "End the task and report a summary.", _params(summary="what was done")),
]
TOOL_NAMES = {tool.name for tool in TOOLS}
EXAMPLES = [
    ("Read the file docs/setup.md", ToolCall("read_file", {"path": "docs/setup.md"}, "c1")),
    ("Search the code for the word deprecated", ToolCall("search_code", {"query": "deprecated"}, "c2")),
    (
        "Put the text done into status.txt",
        ToolCall("write_file", {"content": "done", "path": "status.txt"}, "c3"),
    ),
    (
        "That is all, report that the docs were updated",
        ToolCall("finish", {"summary": "Docs updated."}, "c4"),
    ),
]


def _conversation(task: str) -> list[Message]:
    messages = [
        Message.system("You are a coding agent. Answer every request with exactly one function call.")
    ]
    for user, call in EXAMPLES:
        messages += [Message.user(user), Message.assistant(None, (call,))]
    return [*messages, Message.user(task)]


def _row(*, max_new_tokens: int = 8, stop: tuple[str, ...] = ()) -> Row:
    sampling = SamplingParams(max_new_tokens=max_new_tokens, stop=stop)
    return Row(0, GenerationRequest(prompt="p", sampling=sampling), [1, 2])


def _decode(tokens: Sequence[int]) -> str:
    return "".join(chr(ord("a") + t) for t in tokens)


def _advance(
    row: Row, token: int, *, accepted: bool = True, terminated: bool = False, constrained: bool = False
) -> None:
    row.advance(
        token,
        accepted=accepted,
        terminated=terminated,
        constrained=constrained,
        stop_token_ids={25},
        decode=_decode,
    )


# -- rows, masking and sampling (no model) ---------------------------------------------------------


def test_find_stop_returns_the_earliest_match() -> None:
    assert find_stop("abcdef", ("ef", "cd")) == (2, "cd")
    assert find_stop("abc", ("x", "")) is None


def test_row_stops_on_a_stop_string_and_cuts_it_off() -> None:
    row = _row(stop=("cd",))
    for token in (0, 1, 2, 3, 4):
        if not row.finished:
            _advance(row, token)
    assert (row.finish_reason, row.text, row.stop, row.sampled) == ("stop", "ab", "cd", 4)
    assert row.completion(latency_s=1.0, batch_size=3).metadata == {"stop": "cd"}


def test_row_finishes_on_length_stop_token_grammar_and_rejection() -> None:
    row = _row(max_new_tokens=2)
    _advance(row, 0)
    _advance(row, 1)
    assert (row.finish_reason, row.text) == ("length", "ab")
    row = _row(max_new_tokens=8)
    row.budget = 1  # the model's context ends before max_new_tokens
    _advance(row, 0)
    assert (row.finish_reason, row.text) == ("length", "a")
    row = _row()
    _advance(row, 0)
    _advance(row, 25)  # an unconstrained row's stop token ends it and stays out of the text
    completion = row.completion(latency_s=0.5, batch_size=2)
    assert (completion.finish_reason, completion.text, completion.usage.completion_tokens) == ("stop", "a", 2)
    assert (completion.usage.prompt_tokens, completion.batch_size, completion.latency_s) == (2, 2, 0.5)
    row = _row()
    _advance(row, 0, constrained=True)
    _advance(row, 25, constrained=True, terminated=True)
    assert (row.finish_reason, row.text) == ("grammar", "a")
    row = _row()
    _advance(row, 3, accepted=False, constrained=True)
    assert row.finish_reason == "error" and "rejected token 3" in row.text


def _masker(grammar: str | None, *, vocab_size: int = 4) -> GrammarMasker:
    info = xgrammar.TokenizerInfo(["a", "b", "ab", "</s>"], vocab_size=vocab_size, stop_token_ids=[3])
    compiled = None if grammar is None else xgrammar.GrammarCompiler(info).compile_grammar(grammar)
    return GrammarMasker([None, compiled], vocab_size=vocab_size, stop_token_ids=[3])


def test_masker_fills_and_masks_only_constrained_rows_and_ids_beyond_the_vocabulary() -> None:
    masker = _masker('root ::= "ab"')
    assert masker.live([0, 1]) == [1]
    masker.fill([0, 1], [1])
    logits = torch.zeros((2, 6))  # the model's logits are wider than the vocabulary
    masker.mask(logits, [1])
    assert torch.isfinite(logits[0]).all()
    assert torch.isfinite(logits[1]).tolist() == [True, False, True, False, False, False]
    with pytest.raises(ValueError, match="unconstrained row"):
        masker.fill([0, 1], [0])
    assert masker.accept(1, 2) and not masker.is_terminated(1)
    assert masker.live([1]) == [0]  # the compacted batch: position 0 is batch row 1
    assert masker.accept(1, 3) and masker.is_terminated(1) and masker.live([0, 1]) == []
    assert not masker.accept(1, 0) and masker.accept(0, 1) and not masker.constrained(0)


def test_first_accepted_tries_candidates_in_order_and_accepts_once() -> None:
    masker = _masker('root ::= "a" "b"')
    assert masker.first_accepted(1, [1, 5, 3]) is None  # "b" first is wrong, 5 is no token, no stop yet
    assert masker.first_accepted(1, [1, 0, 2]) == 0  # "b" is rejected, "a" taken
    assert masker.accept(1, 0)  # already accepted: not advanced twice
    assert masker.first_accepted(1, [0, 1]) == 1 and masker.accept(1, 1)
    assert masker.first_accepted(1, [0, 3]) == 3 and masker.accept(1, 3) and masker.is_terminated(1)
    assert masker.first_accepted(0, [2, 1]) == 2  # an unconstrained row takes its best


def test_a_forced_text_the_model_does_not_expect_is_taken_through_the_mask() -> None:
    texts = ["a", "b", "ab", "</s>", "<", "<s", "s>", ">a"]
    info = xgrammar.TokenizerInfo(texts, stop_token_ids=[3])
    compiled = xgrammar.GrammarCompiler(info).compile_grammar('root ::= "<s>" ("a" | "b")')
    masker = GrammarMasker([compiled], vocab_size=8, stop_token_ids=[3])
    logits = torch.tensor([[9.0, 8.0, 7.0, 6.0, 1.0, 2.0, 0.0, -1.0]])

    with patch.object(logits_module, "_CANDIDATES", 4):  # "a", "b", "ab", "</s>": none fits
        assert select_tokens(logits, [0], masker, [SamplingParams()], [None]) == [5]  # "<s" beats "<"
        assert torch.isfinite(logits).all()  # the bitmask was read, not applied to the whole row


def test_the_bitmask_decides_among_ids_in_every_bit_of_a_word() -> None:
    """Bit 31 of a bitmask word is its sign bit: token 31 (and 63) must still be read as allowed."""
    texts = [f"t{i}" for i in range(64)]
    texts[31], texts[63], texts[0] = "z", "y", "</s>"
    info = xgrammar.TokenizerInfo(texts, stop_token_ids=[0])
    compiled = xgrammar.GrammarCompiler(info).compile_grammar('root ::= "z" | "y"')
    logits = torch.arange(64, dtype=torch.float32).flip(0).unsqueeze(0).repeat(2, 1)  # low ids best
    logits[1, 63] = logits[1, 31]  # a tie: the lower id, as an argmax over the masked row
    for row, expected in ((0, 31), (1, 31)):
        masker = GrammarMasker([compiled], vocab_size=64, stop_token_ids=[0])
        with patch.object(logits_module, "_CANDIDATES", 2):
            assert select_tokens(logits[row : row + 1].clone(), [0], masker, [SamplingParams()], [None]) == [
                expected
            ]
    masker = GrammarMasker([compiled], vocab_size=64, stop_token_ids=[0])
    only_y = logits[:1].clone()
    only_y[0, 31] = float("-inf")  # banned: the grammar's other token
    with patch.object(logits_module, "_CANDIDATES", 2):
        assert select_tokens(only_y, [0], masker, [SamplingParams()], [None]) == [63]


def test_a_bitmask_allowing_many_tokens_gives_the_best_of_them_from_either_path() -> None:
    """Past 2048 allowed tokens the row's best tokens are read against the bitmask first; where
    none of them is allowed, its set bits decide: the same token either way."""
    texts = ["</s>", "bad"] + [f"x{i}" for i in range(4094)]
    info = xgrammar.TokenizerInfo(texts, stop_token_ids=[0])
    compiled = xgrammar.GrammarCompiler(info).compile_grammar('root ::= "x" [0-9]+')
    logits = torch.zeros(1, 4096)
    logits[0, 1] = 9.0  # "bad": the argmax, refused
    logits[0, [3000, 2000, 777]] = torch.tensor([5.0, 7.0, 7.0])  # a tie: the lower id
    for candidates, expected in ((64, 777), (1, 777)):  # 1: "bad" alone is read, then the bits
        masker = GrammarMasker([compiled], vocab_size=4096, stop_token_ids=[0])
        with patch.object(logits_module, "_CANDIDATES", candidates):
            assert select_tokens(logits.clone(), [0], masker, [SamplingParams()], [None]) == [expected]
    banned = logits.clone()
    banned[0, 2:] = float("-inf")  # every allowed token banned
    masker = GrammarMasker([compiled], vocab_size=4096, stop_token_ids=[0])
    assert select_tokens(banned, [0], masker, [SamplingParams()], [None]) == [NO_TOKEN]


def test_a_row_whose_grammar_allows_no_token_gets_no_token() -> None:
    texts = ["a", "b", "</s>"]
    info = xgrammar.TokenizerInfo(texts, stop_token_ids=[2])
    compiled = xgrammar.GrammarCompiler(info).compile_grammar('root ::= "z"')  # no token spells it
    masker = GrammarMasker([compiled, None], vocab_size=3, stop_token_ids=[2])
    logits = torch.tensor([[1.0, 2.0, 0.0], [1.0, 2.0, 0.0]])
    assert select_tokens(logits, [0, 1], masker, [SamplingParams()] * 2, [None, None]) == [NO_TOKEN, 1]
    warm = SamplingParams(temperature=1.0, seed=1)
    masker = GrammarMasker([compiled], vocab_size=3, stop_token_ids=[2])
    assert select_tokens(logits[:1].clone(), [0], masker, [warm], [torch.Generator().manual_seed(1)]) == [
        NO_TOKEN
    ]


def test_frequency_penalty_lowers_each_token_once_per_time_it_was_generated() -> None:
    logits = torch.zeros((3, 4))
    params = [SamplingParams(frequency_penalty=0.5), SamplingParams(), SamplingParams(frequency_penalty=-1)]

    penalize(logits, [[1, 1, 2, 9], [1], [3]], params)  # 9: beyond the logits, ignored

    assert logits.tolist() == [[0.0, -1.0, -0.5, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    with pytest.raises(ConfigError, match="frequency_penalty must be in"):
        SamplingParams(frequency_penalty=2.5)


def test_select_tokens_is_greedy_at_zero_temperature_and_seeded_otherwise() -> None:
    logits = torch.tensor([[0.0, 3.0, 1.0], [1.0, 1.0, 1.2]])
    greedy = SamplingParams()
    free = _masker(None)
    assert select_tokens(logits, [0, 0], free, [greedy, greedy], [None, None]) == [1, 2]
    warm = SamplingParams(temperature=1.0, seed=7)
    draws = {
        select_tokens(logits, [0, 0], free, [greedy, warm], [None, torch.Generator().manual_seed(7)])[1]
        for _ in range(3)
    }
    assert len(draws) == 1
    nucleus = SamplingParams(temperature=1.0, top_p=0.01)
    assert select_tokens(
        logits, [0, 0], free, [nucleus, greedy], [torch.Generator().manual_seed(1), None]
    ) == [1, 2]


def test_select_tokens_masks_sampling_rows_and_greedy_rows_only_when_needed() -> None:
    masker = _masker('root ::= "b" | "ab"')
    logits = torch.tensor([[0.0, 5.0, 1.0, 0.0], [0.0, 5.0, 1.0, 0.0]])
    assert select_tokens(logits, [0, 1], masker, [SamplingParams()] * 2, [None, None]) == [1, 1]
    masker = _masker('root ::= "ab"')
    assert select_tokens(logits, [0, 1], masker, [SamplingParams()] * 2, [None, None]) == [1, 2]
    assert torch.isfinite(logits).all()  # greedy: "ab" was found among the best tokens, no mask
    masker = _masker('root ::= "ab"')
    logits = torch.tensor([[0.0, 50.0, 0.0, 0.0], [-50.0, 50.0, 0.0, -50.0]])
    params = [SamplingParams(), SamplingParams(temperature=1.0, seed=3)]
    assert select_tokens(logits, [0, 1], masker, params, [None, torch.Generator().manual_seed(3)]) == [1, 2]
    assert torch.isfinite(logits[1]).tolist() == [True, False, True, False]


def test_device_and_dtype_are_validated() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ConfigError, match="device"):
        resolve_device("tpu")
    assert resolve_dtype("float32", torch.device("cpu")) == "float32"
    with pytest.raises(ConfigError, match="dtype"):
        resolve_dtype("int8", torch.device("cpu"))


_AUTO_CHOICES = """
import torch
from structured_agents.engines.transformers_engine import resolve_dtype, resolve_quantization
cpu = torch.device("cpu")
native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
quantized = [resolve_quantization("auto", cpu, d) for d in ("bfloat16", "float32")]
choices = [resolve_dtype("auto", cpu), *quantized]
print(native, torch.backends.cpu.get_cpu_capability(), *choices)
"""


@pytest.mark.parametrize("capability", [None, "avx2"])
def test_auto_dtype_and_quantization_follow_what_the_cpu_computes_fast(capability: str | None) -> None:
    """bfloat16 where the CPU computes it natively, else float32; int8 copies in bfloat16, and
    in float32 on AVX-512 (the int8 kernel is vectorised there). ATen held to AVX2
    (``ATEN_CPU_CAPABILITY``, read at import) stands in for a CPU without AVX-512, in a child
    process."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if capability is not None:
        env["ATEN_CPU_CAPABILITY"] = capability
    out = subprocess.run(
        [sys.executable, "-c", _AUTO_CHOICES], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    native, found, dtype, in_bfloat16, in_float32 = out[0] == "True", out[1], out[2], out[3], out[4]
    if capability is not None:
        assert found == capability.upper()
    assert dtype == ("bfloat16" if native else "float32")
    assert in_bfloat16 == "int8"
    assert in_float32 == ("int8" if found.startswith("AVX512") else "none")


# -- the real model --------------------------------------------------------------------------------

GRAMMAR_CASES: list[tuple[str, GrammarMode, str]] = [
    ("function_gemma", "ebnf", "Open README.md"),
    ("function_gemma", "structural_tag", "Where is the class UserModel defined?"),
    ("qwen", "structural_tag", "Write print(42) to main.py"),
    ("function_gemma", "json_schema", "We are done. Report that the login bug is fixed."),
]


@pytest.mark.model
def test_four_grammars_in_one_batch_give_valid_calls(engine: TransformersEngine) -> None:
    """Whatever the model writes, the grammar allows it: a whole call when the model stopped,
    a prefix of one when the token limit cut it; and most rows finish their call."""
    _check_four_grammars(engine)


@pytest.mark.model
def test_the_same_requests_decode_the_same_way_again_on_an_idle_engine(engine: TransformersEngine) -> None:
    """A call's rows join the batch together: which rows share a prefill and a step no longer
    depends on when each was ready, so greedy text (whose logits round with the rows beside
    them) repeats exactly."""
    requests = []
    for name, mode, task in GRAMMAR_CASES:
        plugin = get_plugin(name)
        grammar = plugin.build_grammar(TOOLS, GrammarConfig(mode=mode, allow_parallel_calls=False))
        prompt = plugin.render_prompt(_conversation(task), TOOLS)
        sampling = SamplingParams(max_new_tokens=24)
        requests.append(GenerationRequest(prompt, grammar=grammar, sampling=sampling))
    requests += [
        GenerationRequest(text, sampling=SamplingParams(max_new_tokens=24))
        for text in ("def add(a, b):", "The capital of France is", "Write a haiku about rain.", "1, 2, 3,")
    ]
    deadline = time.monotonic() + 30
    while engine.live_rows and time.monotonic() < deadline:  # an earlier test's rows still leaving
        time.sleep(0.05)
    assert engine.live_rows == 0
    first = [completion.text for completion in engine.generate(requests)]
    for _ in range(2):
        assert [completion.text for completion in engine.generate(requests)] == first


@pytest.mark.model
def test_an_int8_engine_decodes_valid_calls_from_int8_copies_kept_beside_the_model(
    engine: TransformersEngine,
) -> None:
    """``quantization="int8"`` (on any CPU): every linear layer the kernel takes decodes from its
    int8 copy (the LM head from an int8 estimate, rescored), the copies are kept beside a
    converted model, and the grammars hold as before."""
    from structured_agents.engines.transformers_engine import TransformersEngine

    int8 = TransformersEngine(engine.model_dir, dtype="bfloat16", quantization="int8")
    try:
        modules = list(int8.model.modules())
        wrapped = {id(m.linear) for m in modules if isinstance(m, Int8Linear | RescoredHead)}
        linears = {id(m) for m in modules if isinstance(m, nn.Linear) and m.in_features % 16 == 0}
        onednn = "onednn" in torch.backends.quantized.supported_engines and cpu_has(*VNNI)
        rescored = native() is not None or onednn
        assert isinstance(int8.model.get_output_embeddings(), RescoredHead if rescored else Int8Linear)
        assert wrapped == linears and len(wrapped) > 100
        if ModelStore.is_entry(engine.model_dir):
            assert (engine.model_dir / CACHE_FILE).is_file()
        _check_four_grammars(int8)
    finally:
        int8.close()


def _check_four_grammars(engine: TransformersEngine) -> None:
    plugins, requests = [], []
    for name, mode, task in GRAMMAR_CASES:
        plugin = get_plugin(name)
        grammar = plugin.build_grammar(TOOLS, GrammarConfig(mode=mode, allow_parallel_calls=False))
        prompt = plugin.render_prompt(_conversation(task), TOOLS)
        plugins.append(plugin)
        requests.append(
            GenerationRequest(prompt, grammar=grammar, sampling=SamplingParams(max_new_tokens=64))
        )
    completions = engine.generate(requests)
    tools = {tool.name: tool for tool in TOOLS}
    finished = 0
    for (name, mode, _), plugin, request, completion in zip(
        GRAMMAR_CASES, plugins, requests, completions, strict=True
    ):
        assert request.grammar is not None
        assert completion.finish_reason in ("grammar", "length"), (name, mode, completion)
        complete = completion.finish_reason == "grammar"
        assert grammar_problem(request.grammar, completion.text, complete=complete) is None, completion
        assert 1 <= completion.batch_size <= min(4, engine.max_batch_size)
        assert completion.usage.prompt_tokens > 100
        if complete:
            finished += 1
            _, calls = plugin.parse_response(completion.text, TOOLS)
            assert len(calls) == 1, (name, mode, completion.text)
            assert calls[0].name in tools
            assert set(tools[calls[0].name].required) <= set(calls[0].arguments), (name, mode, calls)
    assert finished >= 3, completions


@pytest.mark.model
def test_mixed_batch_in_chunks_with_limits_stops_and_a_bad_grammar(engine: TransformersEngine) -> None:
    plugin = get_plugin("function_gemma")
    schema = plugin.build_grammar(TOOLS, GrammarConfig(mode="json_schema", allow_parallel_calls=False))
    assert isinstance(schema, JsonSchemaGrammar)
    counting = EBNFGrammar('root ::= " 5, 6, 7, 8, 9"')  # the stop string is certain to come
    requests = [
        GenerationRequest(
            plugin.render_prompt(_conversation("Show me src/app.py"), TOOLS),
            grammar=schema,
            sampling=SamplingParams(max_new_tokens=96),
        ),
        GenerationRequest("The capital of France is", sampling=SamplingParams(max_new_tokens=4)),
        GenerationRequest(
            "1, 2, 3, 4,", grammar=counting, sampling=SamplingParams(max_new_tokens=16, stop=(" 7",))
        ),
        GenerationRequest("Hello", grammar=EBNFGrammar("root ::= undefined_rule")),
    ]
    size = engine.max_batch_size
    engine.max_batch_size = 2
    try:
        completions = engine.generate(requests)
    finally:
        engine.max_batch_size = size
    call, length, stopped, broken = completions
    assert call.finish_reason in ("grammar", "length")
    assert grammar_problem(schema, call.text, complete=call.finish_reason == "grammar") is None
    if call.finish_reason == "grammar":
        assert plugin.parse_response(call.text, TOOLS)[1][0].name in TOOL_NAMES
    assert (length.finish_reason, length.usage.completion_tokens) == ("length", 4)
    assert stopped.finish_reason == "stop" and stopped.metadata == {"stop": " 7"}
    assert stopped.text == " 5, 6,"
    assert broken.finish_reason == "error" and "request 3" in broken.text
    assert all(1 <= c.batch_size <= 2 for c in (call, length, stopped))
    assert [c.request_id for c in completions] == [r.request_id for r in requests]


@pytest.mark.model
def test_same_seed_gives_the_same_sample(engine: TransformersEngine) -> None:
    schema = get_plugin("function_gemma").build_grammar(TOOLS, GrammarConfig(mode="json_schema"))
    requests = [
        GenerationRequest(
            "Once upon a time",
            sampling=SamplingParams(max_new_tokens=8, temperature=1.0, top_p=0.9, seed=1234),
        ),
        GenerationRequest(
            "Call a tool:",
            grammar=schema,
            sampling=SamplingParams(max_new_tokens=8, temperature=0.8, seed=5),
        ),
    ]
    first = engine.generate(requests)
    second = engine.generate(requests)
    assert [c.text for c in first] == [c.text for c in second]
    assert all(c.usage.completion_tokens == 8 for c in first)


@pytest.mark.model
def test_a_local_hf_model_directory_loads_from_the_cache_quickly(engine: TransformersEngine) -> None:
    from structured_agents.engines.transformers_engine import TransformersEngine

    started = time.perf_counter()
    local = TransformersEngine(engine.model_dir, dtype=engine.dtype)
    elapsed = time.perf_counter() - started
    assert local.model_dir == engine.model_dir
    assert elapsed < 60, f"loading from the cache took {elapsed:.1f} s"  # about 5 s on an idle 2-core CPU
    request = GenerationRequest("The capital of France is", sampling=SamplingParams(max_new_tokens=6))
    assert local.generate([request])[0].text == engine.generate([request])[0].text


@pytest.mark.model
def test_a_request_joins_a_running_batch_and_both_stream(decoding: TransformersEngine) -> None:
    engine = decoding
    plugin = get_plugin("function_gemma")
    grammar = plugin.build_grammar(TOOLS, GrammarConfig(mode="ebnf", allow_parallel_calls=False))
    first = engine.submit(GenerationRequest("1, 2, 3, 4,", sampling=SamplingParams(max_new_tokens=40)))
    deltas = iter(first)
    early = [next(deltas), next(deltas)]  # the first request is decoding
    before = engine.stats.copy()
    call = engine.submit(
        GenerationRequest(plugin.render_prompt(_conversation("Open README.md"), TOOLS), grammar=grammar)
    )
    streamed = "".join(delta.text for delta in call)
    completion = call.result()
    assert completion.finish_reason == "grammar" and streamed == completion.text
    assert [c.name for c in plugin.parse_response(completion.text, TOOLS)[1]] in [
        [name] for name in TOOL_NAMES
    ]
    text = "".join(delta.text for delta in [*early, *deltas])
    assert text == first.result().text and first.result().usage.completion_tokens == 40
    shared = engine.stats.since(before)
    assert shared.row_steps > shared.steps  # some steps decoded both rows together


@pytest.mark.model
def test_a_cancelled_request_leaves_the_batch(decoding: TransformersEngine) -> None:
    engine = decoding
    stream = engine.submit(GenerationRequest("Once upon a time", sampling=SamplingParams(max_new_tokens=200)))
    next(iter(stream))
    assert engine.live_rows == 1
    steps = engine.stats.steps
    assert stream.cancel()
    deadline = time.monotonic() + 30
    while engine.live_rows and time.monotonic() < deadline:
        time.sleep(0.01)
    assert engine.live_rows == 0 and engine.stats.steps - steps < 100
    with pytest.raises(CancelledError):
        stream.result()


def test_bad_words_are_split_as_they_start_a_text_and_after_a_space() -> None:
    spelled = {"stack of items.": [7, 8, 9], " stack of items.": [17, 8, 9], "stack": [7], " stack": [17]}

    assert bad_word_ids(["stack of items.", "stack"], spelled.__getitem__) == (
        (7, 8, 9),
        (17, 8, 9),
        (7,),
        (17,),
    )
    assert bad_word_ids([" stack"], spelled.__getitem__) == ((17,),)  # mid-sentence only


def test_the_token_that_would_complete_a_bad_word_is_banned() -> None:
    logits = torch.zeros((3, 20))
    banned = [((7, 8, 9), (4,)), ((7, 8, 9),), ((7, 8, 30),)]  # 30: beyond the logits, ignored

    ban_bad_words(logits, [[1, 7, 8], [7, 1, 8], [7, 8]], banned)

    assert torch.isinf(logits[0, 9]) and torch.isinf(logits[0, 4])  # a one-token word: always
    assert not torch.isinf(logits[1]).any() and not torch.isinf(logits[2]).any()  # 7, 8 not last


def _occurs(part: Sequence[int], tokens: Sequence[int]) -> bool:
    return any(tuple(tokens[i : i + len(part)]) == tuple(part) for i in range(len(tokens) - len(part) + 1))


@pytest.mark.model
def test_a_bad_word_is_never_generated(engine: TransformersEngine) -> None:
    prompt = "The capital of France is the city of Paris. The capital of France is"
    sampling = SamplingParams(max_new_tokens=8, logprobs=0)
    (free,) = engine.generate([GenerationRequest(prompt, sampling=sampling)])
    word = next(scored.token.strip() for scored in free.logprobs if scored.token.strip())

    banned = SamplingParams(max_new_tokens=8, logprobs=0, bad_words=(word,))
    (kept_out,) = engine.generate([GenerationRequest(prompt, sampling=banned)])

    tokens = [scored.token_id for scored in kept_out.logprobs]
    sequences = bad_word_ids(
        [word], lambda text: engine.tokenizer(text, add_special_tokens=False)["input_ids"]
    )
    assert sequences and not any(_occurs(sequence, tokens) for sequence in sequences), (word, kept_out.text)


@pytest.mark.model
def test_rows_with_the_same_prompt_share_one_prefill_and_decode_as_alone(engine: TransformersEngine) -> None:
    prompts = ["The capital of France is", "def add(a, b):\n    return"]
    sampling = SamplingParams(max_new_tokens=6, logprobs=0)
    alone = [engine.generate([GenerationRequest(p, sampling=sampling)])[0] for p in prompts]
    before = engine.stats.copy()

    twice = engine.generate([GenerationRequest(p, sampling=sampling) for p in prompts for _ in range(2)])

    assert engine.stats.since(before).prefill_s > 0
    for k, single in enumerate(alone):
        # each repeated cache row belongs to its own prompt: its first token scores as it does
        # alone (within what another batch size changes in float arithmetic, on any CPU)
        for row in twice[2 * k : 2 * k + 2]:
            assert row.logprobs[0].logprob == pytest.approx(single.logprobs[0].logprob, abs=0.05)


@pytest.mark.model
def test_logprobs_come_with_each_token_and_its_alternatives(engine: TransformersEngine) -> None:
    sampling = SamplingParams(max_new_tokens=6, logprobs=3)
    (completion,) = engine.generate([GenerationRequest("The capital of France is", sampling=sampling)])
    assert len(completion.logprobs) == 6
    for scored in completion.logprobs:
        assert len(scored.top) == 3 and scored.logprob <= 0
        assert [lp for _, lp in scored.top] == sorted((lp for _, lp in scored.top), reverse=True)
        assert scored.token == scored.top[0][0] and scored.logprob == pytest.approx(
            scored.top[0][1]
        )  # greedy
    assert "".join(scored.token for scored in completion.logprobs) == completion.text


@pytest.mark.model
@pytest.mark.parametrize("shortfalls", [(-3, 5), (5,)])
def test_the_lean_decode_step_gives_the_models_logits_bit_for_bit(
    engine: TransformersEngine, shortfalls: tuple[int, ...]
) -> None:
    """:class:`LeanStep` against the model's own forward, teacher-forced on the same tokens past
    Gemma 3's 512-token sliding window (its cache trims): two rows, one left-padded (the model
    masks its attention), and one row alone (no mask until the window: the model's attention
    then takes SDPA's grouped-query path, which the lean step does not). The lean step reads
    the engine's cache (:func:`~structured_agents.engines.growing_cache.growing_cache`, views
    of buffers), the model transformers' own."""
    from transformers import DynamicCache

    from structured_agents.engines.growing_cache import growing_cache

    lean = engine._lean  # the engine decodes with it (its layers' int8 copies shared, where int8)
    assert lean is not None
    window = int(engine.model.config.sliding_window)
    lengths = [window - shortfall for shortfall in shortfalls]
    rows, width = len(lengths), max(lengths)
    ids = torch.full((rows, width), engine.pad_token_id, dtype=torch.long)
    mask = torch.zeros((rows, width), dtype=torch.long)
    for row, length in enumerate(lengths):
        ids[row, width - length :] = torch.arange(length) % 5000 + 1000
        mask[row, width - length :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    caches = [DynamicCache(config=engine.model.config), growing_cache(engine.model.config)]
    with torch.inference_mode():
        for cache in caches:
            engine.model(
                input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, logits_to_keep=1
            )
        fed, at = torch.full((rows, 1), 7), positions[:, -1:] + 1
        for step in range(80):  # past the growing layers' room
            mask = torch.cat([mask, torch.ones((rows, 1), dtype=torch.long)], dim=1)
            model = (
                engine.model(
                    input_ids=fed, attention_mask=mask, position_ids=at, cache=caches[0], logits_to_keep=1
                )
                .logits[:, -1, :]
                .float()
            )
            assert torch.equal(lean(fed, mask, at, caches[1]), model), step
            fed, at = model.argmax(-1, keepdim=True), at + 1


def test_the_lean_step_is_for_gemma_3_on_cpu_with_packed_sdpa_only() -> None:
    from types import SimpleNamespace

    def model(device: str = "cpu", attention: str = PACKED, **config: object) -> object:
        return SimpleNamespace(
            device=torch.device(device), config=SimpleNamespace(_attn_implementation=attention, **config)
        )

    assert LeanStep.of(model(model_type="llama")) is None
    assert LeanStep.of(model(model_type="gemma3_text", attention="eager")) is None
    assert LeanStep.of(model(model_type="gemma3_text", attention="sdpa")) is None  # its own GQA path
    assert LeanStep.of(model(model_type="gemma3_text", attn_logit_softcapping=50.0)) is None
    assert LeanStep.of(model(model_type="gemma3_text", final_logit_softcapping=30.0)) is None
    assert LeanStep.of(model("meta", model_type="gemma3_text")) is None
