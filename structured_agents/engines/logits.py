"""One decoding step's logits work: token selection within each row's XGrammar grammar.

:class:`GrammarMasker` holds one ``xgrammar.GrammarMatcher`` per request of a batch (``None``
for unconstrained requests) and the batch's bitmask. The bitmask covers the model's whole logit
width, so ids the tokenizer does not know (padded vocabularies) are never allowed.

:func:`select_tokens` picks each row's token: argmax when its temperature is 0, else a sample
(temperature, then nucleus ``top_p``) drawn with that row's own ``torch.Generator``, so a
request's seed alone decides its sample, whichever batch it shares.

Masking is lazy for greedy rows. A greedy row's matcher is offered its argmax first
(``accept_token`` leaves a matcher unchanged when it rejects a token); usually it fits, and the
row's bitmask is never filled. The rows it does not fit (where the grammar forces a text the
model does not expect, ``{"name":`` before a call) and every sampling row get a bitmask, each
filled by its own matcher on this thread (so that each row's grammar time is its own,
:data:`GRAMMAR_STEP_BUDGET_S`): XGrammar's token mask cache makes a
fill a few microseconds a row (0.02-0.04 ms for 8 rows of a JSON schema's grammar, 262k-token
vocabulary, xgrammar 0.2.8), while handing the rows to a second thread cost 0.3-5 ms a call in
the CPU engine's decode loop, whose OpenMP team holds both cores. A greedy row then takes the
best token its bitmask allows (:meth:`GrammarMasker.best_allowed`): read from the bitmask's set
bits where it allows few (forced text: a handful of tokens), else the first of the row's 64 best
tokens the bitmask allows. A sampling row's bitmask is applied in place, with XGrammar's ``cpu``
kernel for CPU logits (0.4 ms a row here, against 1.7 for ``torch_native``) and with
``torch_native`` elsewhere (it needs no Triton). Either way the token is the lowest-id best
allowed one, as an argmax over the masked row gives. XGrammar's jump-forward search (the text a
grammar forces next) is never called: on a grammar whose forced text never ends (``root ::= "a"
root``) it never returns, and a client of ``sa serve`` may send one. A row whose mask allows no
token at all gets :data:`NO_TOKEN` and ends as an error of its grammar.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import time
from collections.abc import Sequence
from typing import Literal

import torch
import xgrammar

from structured_agents.engines.vocab_rank import argmax_rows, topk_rows
from structured_agents.kernel.engine import SamplingParams

logger = logging.getLogger(__name__)

__all__ = [
    "GRAMMAR_STEP_BUDGET_S",
    "MIN_TEMPERATURE",
    "NO_TOKEN",
    "GrammarMasker",
    "penalize",
    "sample",
    "select_tokens",
    "top_logprobs",
]

_CANDIDATES = 64
"""How many of a greedy row's best tokens are read against a bitmask that allows many tokens,
before its set bits are."""
_FEW_WORDS = 64
"""A bitmask with at most this many nonzero words (2048 tokens) is read from its set bits."""
_BITS = torch.arange(32, dtype=torch.int32)
"""A bitmask word's bit positions (bit ``b`` of word ``w`` allows token ``32 * w + b``)."""
GRAMMAR_STEP_BUDGET_S = 0.25
"""The most one row's grammar may work for one token (its bitmask, its matcher's advance); a
row over it ends as an error of its request. A matcher's work is microseconds a token for tool
and JSON grammars, but grows with every token on nested repetitions
(``root ::= (("a"{0,1000}){0,1000}){0,1000}``: 1.8 s for 8 tokens, 148 s for 20), and while it
works the whole batch waits."""
MIN_TEMPERATURE = 1e-5
"""A lower temperature is greedy, as in vLLM (its ``_SAMPLING_EPS``): ``1e-320`` is 0 in float32,
and dividing by it made every row of the batch fail."""
NO_TOKEN = -1
"""The token :func:`select_tokens` gives a row whose grammar allows no token at all (a grammar
that matches nothing, or a dead end the vocabulary cannot spell): the row ends as an error."""


