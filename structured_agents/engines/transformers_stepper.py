"""The decoding state of the transformers engine: rows join and leave between decode steps.

:class:`TransformersStepper` is the :class:`~structured_agents.engines.step_loop.Stepper` the
engine's loop thread drives. ``admit`` prefills new rows (grouped by similar prompt length, so
little of a prefill is padding; rows with the same prompt, a request's candidates, once) and
joins their KV caches to the batch's (:class:`~structured_agents.engines.kv_batch.KVBatch`);
``step`` picks every live row's next token (frequency penalties for the whole batch in one
scatter, the tokens that would complete a row's ``bad_words`` banned, then
:func:`~structured_agents.engines.logits.select_tokens` under each row's grammar), advances the
rows, streams their settled text, finishes the rows that end, drops them (and cancelled rows)
from the cache, and runs one forward pass for the rest.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from structured_agents.engines.bad_words import ban_bad_words
from structured_agents.engines.decode_stats import DecodeStats
from structured_agents.engines.growing_cache import growing_cache
from structured_agents.engines.host_copy import on_device
from structured_agents.engines.kv_batch import KVBatch, fork_rows, select_rows
from structured_agents.engines.logits import (
    GRAMMAR_STEP_BUDGET_S,
    NO_TOKEN,
    GrammarMasker,
    penalize,
    select_tokens,
    top_logprobs,
)
from structured_agents.engines.repeats import ban_repeats
from structured_agents.engines.review import ReviewModel, score_continuations
from structured_agents.engines.rows import Row
from structured_agents.errors import EngineError
from structured_agents.kernel.engine import SamplingParams, TokenLogprob
from structured_agents.kernel.streaming import StreamDelta

__all__ = ["StepModel", "TransformersStepper", "prefill_groups"]

_PAD_SLACK = 1.5
"""A prefill group takes the next (longer) prompt while it is at most this times its shortest."""


def prefill_groups(rows: Sequence[Row], *, slack: float = _PAD_SLACK, extra: int = 32) -> list[list[Row]]:
    """``rows`` by prompt length, in groups whose longest prompt is at most ``slack`` times the
    shortest plus ``extra`` tokens (so a group's left padding stays small)."""
    groups: list[list[Row]] = []
    for row in sorted(rows, key=lambda r: len(r.prompt_ids)):
        if groups and len(row.prompt_ids) <= slack * len(groups[-1][0].prompt_ids) + extra:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def _exact_rows(rows: Sequence[Row]) -> list[int]:
    """The rows whose logits must not depend on the rows beside them: those that sample (a seed
    alone decides a sample) or report log probabilities."""
    return [
        k
        for k, row in enumerate(rows)
        if row.request.sampling.temperature > 0 or row.request.sampling.logprobs is not None
    ]


@dataclass(frozen=True, slots=True)
class _Saved:
    """What a step keeps of its logits before penalties and masks change them."""

    raw: torch.Tensor | None
    """Every row's logits, where a row asks for log probabilities."""
    reviewed: list[int]
    """The rows with a review."""
    review_raw: torch.Tensor | None
    """Their logits, for scoring their review text if they end."""


class StepModel(ReviewModel, Protocol):
    """What the stepper needs of its engine: the loaded model, its tokens, and where to count."""

    max_batch_size: int
    pad_token_id: int
    vocab_size: int
    stop_token_ids: list[int]
    stats: DecodeStats
    model: Any
    """The ``transformers`` model (its ``config`` sizes the cache)."""

    def forward(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
        exact_rows: Sequence[int] = (),
    ) -> torch.Tensor: ...

    def decode_text(self, tokens: Sequence[int]) -> str: ...


class TransformersStepper:
    """Live rows, their cache and pending logits; driven from the engine's loop thread only."""

    def __init__(self, engine: StepModel, *, pinned: bool = False) -> None:
        """``pinned``: the grammar bitmask in page-locked memory (a GPU loop's)."""
        self.engine = engine
        self.rows: list[Row] = []
        self.kv = KVBatch()
        self.logits: torch.Tensor | None = None
        """``[rows, vocab]``: the logits each row picks its next token from."""
        self.masker = GrammarMasker(
            [], vocab_size=engine.vocab_size, stop_token_ids=engine.stop_token_ids, pinned=pinned
        )
        limit = getattr(engine.model.config, "max_position_embeddings", None)
        self.context: int | None = int(limit) if limit is not None else None
        """Positions a row may use, its prompt and its new tokens (None: no limit known)."""

    def room(self) -> int:
        return self.engine.max_batch_size - len(self.rows)

    def full(self) -> bool:
        return len(self.rows) >= self.engine.max_batch_size

    def live(self) -> int:
        return len(self.rows)

    def abort(self, error: EngineError) -> None:
        for row in self.rows:
            if row.stream is not None:
                row.stream.fail(error)
        self._keep([])

    @torch.inference_mode()
    def admit(self, pending: list[Row]) -> None:
        for group in prefill_groups(pending):
            logits, cache, mask, next_pos = self._prefill_group(group)
            self.kv.join(cache, mask, next_pos)
            self.logits = logits if self.logits is None else torch.cat([self.logits, logits])
            for row in group:
                self.masker.add(row.grammar, stop_token_ids=row.stop_token_ids)
                self.rows.append(row)

    def _prefill_group(self, group: list[Row]) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """The logits, cache, mask and next positions of ``group`` prefilled, a row each; each
        reviewed row's baseline set. Rows with the same prompt (a request's n candidates) share
        one prefill: each distinct prompt goes through the model once, and its cache rows are
        repeated."""
        clock = time.perf_counter()
        distinct: dict[tuple[int, ...], int] = {}
        for row in group:
            distinct.setdefault(tuple(row.prompt_ids), len(distinct))
        index = [distinct[tuple(row.prompt_ids)] for row in group]
        firsts = [index.index(k) for k in range(len(distinct))]
        logits, cache, mask, next_pos = self._prefill([group[j] for j in firsts])
        self.engine.stats.prefill_s += time.perf_counter() - clock
        self._baselines(group, index, logits, (cache, mask, next_pos))
        clock = time.perf_counter()
        if len(distinct) < len(group):
            mask, next_pos = select_rows(cache, mask, next_pos, index)
            logits = logits[torch.tensor(index, device=logits.device)]
        self.engine.stats.prefill_s += time.perf_counter() - clock
        return logits, cache, mask, next_pos

    def _baselines(
        self,
        rows: list[Row],
        index: list[int],
        logits: torch.Tensor,
        prefilled: tuple[Any, torch.Tensor, torch.Tensor],
    ) -> None:
        """Each reviewed row's baseline: its review text after its prompt and the empty output
        (``rows[j]``'s prompt is row ``index[j]`` of ``logits`` and ``prefilled``); rows with
        the same prompt and the same texts (a request's candidates) are scored once."""
        asked: dict[tuple[int, tuple[int, ...]], list[Row]] = {}
        for row, position in zip(rows, index, strict=True):
            if row.review_ids:
                asked.setdefault((position, tuple(row.empty_ids + row.review_ids)), []).append(row)
        if not asked:
            return
        clock = time.perf_counter()
        keys = list(asked)
        at = [position for position, _ in keys]
        scores = score_continuations(
            self.engine,
            fork_rows(*prefilled, at),
            logits[torch.tensor(at, device=logits.device)],
            [list(sequence) for _, sequence in keys],
            [len(asked[key][0].review_ids) for key in keys],
        )
        for key, score in zip(keys, scores, strict=True):
            for row in asked[key]:
                row.review_baseline = score
        self.engine.stats.review_s += time.perf_counter() - clock

    def _review(self, ended: list[int], raw: torch.Tensor, reviewed: list[int]) -> None:
        """Each ended row's review score: its review text after its prompt and its output
        (``raw``: the rows' logits before penalties and masks, for the ``reviewed`` positions)."""
        clock = time.perf_counter()
        at = {k: j for j, k in enumerate(reviewed)}
        scores = score_continuations(
            self.engine,
            self._fork(ended),
            raw[on_device([at[k] for k in ended], raw.device, torch.long)],
            [self.rows[k].review_ids for k in ended],
            [len(self.rows[k].review_ids) for k in ended],
        )
        for k, score in zip(ended, scores, strict=True):
            self.rows[k].review = score
        self.engine.stats.review_s += time.perf_counter() - clock

    def _fork(self, rows: list[int]) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """A cache of ``rows`` alone, with their mask and next positions, to feed without
        changing the batch's (the review of the rows that ended)."""
        return self.kv.fork(rows)

    def _prefill(self, rows: list[Row]) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        width = max(len(row.prompt_ids) for row in rows)
        ids = torch.full((len(rows), width), self.engine.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for j, row in enumerate(rows):
            ids[j, width - len(row.prompt_ids) :] = torch.tensor(row.prompt_ids)
            mask[j, width - len(row.prompt_ids) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = growing_cache(self.engine.model.config)
        logits = self.engine.forward(ids, mask, positions, cache, exact_rows=_exact_rows(rows))
        return logits, cache, mask, positions[:, -1:] + 1

    def _begin(self) -> torch.Tensor | None:
        """Drop the cancelled rows; the logits the rows pick from, None when no row is left."""
        self._keep([k for k, row in enumerate(self.rows) if row.stream is None or not row.stream.cancelled])
        return self.logits if self.rows else None

    def _saved(self, logits: torch.Tensor) -> tuple[list[SamplingParams], list[int], _Saved]:
        """The rows' sampling parameters, their log probability counts (-1: none asked), and
        what the step keeps of ``logits`` before penalties and masks change them."""
        params = [row.request.sampling for row in self.rows]
        counts = [-1 if p.logprobs is None else p.logprobs for p in params]
        raw = logits.clone() if any(count >= 0 for count in counts) else None
        reviewed = [k for k, row in enumerate(self.rows) if row.review_ids]
        review_raw = logits[on_device(reviewed, logits.device, torch.long)].clone() if reviewed else None
        return params, counts, _Saved(raw, reviewed, review_raw)

    def _settle(self, tokens: list[int], logprobs: list[list[tuple[int, float]]], saved: _Saved) -> list[int]:
        """Advance every row by its token, end the rows whose grammar is too slow, score the
        reviews of the rows that ended, finish their streams; the rows that go on."""
        rows, stats = self.rows, self.engine.stats
        for k, (row, token) in enumerate(zip(rows, tokens, strict=True)):
            self._advance(row, k, token, logprobs[k])
        self._end_slow_grammars()
        stats.grammar_s += sum(self.masker.spent.values())
        self.masker.spent.clear()
        ended = [k for k in saved.reviewed if rows[k].finish_reason in ("grammar", "stop")]
        if ended and saved.review_raw is not None:
            self._review(ended, saved.review_raw, saved.reviewed)
        stats.steps += 1
        stats.row_steps += len(rows)
        for row in rows:
            if row.finished and row.stream is not None:
                row.stream.finish(row.completion(latency_s=time.perf_counter() - row.submitted))
        return [k for k, row in enumerate(rows) if not row.finished]

    @torch.inference_mode()
    def step(self) -> None:
        logits = self._begin()
        if logits is None:
            return
        stats, rows = self.engine.stats, self.rows
        self.masker.spent.clear()
        clock = time.perf_counter()
        params, counts, saved = self._saved(logits)
        generated = [row.tokens for row in rows]
        penalize(logits, generated, params)
        ban_bad_words(logits, generated, [row.banned for row in rows])
        ban_repeats(logits, generated, [p.no_repeat_ngram_size for p in params])
        tokens = select_tokens(logits, range(len(rows)), self.masker, params, [r.generator for r in rows])
        logprobs = top_logprobs(saved.raw, tokens, counts) if saved.raw is not None else [[] for _ in rows]
        stats.select_s += time.perf_counter() - clock
        keep = self._settle(tokens, logprobs, saved)
        self._keep(keep)
        if not self.rows:
            return
        clock = time.perf_counter()
        self.kv.grow()
        fed = torch.tensor([tokens[k] for k in keep]).unsqueeze(1)
        self.logits = self.engine.forward(
            fed, self.kv.mask, self.kv.next_pos, self.kv.cache, exact_rows=_exact_rows(self.rows)
        )
        self.kv.advance()
        stats.decode_s += time.perf_counter() - clock

    def _end_slow_grammars(self) -> None:
        """End each row whose grammar worked past :data:`GRAMMAR_STEP_BUDGET_S` this step (an
        error of its request): the batch waits on it, and such a matcher's work grows."""
        for k, spent in self.masker.spent.items():
            row = self.rows[k]
            if spent > GRAMMAR_STEP_BUDGET_S and not row.finished:
                row.fail(
                    f"request {row.index} ({row.request.request_id}): its grammar took {spent:.2f} s to "
                    f"advance one token (at most {GRAMMAR_STEP_BUDGET_S} s) after {row.sampled} tokens; "
                    "a grammar whose matching work grows with each token (nested repetitions) cannot be "
                    "decoded: simplify it",
                    request="grammar",
                )

    def _keep(self, keep: list[int]) -> None:
        if len(keep) == len(self.rows):
            return
        self.rows = [self.rows[k] for k in keep]
        self.kv.keep(keep)
        self.masker.keep(keep)
        self.logits = self.logits[keep] if self.logits is not None and keep else None

    def _advance(self, row: Row, k: int, token: int, logprobs: list[tuple[int, float]]) -> None:
        if token == NO_TOKEN:
            row.fail(
                f"request {row.index} ({row.request.request_id}): the grammar allows no token after "
                f"{row.sampled} tokens (it matches nothing the vocabulary can spell)",
                grammar=True,
            )
            return
        clock = time.perf_counter()
        accepted = self.masker.accept(k, token)
        terminated = accepted and self.masker.is_terminated(k)
        self.engine.stats.accept_s += time.perf_counter() - clock
        before = len(row.tokens)
        row.advance(
            token,
            accepted=accepted,
            terminated=terminated,
            constrained=self.masker.constrained(k),
            stop_token_ids=row.stop_token_ids,
            decode=self.engine.decode_text,
        )
        row.steps += 1
        row.rows_seen += len(self.rows)
        added = tuple(row.tokens[before:])
        scored: tuple[TokenLogprob, ...] = ()
        if logprobs and added:
            text = self.engine.decode_text
            top = tuple((text([i]), value) for i, value in logprobs[1:])
            scored = (TokenLogprob(token, text([token]), logprobs[0][1], top),)
            row.logprobs.append(scored[0])
        if row.stream is not None and row.streams_text:
            fresh = row.delta(self.engine.decode_text)
            if fresh or added:
                row.stream.push(StreamDelta(fresh, added, scored))
