"""The GPU decode loop: a slot cache, a graph-captured step, and the host's work hidden behind it.

:class:`SlotStepper` is the :class:`~.step_loop.Stepper` of the transformers engine on CUDA for
the models :class:`~.graph_step.GraphStep` reproduces (Gemma 3). It keeps the rows in a
:class:`~.slot_cache.SlotCache` (row ``k`` is slot ``k``) and decodes them with the captured
step. A step:

1. masks the pending logits on the device: each constrained row's bitmask, filled on the host
   while the previous forward ran, is copied (from pinned memory, without waiting) and
   unpacked into a ``-inf`` mask; the frequency penalty comes from per-row token counts kept
   on the device (one scatter of the step's new tokens, one multiply-add); bad words and
   repeated n-grams as the CPU loop bans them;
2. picks every row's token on the device (the argmax; ``-1``, :data:`~.logits.NO_TOKEN`, where
   the mask allows nothing) and copies the tokens to the host: the step's one wait for the
   GPU (rows that sample draw on the host, as the CPU loop does, and wait too);
3. launches the next forward at once, feeding those tokens from the device, for every row
   (a row that ends on this token costs its place in one more forward, and its result is
   dropped);
4. while the GPU runs it, advances the grammars and rows on the host, scores the reviews of
   rows that ended, finishes them, closes the gaps they leave (the last rows move into them:
   a few slot copies, queued behind the forward), and fills the next bitmasks.

Waiting rows join between steps, prefilled by :meth:`~.graph_step.GraphStep.prefill` straight
into their slots, and only their bitmasks are filled then (the live rows' are current). Each
admission is a prefill pass of its own, so rows join in groups (:func:`admitting`): on a GPU
machine a stream of short requests freed a slot or two every step, and a prefill pass each step
(then transformers' own forward) took four fifths of the time.

Greedy rows take the lowest-id best token their grammar allows, as on the CPU loop; the logits
differ from the CPU loop's by the kernels' rounding. The cache holds ``capacity`` positions a
row (:func:`slot_capacity`): a prompt must leave room for one token.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from structured_agents.engines.bad_words import ban_bad_words
from structured_agents.engines.graph_step import MIN_PROMPT, GraphStep, bucket
from structured_agents.engines.host_copy import on_device
from structured_agents.engines.logits import MIN_TEMPERATURE, NO_TOKEN, sample, top_logprobs
from structured_agents.engines.repeats import ban_repeats
from structured_agents.engines.rows import Row
from structured_agents.engines.slot_cache import SlotCache
from structured_agents.engines.transformers_stepper import StepModel, TransformersStepper, prefill_groups

__all__ = ["ADMIT_SHARE", "MEMORY_SHARE", "MOST_HELD_STEPS", "SlotStepper", "admitting", "slot_capacity"]


MEMORY_SHARE = 0.25
"""The share of the device's free memory the slot cache may take when the engine starts."""
ADMIT_SHARE = 0.25
"""Waiting rows join once this share of the slots is free (16 of 64). Each admission is a
prefill pass, and a stream of short requests frees a slot or two every step. Measured on an
H200 (1,024 tool-call requests under the JSON call schema, at most 64 rows): 13.2k tok/s at a
quarter, 8.7-9.4k at an eighth (three runs), 3.8k admitting every free slot (with the prefill
still uncaptured)."""
MOST_HELD_STEPS = 16
"""Steps a free slot may be held back from a waiting row (its wait, a few GPU steps at most)."""
PREFILL_TOKENS = 16384
"""The most prompt positions (rows times the longest prompt) one prefill pass takes."""


def admitting(slots: int, live: int, held: int) -> int:
    """How many waiting rows may join ``live`` ones in ``slots``: the slots free, once enough
    are (:data:`ADMIT_SHARE`), nothing is live, or the free slots have been held back for
    :data:`MOST_HELD_STEPS` steps (``held``); else none, and the steps go on without admitting:
    every admission is a prefill pass of its own."""
    free = slots - live
    enough = max(1, int(ADMIT_SHARE * slots))
    return free if free >= enough or not live or held >= MOST_HELD_STEPS else 0


def _parts(group: list[Row]) -> list[list[Row]]:
    """``group`` (rows of similar prompt lengths) in parts whose prefill bucket (rows and
    prompt length rounded up to powers of two) holds at most :data:`PREFILL_TOKENS` positions,
    each at least one row."""
    width = bucket(max(len(row.prompt_ids) for row in group), least=MIN_PROMPT, most=PREFILL_TOKENS)
    size = 1
    while 2 * size * width <= PREFILL_TOKENS:
        size *= 2
    return [group[k : k + size] for k in range(0, len(group), size)]


