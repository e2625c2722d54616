"""The LM head of a CPU decode step: every logit estimated cheaply, the best ones computed again.

Gemma 3 270M's head is a 262144 x 640 product per row, the largest of a step. At batch 8
:class:`~.int8_weights.Int8Linear` takes 10.5 ms for it (its kernel converts the weight once per
row), the bfloat16 GEMM 13.6 ms. :class:`RescoredHead` estimates the logits, then computes the
:data:`EXACT` best-estimated tokens of each row again from the weight, as the plain head computes
them, and writes those in. So the token a greedy row takes is the plain head's wherever its best
token is among the estimate's 64 best. The other logits keep the estimate, which a greedy row
reads only where its grammar refuses all 64.

The estimate, by what the machine has:

* this project's kernel (:mod:`.int8_gemv`, where the machine built it): the head's int8 copy
  regrouped as 4-bit values with a float32 scale per 64 (84 MB read a step instead of 168), by
  the activations quantized per row to int8, with VNNI. 2.5-2.7 ms at 1 row against oneDNN's
  6.2, 10.4-10.6 ms at 8 against 8.9. Over 576 decode steps of Gemma 3 270M (the head's inputs
  recorded from short and 400-token prompts) the plain head's best token was among the
  estimate's 11 best every time; the other logits are within 6 of the plain head's, 0.5 on
  average. Each row is quantized on its own, so a row's estimate does not depend on the rows
  beside it. Regrouping takes 0.19 s.
* else oneDNN's ``quantized::linear_dynamic`` (VNNI), an int8 x int8 product with the batch's
  activations quantized with one scale: its other logits are within 2 of the plain head's, 0.13
  on average, and move a little with the rows beside a row. Packing the weight for it takes
  0.55 s for Gemma 3 270M on a CPU with native bfloat16, 0.86 s (1.7 s of CPU) on one without.
  torch 2.13 deprecates the quantized tensors the packing starts from (pytorch#184982; torch is
  pinned): where they or the quantized engine are missing, the head decodes from its int8 copy
  (:class:`~.int8_weights.Int8Linear`), as it would unrescored.

Rows that sample or report log probabilities (:attr:`RescoredHead.exact_rows`, which the engine
sets) take every logit from the weight, so that a seed alone decides a sample, whichever batch
it shares. A call that is not a decode step (a prefill's last positions, a review's scoring),
more rows than ``max_rows`` or another device or dtype multiplies by the weight, as the plain
head does.

:func:`rescore_head` prepares the estimate on a thread of its own and returns at once: the
engine's start does not wait for it, and the first decode step does (:meth:`RescoredHead.wait`),
so it overlaps what comes between, the caller's set-up, its grammars' compilation and the first
prefill, which multiplies by the weight.
"""

from __future__ import annotations

import functools
import logging
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import torch

from structured_agents.engines.int8_gemv import INT4_GROUP, INT4_WIDTH, Native, cpu_has, native
from structured_agents.engines.int8_weights import Int8Linear, StepLinear
from structured_agents.engines.vocab_rank import topk_rows

__all__ = ["EXACT", "VNNI", "Estimate", "RescoredHead", "rescore_head"]

Estimate = Callable[[torch.Tensor], torch.Tensor]
"""A decode step's estimated logits: ``[rows, in]`` activations to float32 ``[rows, vocab]``."""

EXACT = 64
"""How many of each row's best-estimated tokens get their logits from the bfloat16 weight."""
_ENGINE = "onednn"
VNNI = ("avx512_vnni", "avx_vnni", "amx_int8")
"""The CPU instructions the oneDNN estimate was measured with: on an AVX2 AMD EPYC without them
its estimate strayed past the bound the rescoring relies on (the engine tests' bound), so there
the head decodes from its int8 copy."""
_PACKING = threading.Lock()
"""torch's quantized engine is a process setting: one packing changes it at a time."""
logger = logging.getLogger(__name__)


class RescoredHead(StepLinear):
    """An LM head whose decode steps estimate every logit and compute the :data:`EXACT` best
    again from the weight."""

    def __init__(self, head: Int8Linear, estimate: Future[Estimate | None]) -> None:
        """``head``'s weight, rescoring ``estimate`` once it is ready (None where no estimate
        could be prepared); ``head``'s own product until then never runs: a decode step waits
        for the estimate."""
        super().__init__(head.linear, max_rows=head.max_rows)
        self._copy = head
        self._estimate = estimate
        self.exact_rows: frozenset[int] = frozenset()
        """Rows of the next call whose every logit comes from the weight (rows that sample or
        report log probabilities: their logits must not move with the rows beside them);
        set by the engine around each forward pass."""

    def wait(self) -> bool:
        """Wait for the estimate's preparation; whether decode steps rescore an estimate (False:
        this torch could not pack the int8 copy, and decode steps multiply by it)."""
        return self._estimate.result() is not None

    def estimate(self, x: torch.Tensor) -> torch.Tensor | None:
        """Every logit of a decode step's ``x`` (``[rows, in]``) as estimated, float32, none of
        them computed again; None where no estimate could be prepared."""
        estimate = self._estimate.result()
        return None if estimate is None else estimate(x)

    def step(self, x: torch.Tensor) -> torch.Tensor:
        exact = sorted(row for row in self.exact_rows if row < x.shape[0])
        if len(exact) == x.shape[0]:
            out: torch.Tensor = self.linear(x)
            return out
        logits = self.estimate(x)
        if logits is None:
            return self._copy.step(x)
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
    over the same int8 values, whose estimate it prepares on a thread of its own; False (the
    head left as it is) where it is not one, or where neither this project's kernel nor torch's
    oneDNN quantized engine on a CPU with :data:`VNNI` is here to estimate it."""
    head = model.get_output_embeddings()
    if not isinstance(head, Int8Linear):
        return False
    kernel = native()
    if kernel is not None and head.in_features % INT4_GROUP == 0 and head.in_features <= INT4_WIDTH:
        prepare: Callable[[], Estimate | None] = functools.partial(_int4, kernel, head)
    elif _ENGINE in torch.backends.quantized.supported_engines and cpu_has(*VNNI):
        prepare = functools.partial(_onednn, _quantized(head))
    else:
        return False
    estimate: Future[Estimate | None] = Future()

    def run() -> None:
        try:
            estimate.set_result(prepare())
        except BaseException as exc:  # the decode steps that wait for it raise it
            estimate.set_exception(exc)

    # not a daemon: an interpreter that ends while oneDNN packs waits the second it takes
    threading.Thread(target=run, name="lm-head-packing").start()
    model.set_output_embeddings(RescoredHead(head, estimate))
    return True


def _int4(kernel: Native, head: Int8Linear) -> Estimate:
    """The estimate from 4-bit groups of ``head``'s int8 copy (:meth:`~.int8_gemv.Native.int4_pack`)."""
    packed, scales = kernel.int4_pack(head.values, head.scales)
    return functools.partial(kernel.int4_product, packed=packed, scales=scales)


def _onednn(weight: torch.Tensor | None) -> Estimate | None:
    """The estimate from oneDNN's dynamic int8 product of ``weight`` (``head``'s int8 copy as a
    quantized tensor); None where there is none or oneDNN cannot pack it."""
    packed = None if weight is None else _prepack(weight)
    if packed is None:
        return None

    def estimate(x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = torch.ops.quantized.linear_dynamic(x.float(), packed, False)
        return logits

    return estimate


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