class GrammarMasker:
    """The grammar state of one batch: a matcher per row and the shared bitmask.

    Batch rows are the requests of the chunk; positions are rows of the current logits, which
    shrink as rows finish (``rows[position]`` is the batch row).
    """

    def __init__(
        self,
        grammars: Sequence[xgrammar.CompiledGrammar | None],
        *,
        vocab_size: int,
        stop_token_ids: Sequence[int],
        pinned: bool = False,
    ) -> None:
        """``vocab_size`` is the bitmask width (the model's logit width or more); the matchers
        end on ``stop_token_ids`` once their grammar is complete; ``pinned`` keeps the bitmask
        in page-locked memory (a GPU loop copies it to the device without waiting)."""
        self._stops = list(stop_token_ids)
        self._matchers: list[xgrammar.GrammarMatcher | None] = []
        self.vocab_size = vocab_size
        self._pinned = pinned
        self._triton: bool | None = None
        """Whether CUDA masks go through XGrammar's Triton kernel (None: not looked for yet)."""
        self._bitmask = self._allocate(max(1, len(grammars)))
        self._taken: dict[int, int] = {}
        """Rows whose matcher :meth:`first_accepted` already advanced, with the token."""
        self.spent: dict[int, float] = {}
        """Seconds each batch row's matcher worked since the last :meth:`keep` or clear: the
        engine clears it each step and ends a row over :data:`GRAMMAR_STEP_BUDGET_S`."""
        for grammar in grammars:
            self.add(grammar)

    def __len__(self) -> int:
        return len(self._matchers)

    def add(
        self, grammar: xgrammar.CompiledGrammar | None, *, stop_token_ids: Sequence[int] | None = None
    ) -> None:
        """A new last row, under ``grammar`` (None: unconstrained), ending on ``stop_token_ids``
        (default: the masker's); rows join between steps."""
        stops = self._stops if stop_token_ids is None else list(stop_token_ids)
        matcher = None if grammar is None else xgrammar.GrammarMatcher(grammar, override_stop_tokens=stops)
        self._matchers.append(matcher)
        if len(self._matchers) > self._bitmask.shape[0]:
            self._bitmask = self._allocate(2 * len(self._matchers))

    def _allocate(self, rows: int) -> torch.Tensor:
        bitmask = xgrammar.allocate_token_bitmask(rows, self.vocab_size)
        return bitmask.pin_memory() if self._pinned else bitmask

    @property
    def bitmask(self) -> torch.Tensor:
        """``[rows or more, words]``: the bitmask :meth:`fill` writes (row ``position``)."""
        return self._bitmask

    def keep(self, rows: Sequence[int]) -> None:
        """Keep only ``rows``, in that order (rows that finished leave between steps)."""
        self._matchers = [self._matchers[row] for row in rows]
        self._taken.clear()
        self.spent.clear()

    def _spend(self, row: int, since: float) -> None:
        self.spent[row] = self.spent.get(row, 0.0) + time.perf_counter() - since

    def constrained(self, row: int) -> bool:
        """Whether batch row ``row`` decodes under a grammar."""
        return self._matchers[row] is not None

    def live(self, rows: Sequence[int]) -> list[int]:
        """Positions of the constrained rows among ``rows`` whose grammar is not yet complete."""
        return [
            position
            for position, row in enumerate(rows)
            if (matcher := self._matchers[row]) is not None and not matcher.is_terminated()
        ]

    def first_accepted(self, row: int, candidates: Sequence[int]) -> int | None:
        """The first of ``candidates`` row ``row``'s grammar accepts, already accepted (the next
        :meth:`accept` of it is then a no-op); None when it accepts none of them."""
        matcher = self._matchers[row]
        if matcher is None:
            return candidates[0] if candidates else None
        started = time.perf_counter()
        try:
            for token in candidates:
                if 0 <= token < self.vocab_size and matcher.accept_token(token):
                    self._taken[row] = token
                    return token
            return None
        finally:
            self._spend(row, started)

    def fill(self, rows: Sequence[int], positions: Sequence[int]) -> None:
        """Fill the bitmask at ``positions`` (constrained rows; ``rows[position]`` is the batch row)."""
        for position in positions:  # one row a call: each row's time is its own
            matcher = self._matchers[rows[position]]
            if matcher is None:
                raise ValueError("GrammarMasker.fill: an unconstrained row has no bitmask")
            started = time.perf_counter()
            matcher.fill_next_token_bitmask(self._bitmask, position)
            self._spend(rows[position], started)

    def mask(self, logits: torch.Tensor, positions: Sequence[int]) -> None:
        """Set the logits the filled bitmask forbids to ``-inf`` at ``positions``, in place: with
        XGrammar's ``cpu`` kernel on CPU; on CUDA with its Triton kernel (one pass over the logits)
        where Triton imports, else ``torch_native``. A pinned bitmask is copied to the device
        without waiting (the GPU loop's)."""
        if not positions:
            return
        bitmask = self._bitmask
        if logits.device != bitmask.device:
            bitmask = bitmask[: max(positions) + 1].to(logits.device, non_blocking=self._pinned)
        width = min(logits.shape[-1], self.vocab_size)
        if logits.device.type == "cuda" and self._triton is None:
            self._triton = importlib.util.find_spec("triton") is not None
        if logits.device.type == "cuda" and self._triton:
            try:
                xgrammar.apply_token_bitmask_inplace(
                    logits, bitmask, vocab_size=width, indices=list(positions), backend="triton"
                )
            except Exception as exc:  # a Triton that cannot build the kernel: torch_native does
                logger.warning("xgrammar's Triton bitmask kernel failed (%s); masking with torch", exc)
                self._triton = False
        if logits.device.type != "cuda" or not self._triton:
            backend: Literal["cpu", "torch_native"] = "cpu" if logits.device.type == "cpu" else "torch_native"
            xgrammar.apply_token_bitmask_inplace(
                logits, bitmask, vocab_size=width, indices=list(positions), backend=backend
            )
        if logits.shape[-1] > self.vocab_size:  # logit ids beyond the grammar's vocabulary
            logits[list(positions), self.vocab_size :] = float("-inf")

    def best_allowed(self, logits: torch.Tensor, position: int) -> int:
        """The best token of ``logits[position]`` its filled bitmask allows (the lowest id among
        equals, as an argmax over the masked row), :data:`NO_TOKEN` when it allows none, or none
        with a finite logit. A bitmask that allows many tokens is first read at the row's
        :data:`_CANDIDATES` best tokens; one that allows few, or none of those, from its set bits."""
        words = self._bitmask[position]
        width = min(logits.shape[-1], self.vocab_size)
        found = words.nonzero().squeeze(-1)
        if found.numel() > _FEW_WORDS:
            _, top = topk_rows(logits[position : position + 1, :width], min(_CANDIDATES, width))
            ids = top[0].to(words.device)
            hits = ((words[ids >> 5] >> (ids & 31)) & 1).nonzero()
            if hits.numel():
                token = int(ids[hits[0, 0]])
                return token if math.isfinite(float(logits[position, token])) else NO_TOKEN
        bits = ((words[found].unsqueeze(-1) >> _BITS) & 1).bool()
        allowed = (found.unsqueeze(-1) * 32 + _BITS)[bits]
        allowed = allowed[allowed < width].to(torch.long)
        if allowed.numel() == 0:
            return NO_TOKEN
        values = logits[position, allowed.to(logits.device)]
        best = int(torch.argmax(values).item())
        return int(allowed[best]) if math.isfinite(float(values[best])) else NO_TOKEN

    def accept(self, row: int, token: int) -> bool:
        """Advance row ``row``'s matcher by ``token``; False when the grammar rejects it."""
        if self._taken.pop(row, None) == token:
            return True
        matcher = self._matchers[row]
        if matcher is None:
            return True
        started = time.perf_counter()
        accepted = bool(matcher.accept_token(token))
        self._spend(row, started)
        return accepted

    def is_terminated(self, row: int) -> bool:
        """Whether row ``row``'s grammar is complete and has accepted its stop token."""
        matcher = self._matchers[row]
        return matcher is not None and bool(matcher.is_terminated())