def slot_capacity(config: Any, *, slots: int, dtype: torch.dtype, free_bytes: int) -> int:
    """Positions a slot holds: the model's context where :data:`MEMORY_SHARE` of ``free_bytes``
    holds ``slots`` rows of it, else what that share holds (a multiple of 256, at least 256
    unless the context is shorter)."""
    context = int(getattr(config, "max_position_embeddings", 0) or 1 << 15)
    fits = int(MEMORY_SHARE * free_bytes) // (slots * SlotCache.bytes_per_position(config, dtype))
    return min(context, max(256, fits // 256 * 256))


class SlotStepper(TransformersStepper):
    """Rows in slots, decoded by a :class:`GraphStep`; driven from the engine's loop thread only."""

    def __init__(self, engine: StepModel, *, graphs: bool) -> None:
        super().__init__(engine, pinned=engine.model.device.type == "cuda")
        model = engine.model
        device = model.device
        dtype = model.get_output_embeddings().weight.dtype
        free = (
            torch.cuda.mem_get_info(device)[0]
            if device.type == "cuda"
            else os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        )
        slots = engine.max_batch_size
        self.capacity = slot_capacity(model.config, slots=slots + 1, dtype=dtype, free_bytes=free)
        """Positions each row may use: its prompt and its new tokens."""
        self.cache = SlotCache(model.config, slots=slots, capacity=self.capacity, device=device, dtype=dtype)
        self.graph = GraphStep(model, self.cache, graphs=graphs)
        self.next: list[int] = []
        """Each row's next position (its length so far)."""
        self._lengths: list[int] = []
        """Each row's length before the step in flight (what a fork of it reads)."""
        self.context = min(self.context or self.capacity, self.capacity)
        self._filled: list[int] | None = []
        """The rows whose bitmask is filled for their next token (None: stale, rows moved)."""
        self._counts: torch.Tensor | None = None
        """``[slots, vocab]``: how often each row generated each token (rows with a frequency
        penalty; allocated when the first one comes)."""
        self._device = device
        self._held = 0
        """Steps decoded with a slot free since the last admission."""

    def room(self) -> int:
        return admitting(self.engine.max_batch_size, len(self.rows), self._held)

    @torch.inference_mode()
    def admit(self, pending: list[Row]) -> None:
        first, bitmask = len(self.rows), self.masker.bitmask
        self._held = 0
        for group in prefill_groups(pending):
            for part in _parts(group):
                clock = time.perf_counter()
                at = len(self.rows)
                logits = self.graph.prefill([row.prompt_ids for row in part], at)
                # a copy either way: the next part's prefill may replay the graph that wrote it
                self.logits = logits.clone() if self.logits is None else torch.cat([self.logits, logits])
                for row in part:
                    self.masker.add(row.grammar, stop_token_ids=row.stop_token_ids)
                    self.rows.append(row)
                    self.next.append(len(row.prompt_ids))
                self.engine.stats.prefill_s += time.perf_counter() - clock
                if any(row.review_ids for row in part):
                    lengths = [len(row.prompt_ids) for row in part]
                    forked = self.cache.fork(range(at, at + len(part)), lengths, self.engine.model.config)
                    self._baselines(part, list(range(len(part))), logits, forked)
        added = self.rows[first:]
        if any(row.request.sampling.frequency_penalty for row in added) and self._counts is None:
            self._counts = torch.zeros(
                (self.cache.slots, self.engine.vocab_size), dtype=torch.float32, device=self._device
            )
        if self._counts is not None:
            self._counts[first : len(self.rows)] = 0
        if self.masker.bitmask is not bitmask:  # grown for the new rows: the old fills are gone
            self._filled = None
        self._fill(since=first)

    def _fill(self, since: int = 0) -> None:
        """Fill the bitmask of every constrained row from ``since`` on whose grammar goes on
        (on the host); the rows before it where their bitmasks are current (rows that joined)."""
        clock = time.perf_counter()
        if self._filled is None:
            since = 0
        live = [k for k in self.masker.live(range(len(self.rows))) if k >= since]
        if live:
            self.masker.fill(range(len(self.rows)), live)
        self._filled = live if since == 0 or self._filled is None else [*self._filled, *live]
        self.engine.stats.select_s += time.perf_counter() - clock

    def _mask(self, logits: torch.Tensor) -> None:
        """Apply the filled bitmasks to ``logits`` on the device, in place."""
        if self._filled is None:
            self._fill()
        self.masker.mask(logits, self._filled or [])

    def _penalize(self, logits: torch.Tensor) -> None:
        """The rows' frequency penalties, from their token counts on the device."""
        if self._counts is None:
            return
        amounts = [row.request.sampling.frequency_penalty for row in self.rows]
        if any(amounts):
            width = min(logits.shape[-1], self._counts.shape[-1])
            scale = on_device(amounts, self._device, torch.float32)
            logits[:, :width] -= scale.unsqueeze(1) * self._counts[: len(self.rows), :width]

    def _count(self, added: list[tuple[int, ...]]) -> None:
        """Count each row's ``added`` tokens (rows with a frequency penalty)."""
        if self._counts is None:
            return
        rows = [
            k for k, row in enumerate(self.rows) for _ in added[k] if row.request.sampling.frequency_penalty
        ]
        ids = [
            t for k, row in enumerate(self.rows) for t in added[k] if row.request.sampling.frequency_penalty
        ]
        if rows:
            index = on_device([rows, ids], self._device, torch.long)
            ones = torch.ones(len(rows), dtype=self._counts.dtype, device=self._device)
            self._counts.index_put_((index[0], index[1]), ones, accumulate=True)

    @torch.inference_mode()
    def step(self) -> None:
        logits = self._begin()
        if logits is None:
            return
        stats, rows = self.engine.stats, self.rows
        if len(rows) < self.engine.max_batch_size:
            self._held += 1
        clock = time.perf_counter()
        params, counts, saved = self._saved(logits)
        generated = [row.tokens for row in rows]
        self._penalize(logits)
        ban_bad_words(logits, generated, [row.banned for row in rows])
        ban_repeats(logits, generated, [p.no_repeat_ngram_size for p in params])
        self._mask(logits)
        values, best = logits.max(dim=-1)
        chosen = torch.where(values.isfinite(), best, NO_TOKEN)
        sampling = [
            k
            for k, (p, row) in enumerate(zip(params, rows, strict=True))
            if p.temperature >= MIN_TEMPERATURE and row.generator is not None
        ]
        tokens = [int(t) for t in chosen.tolist()]  # the step's one wait for the device
        for k in sampling:
            if tokens[k] != NO_TOKEN:
                generator = rows[k].generator
                assert generator is not None
                tokens[k] = sample(logits[k], params[k], generator)
        if sampling:
            chosen = on_device(tokens, self._device, torch.long)
        logprobs = top_logprobs(saved.raw, tokens, counts) if saved.raw is not None else [[] for _ in rows]
        stats.select_s += time.perf_counter() - clock
        clock = time.perf_counter()
        positions = on_device(self.next, self._device, torch.long)
        upcoming = self.graph(chosen.clamp(min=0), positions, max(self.next) + 1)  # runs while the host works
        self._lengths = list(self.next)
        self.next = [p + 1 for p in self.next]
        stats.decode_s += time.perf_counter() - clock
        before = [len(row.tokens) for row in rows]
        keep = self._settle(tokens, logprobs, saved)
        self._count([tuple(row.tokens[before[k] :]) for k, row in enumerate(rows)])
        self.logits = upcoming
        self._keep(keep)
        if self.rows:
            self._fill()

    def _fork(self, rows: list[int]) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """A ``DynamicCache`` of the rows' slots, their tokens before the one this step fed (the
        step in flight writes that one past them)."""
        return self.cache.fork(rows, [self._lengths[k] for k in rows], self.engine.model.config)

    def _keep(self, keep: list[int]) -> None:
        """Keep rows ``keep``: those already in the first ``len(keep)`` slots stay, the rest
        move into the gaps (one copy of each moved slot)."""
        if len(keep) == len(self.rows):
            return
        size = len(keep)
        staying = {k for k in keep if k < size}
        gaps = [k for k in range(size) if k not in staying]
        movers = [k for k in keep if k >= size]
        order = list(range(size))
        for gap, mover in zip(gaps, movers, strict=True):
            order[gap] = mover
        if movers:
            self.cache.move(movers, gaps, max(self.next[k] for k in movers) + 1)
            if self._counts is not None:
                self._counts[on_device(gaps, self._device, torch.long)] = self._counts[
                    on_device(movers, self._device, torch.long)
                ]
        self.rows = [self.rows[k] for k in order]
        self.next = [self.next[k] for k in order]
        self.masker.keep(order)
        self._filled = None
        if self.logits is not None and order:
            self.logits = self.logits[on_device(order, self.logits.device, torch.long)]
        else:
            self.logits = None
