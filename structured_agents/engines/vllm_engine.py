"""In-process vLLM engine (the ``[gpu]`` extra), batching continuously through vLLM's step engine.

Each request becomes one ``vllm.SamplingParams`` carrying its own grammar as
``StructuredOutputsParams(**artifact.to_vllm_payload()["structured_outputs"])`` and
``output_kind=RequestOutputKind.DELTA`` (a request's ``bad_words`` are vLLM's own, less
those meant for mid-sentence only, which vLLM would ban in both spellings).
``submit`` hands it to the engine's step loop (:mod:`structured_agents.engines.step_loop`),
whose thread adds it to vLLM's own ``LLMEngine`` (``LLM.llm_engine.add_request``) between
``step()`` calls (:mod:`structured_agents.engines.vllm_stepper`): vLLM schedules every agent's turn together
under its own grammar (XGrammar backend), requests join and leave its batch at every step, and
each step's new text streams out. ``generate(requests)`` submits all and waits for all.

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
* :class:`~structured_agents.engines.vllm_stepper.VLLMStepper` is driven in the tests by a
  stand-in ``LLMEngine`` whose ``add_request``/``step``/``abort_request`` parameters, and the
  ``RequestOutput``/``CompletionOutput``/``Logprob`` attributes it returns, are checked against
  the snapshot, as are ``LLM.llm_engine`` and ``RequestOutputKind.DELTA``.

Not tested: loading a model, the decode itself, and vLLM's own validation of the values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from structured_agents.engines.candidates import submit_candidates
from structured_agents.engines.occupancy import Occupancy
from structured_agents.engines.step_loop import StepLoop
from structured_agents.engines.vllm_stepper import VLLMPending, VLLMStepper, refusal
from structured_agents.errors import EngineError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.kernel.engine import Completion, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream

__all__ = [
    "VLLMEngine",
    "build_llm_kwargs",
    "build_sampling_kwargs",
    "build_structured_outputs_kwargs",
]


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
        "logprobs": sampling.logprobs,
        "bad_words": sampling.bad_words_anywhere() or None,
    }


class VLLMEngine:
    """An :class:`Engine` (streaming) over an in-process ``vllm.LLM`` with the XGrammar backend.

    ``submit`` and ``generate`` may be called from any thread; vLLM itself only ever runs on the
    engine's loop thread. One engine per process (it owns the GPU).
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
            from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams
        except ImportError as exc:
            raise EngineError(
                "the vllm engine needs vLLM and a GPU: install the [gpu] extra "
                f"(pip install 'structured-agents[gpu]'): {exc}"
            ) from exc
        kwargs = build_llm_kwargs(model, dtype=dtype, max_num_seqs=max_num_seqs, seed=seed, **llm_kwargs)
        try:
            llm = vllm.LLM(**kwargs)
        except Exception as exc:
            raise EngineError(f"vLLM could not load model {model!r}: {exc}") from exc
        self._sampling_params = vllm.SamplingParams
        self._structured_outputs_params = StructuredOutputsParams
        self._delta = RequestOutputKind.DELTA
        self._loop: StepLoop[VLLMPending] = StepLoop(
            VLLMStepper(llm.llm_engine, max_num_seqs=max_num_seqs), name="vllm-engine"
        )
        self._llm = llm
        self.model = model

    def _params(self, request: GenerationRequest) -> Any:
        structured = build_structured_outputs_kwargs(request.grammar)
        return self._sampling_params(
            **build_sampling_kwargs(request),
            output_kind=self._delta,
            structured_outputs=None if structured is None else self._structured_outputs_params(**structured),
        )

    def submit(self, request: GenerationRequest) -> GenerationStream:
        """Queue ``request`` for vLLM's next step; its stream gets each step's new text. A
        request with ``n > 1`` goes in as ``n`` requests (seeds ``seed + i``, vLLM's prefix
        cache shares their prompt), its stream carrying only the completion with every candidate."""
        return submit_candidates(self._submit, request)

    def _submit(self, request: GenerationRequest) -> GenerationStream:
        stream = GenerationStream(request)
        stream.on_cancel(self._loop.wake)
        try:
            params = self._params(request)
        except Exception as exc:  # vLLM validates on construction (VLLMValidationError, ValueError)
            stream.finish(
                refusal(request, f"vLLM rejected the sampling params of {request.request_id}: {exc}")
            )
            return stream
        self._loop.put(VLLMPending(stream, params))
        return stream

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Decode ``requests`` with whatever else is in flight; the i-th completion answers the i-th."""
        streams = [self.submit(request) for request in requests]
        return [stream.result() for stream in streams]

    def occupancy(self) -> Occupancy:
        """How full the step loop kept the batch (see :mod:`~structured_agents.engines.occupancy`)."""
        return self._loop.occupancy()

    def close(self) -> None:
        """Finish the requests in flight, then stop the loop thread."""
        self._loop.close()
