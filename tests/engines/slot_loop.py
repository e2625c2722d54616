"""The engine's GPU decode loop (:class:`~structured_agents.engines.slot_stepper.SlotStepper`),
run on CPU without CUDA graphs for the tests: the same slot cache, step and host work as on
CUDA, where the engine takes it by itself."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from structured_agents.engines.slot_stepper import SlotStepper
from structured_agents.engines.step_loop import StepLoop

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine


@contextmanager
def slot_loop(engine: TransformersEngine) -> Iterator[SlotStepper]:
    """``engine`` decoding through a :class:`SlotStepper` for the block, then as before."""
    saved = engine._stepper, engine._loop
    stepper = SlotStepper(engine, graphs=False)
    engine._stepper, engine._loop = stepper, StepLoop(stepper, name="slot-loop")
    try:
        yield stepper
    finally:
        engine._loop.close()
        engine._stepper, engine._loop = saved
