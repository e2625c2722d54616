"""Options and fixtures of the whole suite.

``--model-batch-size N`` sets the batch size of every real-model test (the engines', the
server's and the embedded runner's), so the model tests can be proven on other batch sizes than
the default::

    OMP_NUM_THREADS=1 .venv/bin/pytest -m model --model-batch-size 3

``engine`` is one real transformers engine per test session, shared by the engine and serve
tests. It loads the default shipped model from the user cache (converting it there on the first
run on a machine, about a minute). Without the model stack (torch, transformers, the model
package) the model tests skip, except under ``CI=true`` where they fail.

``pg_server`` is a PostgreSQL server for the session, started only when a test asks for it; a
missing PostgreSQL fails the tests (see ``tests/services.py``). ``pg_url`` is a new, empty
database on it, dropped after the test. ``cluster`` is the distributed cluster of
tests/workers, tests/api and tests/cli (``tests/cluster_fixtures.py``), started once for the
session when a test asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from cluster_fixtures import cluster  # noqa: F401  (a fixture, shared by the session)
from services import PostgresServer, create_database, drop_database, require_model_stack, start_postgres

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


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A PostgreSQL server shared by the session."""
    server = start_postgres(tmp_path_factory.mktemp("postgres"))
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """URL of a new, empty PostgreSQL database, dropped after the test."""
    url = create_database(pg_server)
    yield url
    drop_database(pg_server, url)
