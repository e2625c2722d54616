"""Options and fixtures of the whole suite.

``--model-batch-size N`` sets the batch size of every real-model test (the engines', the
server's and the embedded runner's), so the model tests can be proven on other batch sizes than
the default::

    OMP_NUM_THREADS=1 .venv/bin/pytest -m model --model-batch-size 3

``engine`` is one real transformers engine per test session, shared by the engine and serve
tests. It loads the default shipped model from the user cache (converting it there on the first
run on a machine, about a minute). Without the model stack (torch, transformers, the model
package) the model tests skip, except under ``CI=true`` where they fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from services import require_model_stack

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--model-batch-size",
        type=int,
        default=8,
        help="batch size of the real-model tests (engines and embedded runs); default 8",
    )


@pytest.fixture(scope="session")
def model_batch_size(request: pytest.FixtureRequest) -> int:
    """The batch size the real-model tests decode with (``--model-batch-size``)."""
    size = int(request.config.getoption("--model-batch-size"))
    if size < 1:
        raise pytest.UsageError(f"--model-batch-size must be >= 1, got {size}")
    return size


@pytest.fixture(scope="session")
def engine(model_batch_size: int) -> TransformersEngine:
    """The default :class:`TransformersEngine` on CPU, loaded once for the session
    (batches of ``--model-batch-size``)."""
    require_model_stack()
    from structured_agents.engines.transformers_engine import TransformersEngine

    return TransformersEngine(device="cpu", max_batch_size=model_batch_size)