def sample(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> int:
    """One token drawn from a single row of logits (on CPU, so seeds behave the same everywhere;
    the temperature is at least :data:`MIN_TEMPERATURE`, lower ones are greedy)."""
    probs = torch.softmax(logits.float().cpu() / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the first token always stays).
        outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= params.top_p
        outside[0] = False
        sorted_probs[outside] = 0.0
        choice = torch.multinomial(sorted_probs, 1, generator=generator)
        return int(order[choice].item())
    return int(torch.multinomial(probs, 1, generator=generator).item())


def penalize(
    logits: torch.Tensor, generated: Sequence[Sequence[int]], params: Sequence[SamplingParams]
) -> None:
    """Apply each row's ``frequency_penalty`` to ``logits`` in place: a token's logit loses the
    penalty once per time the row already generated it (one scatter over the whole batch)."""
    rows: list[int] = []
    ids: list[int] = []
    amounts: list[float] = []
    width = logits.shape[-1]
    for k, (tokens, sampling) in enumerate(zip(generated, params, strict=True)):
        if sampling.frequency_penalty and tokens:
            inside = [t for t in tokens if t < width]
            rows += [k] * len(inside)
            ids += inside
            amounts += [-sampling.frequency_penalty] * len(inside)
    if rows:
        index = (torch.tensor(rows, device=logits.device), torch.tensor(ids, device=logits.device))
        logits.index_put_(
            index, torch.tensor(amounts, dtype=logits.dtype, device=logits.device), accumulate=True
        )


def top_logprobs(
    logits: torch.Tensor, tokens: Sequence[int], counts: Sequence[int]
) -> list[list[tuple[int, float]]]:
    """For each row of ``logits``: the chosen token's log probability, then its ``counts[k]`` most
    likely alternatives, as ``(token, logprob)`` (rows with a negative count get nothing)."""
    wanted = [k for k, count in enumerate(counts) if count >= 0]
    out: list[list[tuple[int, float]]] = [[] for _ in counts]
    if not wanted:
        return out
    logprobs = torch.log_softmax(logits[wanted].float(), dim=-1)
    chosen = logprobs[torch.arange(len(wanted)), torch.tensor([tokens[k] for k in wanted])].tolist()
    most = max(counts[k] for k in wanted)
    best = topk_rows(logprobs, most) if most else None  # (values, ids)
    for j, k in enumerate(wanted):
        out[k].append((tokens[k], float(chosen[j])))
        if best is not None and counts[k]:
            values, ids = (part[j, : counts[k]].tolist() for part in best)
            out[k] += [(int(i), float(v)) for i, v in zip(ids, values, strict=True)]
    return out


def select_tokens(
    logits: torch.Tensor,
    rows: Sequence[int],
    masker: GrammarMasker,
    params: Sequence[SamplingParams],
    generators: Sequence[torch.Generator | None],
) -> list[int]:
    """The next token of each row of ``logits`` (``[positions, vocab]``; position k is batch row
    ``rows[k]`` with ``params[k]`` and ``generators[k]``), within each row's grammar.

    Rows with a temperature under :data:`MIN_TEMPERATURE` (or without a generator) take the
    argmax; the others sample.
    ``logits`` may be masked in place.
    """
    sampling = [
        p.temperature >= MIN_TEMPERATURE and g is not None for p, g in zip(params, generators, strict=True)
    ]
    constrained = masker.live(rows)
    greedy = [k for k in constrained if not sampling[k]]
    to_mask = [k for k in constrained if sampling[k]]
    tokens = [int(t) for t in argmax_rows(logits).tolist()]
    missed = [k for k in greedy if masker.first_accepted(rows[k], tokens[k : k + 1]) is None]
    if missed or to_mask:  # the argmax does not fit, or the row samples: its bitmask decides
        masker.fill(rows, sorted(missed + to_mask))
    for k in missed:
        tokens[k] = masker.best_allowed(logits, k)
    if to_mask:
        masker.mask(logits, to_mask)
        chosen = argmax_rows(logits[torch.tensor(to_mask, device=logits.device)]).tolist()
        for k, best in zip(to_mask, chosen, strict=True):
            tokens[k] = best if math.isfinite(float(logits[k, best])) else NO_TOKEN
    for k, generator in enumerate(generators):
        if sampling[k] and generator is not None and tokens[k] != NO_TOKEN:
            tokens[k] = sample(logits[k], params[k], generator)
    return tokens
