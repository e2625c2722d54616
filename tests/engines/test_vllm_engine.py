"""VLLMEngine request building, checked against vLLM's real field names without vLLM.

vLLM cannot be installed here (GPU, >300 MB wheel, its own torch pin), so the names are read
from ``tests/data/vllm_api.json``, which ``scripts/snapshot_vllm.py`` extracted from the vLLM
0.33 wheel's source. A kwarg that is not a real field fails here.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from structured_agents.engines.vllm_engine import (
    VLLMCompletionOutput,
    VLLMEngine,
    VLLMRequestOutput,
    build_llm_kwargs,
    build_sampling_kwargs,
    build_structured_outputs_kwargs,
    to_completion,
)
from structured_agents.errors import EngineError
from structured_agents.grammar.artifacts import (
    EBNFGrammar,
    GrammarArtifact,
    JsonSchemaGrammar,
    StructuralTagGrammar,
    artifact_from_payload,
)
from structured_agents.kernel.engine import GenerationRequest, SamplingParams

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
            max_new_tokens=64, temperature=0.3, top_p=0.9, seed=7, stop=("</s>",), frequency_penalty=0.5
        ),
    )
    kwargs = build_sampling_kwargs(request)
    assert set(kwargs) <= set(SNAPSHOT["SamplingParams"]), set(kwargs) - set(SNAPSHOT["SamplingParams"])
    assert kwargs == {
        "max_tokens": 64,
        "temperature": 0.3,
        "top_p": 0.9,
        "seed": 7,
        "stop": ["</s>"],
        "frequency_penalty": 0.5,
    }


def test_sampling_kwargs_use_vllm_sentinels_for_unset_values() -> None:
    kwargs = build_sampling_kwargs(GenerationRequest(prompt="p"))
    assert kwargs["seed"] is None and kwargs["stop"] is None  # vLLM's defaults, not "" or []


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
        "Qwen/Qwen3-0.6B", dtype="bfloat16", max_num_seqs=16, seed=3, max_model_len=4096
    )
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


def test_output_protocols_read_real_vllm_attributes() -> None:
    assert _members(VLLMCompletionOutput) <= set(SNAPSHOT["CompletionOutput"])
    assert _members(VLLMRequestOutput) <= set(SNAPSHOT["RequestOutput.__init__"])


@dataclass
class _Sample:  # the attributes of vllm.outputs.CompletionOutput that to_completion reads
    text: str
    token_ids: Sequence[int]
    finish_reason: str | None


@dataclass
class _Output:  # the attributes of vllm.outputs.RequestOutput that to_completion reads
    prompt_token_ids: Sequence[int] | None
    outputs: Sequence[_Sample]


def test_to_completion_maps_text_usage_and_finish_reason() -> None:
    request = GenerationRequest(prompt="p", request_id="r1")
    output = _Output(prompt_token_ids=[1, 2, 3, 4], outputs=[_Sample("call:read", [9, 9], "length")])
    completion = to_completion(request, output, latency_s=0.5, batch_size=3)
    assert completion.request_id == "r1"
    assert completion.text == "call:read"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (4, 2)
    assert (completion.finish_reason, completion.latency_s, completion.batch_size) == ("length", 0.5, 3)


@pytest.mark.parametrize(("vllm_reason", "ours"), [("stop", "stop"), (None, "stop"), ("abort", "error")])
def test_to_completion_finish_reasons(vllm_reason: str | None, ours: str) -> None:
    output = _Output(prompt_token_ids=None, outputs=[_Sample("", [], vllm_reason)])
    completion = to_completion(GenerationRequest(prompt="p"), output, latency_s=0.0, batch_size=1)
    assert completion.finish_reason == ours
    if ours == "error":
        assert completion.metadata == {"vllm_finish_reason": vllm_reason}


def test_to_completion_without_samples_is_an_engine_error() -> None:
    with pytest.raises(EngineError, match="no output"):
        to_completion(GenerationRequest(prompt="p"), _Output([1], []), latency_s=0.0, batch_size=1)


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
