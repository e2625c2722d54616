"""The store seam's roles: small, and together what ``SqlStore`` and ``MemoryStore`` implement."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

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


def _imports(module: ModuleType) -> set[str]:
    """What ``module``'s source imports: module names, and ``module.name`` for each name a
    ``from module import name`` takes (which may be a module itself); relative ones resolved."""
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, module.__package__)
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return found


def _imported_modules(package: ModuleType) -> set[str]:
    """Every module ``package``'s modules import, followed through the modules of
    structured_agents they import, but for the ``structured_agents.store`` package itself (its
    ``__init__`` loads the SQL store, and ``MemoryStore`` with it)."""
    todo = [module for name, module in sys.modules.items() if name.startswith(f"{package.__name__}.")]
    todo.append(package)
    seen: set[str] = {module.__name__ for module in todo}
    while todo:
        for name in _imports(todo.pop()) - seen:
            seen.add(name)
            module = sys.modules.get(name)
            followed = name.startswith("structured_agents.") and name != "structured_agents.store"
            if followed and isinstance(module, ModuleType) and module.__name__ == name:
                todo.append(module)
    return seen


def test_the_memory_store_imports_nothing_of_sql() -> None:
    imported = _imported_modules(memory)
    assert {"structured_agents.store.memory.tables", "structured_agents.store.names"} <= imported
    assert "structured_agents.store.errors" in imported and "structured_agents.jobs.spec" in imported
    sql = ("sqlalchemy", "alembic", "psycopg")
    assert not {name for name in imported if name in sql or name.startswith(tuple(f"{s}." for s in sql))}


def test_the_memory_store_names_itself() -> None:
    with MemoryStore() as store:
        assert (store.url, store.dialect) == ("memory://", "memory")
