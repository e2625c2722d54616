"""The store seam's roles: small, and together what ``SqlStore`` implements."""

from __future__ import annotations

import inspect

from structured_agents.store import (
    BatchStore,
    LogStore,
    QueueStore,
    ReportStore,
    ResultStore,
    SqlStore,
    StepStore,
    Store,
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


def test_the_sql_store_implements_every_role() -> None:
    wanted = set().union(*(_methods(role) for role in ROLES)) | _methods(Store)
    assert {"url", "dialect", "close"} <= wanted
    missing = [name for name in sorted(wanted) if not callable(getattr(SqlStore, name, None))]
    assert missing == [] or set(missing) <= {"url", "dialect"}  # properties, not callables
    assert all(hasattr(SqlStore, name) for name in wanted)
