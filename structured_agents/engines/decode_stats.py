"""Where a local engine spent its decoding time, and how full its batch was."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["DecodeStats"]


@dataclass(slots=True)
class DecodeStats:
    """Where the engine spent its time, in seconds, and how full its batch was (benchmarks, logs)."""

    compile_s: float = 0.0
    """Compiling grammars (cache hits cost almost nothing; summed over the compiling threads)."""
    prefill_s: float = 0.0
    """Forward passes over the prompts."""
    decode_s: float = 0.0
    """Forward passes over generated tokens."""
    select_s: float = 0.0
    """Choosing tokens: filling and applying grammar bitmasks, argmax or sampling."""
    accept_s: float = 0.0
    """Advancing the grammar matchers by the chosen tokens."""
    grammar_s: float = 0.0
    """The grammar matchers' own work: bitmask fills and advances (part of ``select_s`` and
    ``accept_s``, or of the host work a GPU step hides)."""
    review_s: float = 0.0
    """Scoring review texts after prompts and outputs (:mod:`structured_agents.engines.review`)."""
    steps: int = 0
    """Decode steps (one token for every live row each)."""
    row_steps: int = 0
    """Sum over the steps of the rows decoded in each: ``row_steps / steps`` is the mean batch."""

    @property
    def mean_batch(self) -> float:
        """Mean number of rows per decode step."""
        return self.row_steps / self.steps if self.steps else 0.0

    def since(self, before: DecodeStats) -> DecodeStats:
        """What was added after ``before`` (a copy taken earlier)."""
        return DecodeStats(*(getattr(self, f.name) - getattr(before, f.name) for f in fields(self)))

    def copy(self) -> DecodeStats:
        return DecodeStats(*(getattr(self, f.name) for f in fields(self)))
