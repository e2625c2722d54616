"""VLLMEngine request building, checked against vLLM's real field names without vLLM.

vLLM cannot be installed here (GPU, >300 MB wheel, its own torch pin), so the names are read
from ``tests/data/vllm_api.json``, which ``scripts/snapshot_vllm.py`` extracted from the vLLM
0.33 wheel's source. A kwarg that is not a real field fails here.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from structured_agents.engines.step_loop import StepLoop
from structured_agents.engines.vllm_engine import (
    VLLMEngine,
    build_llm_kwargs,
    build_sampling_kwargs,
    build_structured_outputs_kwargs,
)
from structured_agents.engines.vllm_stepper import VLLMPending, VLLMStepper
from structured_agents.errors import EngineError
from structured_agents.grammar.artifacts import (
    EBNFGrammar,
    GrammarArtifact,
    JsonSchemaGrammar,
    StructuralTagGrammar,
    artifact_from_payload,
)
from structured_agents.kernel.engine import GenerationRequest, SamplingParams
from structured_agents.kernel.streaming import GenerationStream

API: dict[str, Any] = json.loads((Path(__file__).parents[1] / "data" / "vllm_api.json").read_text())
# Class -> its public init field names (for "X.__init__": the parameters of its own __init__).
SNAPSHOT: dict[str, list[str]] = {k: v["fields"] for k, v in API.items() if isinstance(v, dict)}
CONSTRAINTS = {"json", "regex", "choice", "grammar", "json_object", "structural_tag"}

ARTIFACTS: list[GrammarArtifact] = [
    EBNFGrammar('root ::= "call:" [a-z]+'),
    StructuralTagGrammar({"type": "structural_tag", "format": {"type": "const_string", "value": "x"}}),
    JsonSchemaGrammar({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
]


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def test_snapshot_is_of_vllm_033() -> None:
    assert API["vllm_version"].split(".")[:2] == ["0", "33"]
    assert {"max_tokens", "temperature", "top_p", "seed", "stop", "structured_outputs"} <= set(
        SNAPSHOT["SamplingParams"]
    )


def test_sampling_kwargs_are_real_sampling_params_fields() -> None:
    request = GenerationRequest(
        prompt="p",
        sampling=SamplingParams(
            max_new_tokens=64,
            temperature=0.3,
            top_p=0.9,
            seed=7,
            stop=("</s>",),
            frequency_penalty=0.5,
            bad_words=("A last-in, first-out stack of items.", " call"),
        ),
    )
    kwargs = build_sampling_kwargs(request)  # " call": mid-sentence only, which vLLM cannot do
    assert set(kwargs) <= set(SNAPSHOT["SamplingParams"]), set(kwargs) - set(SNAPSHOT["SamplingParams"])
    assert kwargs == {
        "max_tokens": 64,
        "temperature": 0.3,
        "top_p": 0.9,
        "seed": 7,
        "stop": ["</s>"],
        "frequency_penalty": 0.5,
        "logprobs": None,
        "bad_words": ["A last-in, first-out stack of items."],
    }


def test_sampling_kwargs_use_vllm_sentinels_for_unset_values() -> None:
    kwargs = build_sampling_kwargs(GenerationRequest(prompt="p"))
    assert kwargs["seed"] is None and kwargs["stop"] is None  # vLLM's defaults, not "" or []
    assert kwargs["bad_words"] is None
    only_mid_sentence = GenerationRequest(prompt="p", sampling=SamplingParams(bad_words=(" call",)))
    assert build_sampling_kwargs(only_mid_sentence)["bad_words"] is None


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=lambda a: a.kind)
def test_structured_outputs_kwargs_set_exactly_one_real_constraint(artifact: GrammarArtifact) -> None:
    kwargs = build_structured_outputs_kwargs(artifact)
    assert kwargs is not None
    assert set(kwargs) <= set(SNAPSHOT["StructuredOutputsParams"])
    assert len(set(kwargs) & CONSTRAINTS) == 1  # StructuredOutputsParams.__post_init__ requires one
    if "structural_tag" in kwargs:  # vLLM types it `str | None`: the tag goes as a JSON string
        assert isinstance(kwargs["structural_tag"], str)
    assert artifact_from_payload(kwargs) == artifact


def test_no_grammar_means_no_structured_outputs() -> None:
    assert build_structured_outputs_kwargs(None) is None


def test_llm_kwargs_are_real_llm_or_engine_args() -> None:
    kwargs = build_llm_kwargs(
        "Qwen/Qwen3-0.6B", dtype="bfloat16", max_num_seqs=16, seed=3, max_model_len=4096, enforce_eager=True
    )  # enforce_eager: what SA_ENGINE__ENFORCE_EAGER passes
    accepted = set(SNAPSHOT["LLM.__init__"]) | set(
        SNAPSHOT["EngineArgs"]
    )  # LLM passes **kwargs to EngineArgs
    assert set(kwargs) <= accepted, set(kwargs) - accepted
    assert kwargs["structured_outputs_config"] == {"backend": "xgrammar"}
    assert (kwargs["model"], kwargs["max_num_seqs"], kwargs["seed"], kwargs["max_model_len"]) == (
        "Qwen/Qwen3-0.6B",
        16,
        3,
        4096,
    )
    assert "seed" not in build_llm_kwargs("m")  # vLLM keeps its own default seed


class FakeLogprob:  # vllm.logprobs.Logprob
    def __init__(self, logprob: float, rank: int | None, decoded_token: str | None) -> None:
        self.logprob, self.rank, self.decoded_token = logprob, rank, decoded_token


@dataclass
class FakeSample:  # vllm.outputs.CompletionOutput (DELTA: only what this step added)
    index: int
    text: str
    token_ids: Sequence[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, FakeLogprob]] | None
    finish_reason: str | None = None


@dataclass
class FakeOutput:  # vllm.outputs.RequestOutput
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: None
    outputs: list[FakeSample]
    finished: bool


class FakeLLMEngine:
    """Stands in for ``LLMEngine`` with the snapshot's method parameters: each request writes its
    prompt back one character per step, then finishes with ``length`` (or ``abort``)."""

    def __init__(self) -> None:
        self.requests: dict[str, tuple[str, Any]] = {}
        self.aborted: list[str] = []
        self.steps = 0

    def add_request(self, request_id: str, prompt: Any, params: Any) -> str:
        if prompt == "refuse":
            raise ValueError("Invalid grammar")
        self.requests[request_id] = (prompt, params)
        return request_id

    def abort_request(self, request_ids: list[str], internal: bool = False) -> None:
        self.aborted += request_ids
        for request_id in request_ids:
            del self.requests[request_id]

    def step(self) -> list[FakeOutput]:
        self.steps += 1
        outputs = []
        for request_id, (prompt, params) in list(self.requests.items()):
            char, rest = prompt[0], prompt[1:]
            self.requests[request_id] = (rest, params)
            top = {ord(char): FakeLogprob(-0.1, 1, char), 0: FakeLogprob(-2.5, 2, "?")}
            logprobs = [top] if params["logprobs"] is not None else None
            sample = FakeSample(0, char, [ord(char)], None, logprobs, None if rest else "length")
            outputs.append(FakeOutput(request_id, None, [1, 2, 3], None, [sample], not rest))
            if not rest:
                del self.requests[request_id]
        return outputs


def test_the_stand_ins_use_vllm_names() -> None:
    for method in ("add_request", "step", "abort_request"):
        params = [p for p in inspect.signature(getattr(FakeLLMEngine, method)).parameters if p != "self"]
        assert params == SNAPSHOT[f"LLMEngine.{method}"][: len(params)], method
    assert {f.name for f in fields(FakeSample)} <= set(SNAPSHOT["CompletionOutput"])
    assert {f.name for f in fields(FakeOutput)} <= set(SNAPSHOT["RequestOutput.__init__"])
    assert list(inspect.signature(FakeLogprob).parameters) == SNAPSHOT["Logprob"]
    assert "llm_engine" in SNAPSHOT["LLM.attributes"] and "DELTA" in SNAPSHOT["RequestOutputKind"]
    assert {"output_kind", "logprobs"} <= set(SNAPSHOT["SamplingParams"])


def _submit(loop: StepLoop[VLLMPending], request: GenerationRequest) -> GenerationStream:
    stream = GenerationStream(request)
    stream.on_cancel(loop.wake)
    loop.put(VLLMPending(stream, build_sampling_kwargs(request)))
    return stream


def test_stepper_streams_deltas_and_finishes_requests_that_join_between_steps() -> None:
    core = FakeLLMEngine()
    loop: StepLoop[VLLMPending] = StepLoop(VLLMStepper(core, max_num_seqs=4), name="vllm-test")
    scored = SamplingParams(max_new_tokens=8, logprobs=1)
    first = _submit(loop, GenerationRequest(prompt="abcdef", request_id="r1", sampling=scored))
    deltas = iter(first)
    assert next(deltas).text == "a"
    second = _submit(loop, GenerationRequest(prompt="xy", request_id="r2"))
    assert "".join(d.text for d in second) == "xy"
    assert "".join(["a", *(d.text for d in deltas)]) == "abcdef"
    done = first.result()
    assert (done.text, done.finish_reason, done.usage.prompt_tokens, done.usage.completion_tokens) == (
        "abcdef",
        "length",
        3,
        6,
    )
    assert [(t.token, t.logprob, t.top) for t in done.logprobs[:1]] == [
        ("a", -0.1, (("a", -0.1), ("?", -2.5)))
    ]
    refused = _submit(loop, GenerationRequest(prompt="refuse", grammar=EBNFGrammar("root ::= (")))
    assert refused.result().finish_reason == "error" and refused.result().metadata["grammar_error"] is True
    loop.close()


def test_a_cancelled_request_is_aborted_in_vllm() -> None:
    core = FakeLLMEngine()
    loop: StepLoop[VLLMPending] = StepLoop(VLLMStepper(core, max_num_seqs=4), name="vllm-test")
    stream = _submit(loop, GenerationRequest(prompt="x" * 10_000, request_id="long"))
    next(iter(stream))
    stream.cancel()
    deadline = time.monotonic() + 10
    while "long" not in core.aborted and time.monotonic() < deadline:
        time.sleep(0.01)
    assert core.aborted == ["long"] and core.steps < 10_000
    loop.close()


def test_importing_the_module_does_not_import_vllm() -> None:
    code = (
        "import structured_agents, structured_agents.engines.vllm_engine, sys; print('vllm' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_constructor_without_vllm_names_the_gpu_extra() -> None:
    with pytest.raises(EngineError, match=r"structured-agents\[gpu\]"):
        VLLMEngine("Qwen/Qwen3-0.6B")
