"""Fixtures of the engine tests: one real transformers engine per test session.

The engine loads the default shipped model from the user cache (converting it there on the
first run on a machine, about a minute). Without the model stack (torch, transformers, the
model package) the model tests skip, except under ``CI=true`` where they fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from services import require_model_stack

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine


@pytest.fixture(scope="session")
def engine(model_batch_size: int) -> TransformersEngine:
    """The default :class:`TransformersEngine` on CPU, loaded once for the session
    (batches of ``--model-batch-size``)."""
    require_model_stack()
    from structured_agents.engines.transformers_engine import TransformersEngine

    return TransformersEngine(device="cpu", max_batch_size=model_batch_size)
