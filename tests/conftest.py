"""Options of the whole suite.

``--model-batch-size N`` sets the batch size of every real-model test (the engines' and the
embedded runner's), so the model tests can be proven on other batch sizes than the default::

    OMP_NUM_THREADS=1 .venv/bin/pytest -m model --model-batch-size 3
"""

from __future__ import annotations

import pytest


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
