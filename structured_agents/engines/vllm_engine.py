"""In-process vLLM engine (the ``[gpu]`` extra): one ``LLM.generate`` call per batch.

Each request becomes one ``vllm.SamplingParams`` carrying its own grammar as
``StructuredOutputsParams(**artifact.to_vllm_payload()["structured_outputs"])``, and the whole
batch is decoded by a single ``LLM.generate(prompts, params_list)`` call, so vLLM schedules
every agent's turn together under its own grammar (XGrammar backend).

What is and is not tested here
------------------------------
vLLM cannot be installed or run in this project's CI: it needs a GPU, its wheel is over
300 MB, it pins its own torch and transformers (incompatible with the CPU stack), and no
Qwen3 weights are available offline. Importing this module therefore never imports vLLM; the
constructor does. The pure parts are unit-tested without vLLM:

* :func:`build_llm_kwargs`, :func:`build_sampling_kwargs` and :func:`build_structured_outputs_kwargs`
  produce keyword arguments whose names are checked against the real ``LLM.__init__`` /
  ``EngineArgs``, ``SamplingParams`` and ``StructuredOutputsParams`` fields, snapshotted from
  the vLLM 0.33 wheel's source (``scripts/snapshot_vllm.py``);
* :func:`to_completion` maps objects with vLLM's ``RequestOutput``/``CompletionOutput``
  attribute names (also checked against the snapshot) to :class:`Completion`.

Not tested: loading a model, the decode itself, and vLLM's own validation of the values.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from structured_agents.errors import EngineError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.kernel.engine import Completion, FinishReason, GenerationRequest
from structured_agents.types import TokenUsage

__all__ = [
    "VLLMEngine",
    "build_llm_kwargs",
    "build_sampling_kwargs",
    "build_structured_outputs_kwargs",
    "to_completion",
]

_FINISH_REASONS: dict[str | None, FinishReason] = {None: "stop", "stop": "stop", "length": "length"}
"""vLLM's finish reasons (stop, length, abort, error, repetition) as ours; the rest are errors."""


class VLLMCompletionOutput(Protocol):
    """The attributes of ``vllm.outputs.CompletionOutput`` this module reads."""

    @property
    def text(self) -> str: ...
    @property
    def token_ids(self) -> Sequence[int]: ...
    @property
    def finish_reason(self) -> str | None: ...


class VLLMRequestOutput(Protocol):
    """The attributes of ``vllm.outputs.RequestOutput`` this module reads."""

    @property
    def prompt_token_ids(self) -> Sequence[int] | None: ...
    @property
    def outputs(self) -> Sequence[VLLMCompletionOutput]: ...


def build_llm_kwargs(
    model: str, *, dtype: str = "auto", max_num_seqs: int = 8, seed: int | None = None, **extra: Any
) -> dict[str, Any]:
    """Keyword arguments of ``vllm.LLM``: the model, the XGrammar backend and the batch size.

    ``extra`` passes any other ``LLM``/``EngineArgs`` argument through (``gpu_memory_utilization``,
    ``max_model_len``, ``tensor_parallel_size``...).
    """
    kwargs: dict[str, Any] = {
        "model": model,
        "structured_outputs_config": {"backend": "xgrammar"},
        "dtype": dtype,
        "max_num_seqs": max_num_seqs,
    }
    if seed is not None:
        kwargs["seed"] = seed
    kwargs.update(extra)
    return kwargs


def build_structured_outputs_kwargs(grammar: GrammarArtifact | None) -> dict[str, Any] | None:
    """Keyword arguments of ``StructuredOutputsParams`` for ``grammar`` (``None`` when unconstrained)."""
    if grammar is None:
        return None
    inner = grammar.to_vllm_payload()["structured_outputs"]
    return dict(inner)


def build_sampling_kwargs(request: GenerationRequest) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for ``request``, without the grammar."""
    sampling = request.sampling
    return {
        "max_tokens": sampling.max_new_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "seed": sampling.seed,
        "stop": list(sampling.stop) or None,
        "frequency_penalty": sampling.frequency_penalty,
    }


def to_completion(
    request: GenerationRequest, output: VLLMRequestOutput, *, latency_s: float, batch_size: int
) -> Completion:
    """Map vLLM's output for ``request`` to a :class:`Completion` (first sample only; ``n`` is 1)."""
    if not output.outputs:
        raise EngineError(f"vLLM returned no output for request_id={request.request_id}")
    sample = output.outputs[0]
    finish: FinishReason = _FINISH_REASONS.get(sample.finish_reason, "error")
    return Completion(
        request_id=request.request_id,
        text=sample.text,
        usage=TokenUsage(
            prompt_tokens=len(output.prompt_token_ids or ()), completion_tokens=len(sample.token_ids)
        ),
        finish_reason=finish,
        latency_s=latency_s,
        batch_size=batch_size,
        metadata={} if finish != "error" else {"vllm_finish_reason": sample.finish_reason},
    )


class VLLMEngine:
    """An :class:`Engine` over an in-process ``vllm.LLM`` with the XGrammar structured-output backend.

    Not thread-safe (neither is ``LLM.generate``): one engine per worker process.
    """

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "auto",
        max_num_seqs: int = 8,
        seed: int | None = None,
        **llm_kwargs: Any,
    ) -> None:
        try:
            import vllm
            from vllm.sampling_params import StructuredOutputsParams
        except ImportError as exc:
            raise EngineError(
                "the vllm engine needs vLLM and a GPU: install the [gpu] extra "
                f"(pip install 'structured-agents[gpu]'): {exc}"
            ) from exc
        kwargs = build_llm_kwargs(model, dtype=dtype, max_num_seqs=max_num_seqs, seed=seed, **llm_kwargs)
        try:
            self._llm = vllm.LLM(**kwargs)
        except Exception as exc:
            raise EngineError(f"vLLM could not load model {model!r}: {exc}") from exc
        self._sampling_params = vllm.SamplingParams
        self._structured_outputs_params = StructuredOutputsParams
        self.model = model

    def _params(self, index: int, request: GenerationRequest) -> Any:
        structured = build_structured_outputs_kwargs(request.grammar)
        try:
            return self._sampling_params(
                **build_sampling_kwargs(request),
                structured_outputs=None
                if structured is None
                else self._structured_outputs_params(**structured),
            )
        except Exception as exc:  # vLLM validates on construction (VLLMValidationError, ValueError)
            raise EngineError(f"vLLM rejected the sampling params of request {index}: {exc}") from exc

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Decode the whole batch in one ``LLM.generate`` call."""
        if not requests:
            return []
        params = [self._params(index, request) for index, request in enumerate(requests)]
        start = time.perf_counter()
        try:
            outputs = self._llm.generate([r.prompt for r in requests], params, use_tqdm=False)
        except Exception as exc:
            raise EngineError(f"vLLM failed to generate a batch of {len(requests)}: {exc}") from exc
        latency = time.perf_counter() - start
        if len(outputs) != len(requests):
            raise EngineError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests")
        return [
            to_completion(request, output, latency_s=latency, batch_size=len(requests))
            for request, output in zip(requests, outputs, strict=True)
        ]
