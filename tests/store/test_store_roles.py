"""The store seam's roles: small, and together what ``SqlStore`` and ``MemoryStore`` implement."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from structured_agents.store import (
    BatchStore,
    LogStore,
    MemoryStore,
    QueueStore,
    ReportStore,
    ResultStore,
    SqlStore,
    StepStore,
    Store,
    memory,
    runlog,
)

ROLES = (BatchStore, QueueStore, LogStore, ResultStore, ReportStore, StepStore)


def _methods(protocol: type) -> set[str]:
    return {
        name
        for name, _ in inspect.getmembers(protocol)
        if not name.startswith("_") and name in vars(protocol)
    }


def test_each_role_has_a_dozen_methods_at_most_and_no_two_share_one() -> None:
    sizes = {role.__name__: len(_methods(role)) for role in ROLES}
    assert all(1 <= size <= 12 for size in sizes.values()), sizes
    every = [name for role in ROLES for name in _methods(role)]
    assert len(every) == len(set(every))


@pytest.mark.parametrize("implementation", [SqlStore, MemoryStore])
def test_each_store_implements_every_role(implementation: type) -> None:
    wanted = set().union(*(_methods(role) for role in ROLES)) | _methods(Store)
    assert {"url", "dialect", "close"} <= wanted
    missing = [name for name in sorted(wanted) if not callable(getattr(implementation, name, None))]
    assert missing == [] or set(missing) <= {"url", "dialect"}  # properties, not callables
    assert all(hasattr(implementation, name) for name in wanted)
    for name in wanted - {"url", "dialect"}:  # the same parameters as the role's method
        role = next(role for role in (*ROLES, Store) if name in vars(role))
        expected = inspect.signature(getattr(role, name)).parameters
        assert list(inspect.signature(getattr(implementation, name)).parameters) == list(expected), name


def test_the_memory_store_imports_nothing_of_sql() -> None:
    tree = ast.parse(Path(memory.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    sql = ("sqlalchemy", "alembic", "psycopg")
    sql += tuple(f"structured_agents.store.{name}" for name in ("bulk", "connection", "database", "migrate"))
    sql += tuple(
        f"structured_agents.store.{name}" for name in ("models", "queue", "report", "rows", "runlog")
    )
    sql += ("structured_agents.store.sql", "structured_agents.store.steps")
    assert not {name for name in imported if name in sql or name.startswith(tuple(f"{s}." for s in sql))}


def test_the_memory_store_names_itself_its_views_and_flags() -> None:
    assert memory.VIEWS == runlog.VIEWS
    assert memory.SHARED_SUMMARY == runlog.SHARED_SUMMARY
    with MemoryStore() as store:
        assert (store.url, store.dialect) == ("memory://", "memory")
