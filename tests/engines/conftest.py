"""Fixtures of the engine tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from typing import TYPE_CHECKING

import pytest
from engines.slot_loop import slot_loop

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine


@pytest.fixture(params=["cpu loop", "slot loop"])
def decoding(request: pytest.FixtureRequest, engine: TransformersEngine) -> Iterator[TransformersEngine]:
    """The session's engine decoding through its CPU loop, then through the GPU's slot loop
    (run eagerly on CPU: :mod:`engines.slot_loop`)."""
    with slot_loop(engine) if request.param == "slot loop" else nullcontext():
        yield engine
