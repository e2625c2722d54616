"""Fixtures of the report tests: one scripted batch per dialect, run once for the session.

``filled`` is a store holding the batch of ``scripted_batch.run_scripted_batch`` (the
docstring_calls bundle over the sample project), once on SQLite and once on PostgreSQL;
``sqlite_filled`` is the SQLite one alone, for the tests of the page, the command line, the API
and the browser.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_batch import Filled, run_scripted_batch
from services import PostgresServer, create_database, drop_database

from structured_agents.bundles import Bundle, load_bundle
from structured_agents.pym import PymRunner
from structured_agents.store import SqlStore


@pytest.fixture(scope="session")
def docstring_bundle() -> Iterator[Bundle]:
    """The shipped tool-call docstring bundle (docstring_calls), on a sandbox pool of its own."""
    with PymRunner() as runner:
        bundle = load_bundle("docstring_calls", runner=runner)
        yield bundle
        bundle.close()


def _filled(url: str, bundle: Bundle, workdir: Path) -> Iterator[Filled]:
    with SqlStore(url) as store:
        yield store, run_scripted_batch(bundle, store, workdir)


@pytest.fixture(scope="session")
def sqlite_filled(tmp_path_factory: pytest.TempPathFactory, docstring_bundle: Bundle) -> Iterator[Filled]:
    """A SQLite store holding one scripted batch."""
    workdir = tmp_path_factory.mktemp("sqlite-batch")
    yield from _filled(f"sqlite:///{workdir / 'sa.db'}", docstring_bundle, workdir)


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def filled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, docstring_bundle: Bundle
) -> Iterator[Filled]:
    """A store of each dialect holding one scripted batch."""
    if request.param == "sqlite":
        yield request.getfixturevalue("sqlite_filled")
        return
    server: PostgresServer = request.getfixturevalue("pg_server")
    url = create_database(server)
    yield from _filled(url, docstring_bundle, tmp_path_factory.mktemp("pg-batch"))
    drop_database(server, url)
