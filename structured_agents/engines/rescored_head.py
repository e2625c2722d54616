"""The LM head of a CPU decode step: every logit estimated in int8, the best ones computed again.

Gemma 3 270M's head is a 262144 x 640 product per row, the largest of a step. At batch 8
:class:`~.int8_weights.Int8Linear` takes 10.5 ms for it (its kernel converts the weight once per
row), the bfloat16 GEMM 13.6 ms. :class:`RescoredHead` estimates the logits with a dynamically
quantized int8 x int8 product (oneDNN's ``quantized::linear_dynamic``, VNNI: 3.6 ms at 1 row,
4.8 ms at 8), then computes the :data:`EXACT` best-estimated tokens of each row again from the
bfloat16 weight, as the plain head computes them, and writes those in. So the token a greedy
row takes is the plain head's wherever its best token is among the estimate's 64 best: over 160
decode steps of Gemma 3 270M it was among the estimate's 4 best every time. The other logits
keep the estimate (within about 2 of the plain head's, 0.2 on average), which a greedy row reads
only where its grammar refuses all 64. The estimate quantizes the activations of the whole batch
with one scale, so those other logits of a row move a little with the rows beside it: the rows
that sample or report log probabilities (:attr:`RescoredHead.exact_rows`, which the engine sets)
take every logit from the weight, so that a seed alone decides a sample, whichever batch it
shares.

A call that is not a decode step (a prefill's last positions, a review's scoring), more rows
than ``max_rows`` or another device or dtype multiplies by the weight, as the plain head does.

Packing the weight for oneDNN takes 0.55 s for Gemma 3 270M (fbgemm's packing, 1.6 s); the
engine does it on a loading thread while the tokenizer is read, so a start does not wait for
it. torch 2.13 deprecates the quantized tensors the packing starts from (pytorch#184982; torch
is pinned): where they or the quantized engine are missing, the head stays an
:class:`~.int8_weights.Int8Linear` (:func:`rescore_head`).
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from structured_agents.engines.int8_weights import Int8Linear, StepLinear
from structured_agents.engines.vocab_rank import topk_rows

__all__ = ["EXACT", "RescoredHead", "rescore_head"]

EXACT = 64
"""How many of each row's best-estimated tokens get their logits from the bfloat16 weight."""
_ENGINE = "onednn"
_PACKING = threading.Lock()
"""torch's quantized engine is a process setting: one packing changes it at a time."""
logger = logging.getLogger(__name__)


class RescoredHead(StepLinear):
    """An LM head whose decode steps estimate every logit in int8 and compute the
    :data:`EXACT` best again from the weight."""

    def __init__(self, linear: nn.Linear, packed: Any, *, max_rows: int) -> None:
        super().__init__(linear, max_rows=max_rows)
        self._packed = packed
        self.exact_rows: frozenset[int] = frozenset()
        """Rows of the next call whose every logit comes from the weight (rows that sample or
        report log probabilities: their logits must not move with the rows beside them);
        set by the engine around each forward pass."""

    def step(self, x: torch.Tensor) -> torch.Tensor:
        exact = sorted(row for row in self.exact_rows if row < x.shape[0])
        if len(exact) == x.shape[0]:
            out: torch.Tensor = self.linear(x)
            return out
        logits: torch.Tensor = torch.ops.quantized.linear_dynamic(x.float(), self._packed, False)
        _, best = topk_rows(logits, min(EXACT, self.out_features))
        again = torch.bmm(self.linear.weight[best], x.unsqueeze(-1)).squeeze(-1)  # the head's dtype
        if self.linear.bias is not None:
            logits = logits + self.linear.bias.float()
            again = again + self.linear.bias[best]
        logits.scatter_(1, best, again.float())
        if exact:
            index = torch.tensor(exact)
            logits[index] = self.linear(x[index]).float()
        return logits


def rescore_head(model: Any, *, packing: Callable[[], object] = lambda: None) -> bool:
    """Make ``model``'s LM head, an :class:`~.int8_weights.Int8Linear`, a :class:`RescoredHead`
    over the same int8 values; False (the head left as it is) where it is not one, or where this
    torch cannot pack it for oneDNN. ``packing`` is called as the packing starts, which lets the
    GIL go for half a second."""
    head = model.get_output_embeddings()
    if not isinstance(head, Int8Linear) or _ENGINE not in torch.backends.quantized.supported_engines:
        return False
    zero = torch.zeros(head.out_features, dtype=torch.long)
    with _PACKING, warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=".*quantized tensor creation functions", category=UserWarning
        )
        before = torch.backends.quantized.engine
        torch.backends.quantized.engine = _ENGINE
        try:
            weight = torch._make_per_channel_quantized_tensor(head.values, head.scales.double(), zero, 0)
            packing()
            packed = torch.ops.quantized.linear_prepack(weight, None)
        except (AttributeError, RuntimeError) as exc:  # a torch without them: the int8 copy stays
            logger.warning("the LM head keeps its int8 copy: oneDNN could not pack it (%s)", exc)
            return False
        finally:
            torch.backends.quantized.engine = before
    model.set_output_embeddings(RescoredHead(head.linear, packed, max_rows=head.max_rows))
    return True
