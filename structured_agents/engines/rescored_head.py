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

Packing the weight for oneDNN takes 0.55 s for Gemma 3 270M on a CPU with native bfloat16,
0.86 s (1.7 s of CPU) on one without (fbgemm's packing, 1.6 s). :func:`rescore_head` starts it
on a thread of its own and returns at once: the engine's start does not wait for it, and the
first decode step does (:meth:`RescoredHead.wait`), so it overlaps what comes between, the
caller's set-up, its grammars' compilation and the first prefill, which multiplies by the
weight. torch 2.13 deprecates the quantized tensors the packing starts from (pytorch#184982;
torch is pinned): where they or the quantized engine are missing, the head decodes from its
int8 copy (:class:`~.int8_weights.Int8Linear`), as it would unrescored.
"""

from __future__ import annotations

import logging
import threading
import warnings
from concurrent.futures import Future
from typing import Any

import torch

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

    def __init__(self, head: Int8Linear, packed: Future[Any]) -> None:
        """``head``'s weight, rescoring ``head``'s estimate once ``packed`` (its int8 copy packed
        for oneDNN, or None where it could not be) is done; ``head``'s own product until then
        never runs: a decode step waits for the packing."""
        super().__init__(head.linear, max_rows=head.max_rows)
        self._copy = head
        self._packed = packed
        self.exact_rows: frozenset[int] = frozenset()
        """Rows of the next call whose every logit comes from the weight (rows that sample or
        report log probabilities: their logits must not move with the rows beside them);
        set by the engine around each forward pass."""

    def wait(self) -> bool:
        """Wait for the packing; whether the estimate is rescored (False: this torch could not
        pack the int8 copy, and decode steps multiply by it)."""
        return self._packed.result() is not None

    def step(self, x: torch.Tensor) -> torch.Tensor:
        exact = sorted(row for row in self.exact_rows if row < x.shape[0])
        if len(exact) == x.shape[0]:
            out: torch.Tensor = self.linear(x)
            return out
        packed = self._packed.result()
        if packed is None:
            return self._copy.step(x)
        logits: torch.Tensor = torch.ops.quantized.linear_dynamic(x.float(), packed, False)
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


def rescore_head(model: Any) -> bool:
    """Make ``model``'s LM head, an :class:`~.int8_weights.Int8Linear`, a :class:`RescoredHead`
    over the same int8 values, which it packs on a thread of its own; False (the head left as it
    is) where it is not one, or where this torch has no oneDNN quantized engine."""
    head = model.get_output_embeddings()
    if not isinstance(head, Int8Linear) or _ENGINE not in torch.backends.quantized.supported_engines:
        return False
    packed: Future[Any] = Future()
    weight = _quantized(head)

    def pack(weight: torch.Tensor) -> None:
        try:
            packed.set_result(_prepack(weight))
        except BaseException as exc:  # the decode steps that wait for it raise it
            packed.set_exception(exc)

    if weight is None:
        packed.set_result(None)
    else:  # not a daemon: an interpreter that ends while oneDNN packs waits the second it takes
        threading.Thread(target=pack, args=(weight,), name="lm-head-packing").start()
    model.set_output_embeddings(RescoredHead(head, packed))
    return True


def _quantized(head: Int8Linear) -> torch.Tensor | None:
    """``head``'s int8 copy as a quantized tensor, or None where this torch has none."""
    zero = torch.zeros(head.out_features, dtype=torch.long)
    with warnings.catch_warnings():  # on the caller's thread: the filters are the process's
        warnings.filterwarnings(
            "ignore", message=".*quantized tensor creation functions", category=UserWarning
        )
        try:
            return torch._make_per_channel_quantized_tensor(head.values, head.scales.double(), zero, 0)
        except (AttributeError, RuntimeError) as exc:
            logger.warning("the LM head keeps its int8 copy: torch cannot quantize it (%s)", exc)
            return None


def _prepack(weight: torch.Tensor) -> Any:
    """``weight`` packed for oneDNN's dynamic quantized linear; None where this torch cannot
    pack it."""
    with _PACKING:
        before = torch.backends.quantized.engine
        torch.backends.quantized.engine = _ENGINE
        try:
            return torch.ops.quantized.linear_prepack(weight, None)
        except (AttributeError, RuntimeError) as exc:  # a torch without it: the int8 copy decodes
            logger.warning("the LM head keeps its int8 copy: oneDNN could not pack it (%s)", exc)
            return None
        finally:
            torch.backends.quantized.engine = before
