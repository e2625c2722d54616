"""What a person types for a batch or a run: ``latest``, a whole id, or the start of one (the
CLI prints ids shortened, as git does); and which database a reading command may open.

``latest`` is the newest batch of the codebase the current directory is in (its root, or a
folder under it). A command that only reads falls back to the newest batch of any codebase
and says so; one that writes to a codebase (``sa apply``) never does: applying another
project's changes because of where the shell happened to be is not a mistake to make quietly.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from structured_agents.store import RecordNotFoundError, Store, StoreError

__all__ = ["MIN_PREFIX", "existing_database", "resolve"]

MIN_PREFIX = 6
"""The shortest start of an id taken for the id."""
_LATEST_SCAN = 200
"""How many of the newest batches ``latest`` looks through for one of the current codebase."""


def resolve(store: Store, ref: str, *, writes: bool = False, runs: bool = True) -> str:
    """The whole id of the batch (or, with ``runs``, the run) ``ref`` names: ``latest``, an
    id, or its first :data:`MIN_PREFIX` characters or more when no other id starts so."""
    if ref == "latest":
        return _latest(store, writes=writes)
    batches, run_ids = store.ids_starting(ref)
    exact = [found for found in (*batches, *run_ids) if found == ref]
    if exact:
        return exact[0]
    matches = [*batches, *(run_ids if runs else [])]
    what = "batch or run" if runs else "batch"
    if not matches or len(ref) < MIN_PREFIX:
        raise RecordNotFoundError(f"no {what} with id {ref[:80]!r}")
    if len(matches) > 1:
        raise RecordNotFoundError(f"{ref!r} starts more than one id: give more of it")
    return matches[0]


def _latest(store: Store, *, writes: bool) -> str:
    batches = store.list_batches(limit=_LATEST_SCAN)
    if not batches:
        raise RecordNotFoundError("no batch yet: run `sa run BUNDLE PATH` first")
    here = Path.cwd().resolve()
    own = next((b for b in batches if here.is_relative_to(Path(b.root_path))), None)
    if own is None and writes:
        raise RecordNotFoundError(
            f"no batch of the codebase you are in ({here}): run it inside the codebase, or give the batch id"
        )
    chosen = own or batches[0]
    where = "of this codebase" if own is not None else "of any codebase (none is of this directory)"
    note = f"latest batch {where}: {chosen.id} ({chosen.bundle_name} over {chosen.root_path})"
    Console(stderr=True).print(note, style="dim", markup=False, highlight=False, soft_wrap=True)
    return chosen.id


def existing_database(url: str) -> str:
    """``url``, refused when it names a SQLite file that does not exist: a command that only
    reads (or applies what a run stored) must not create an empty database at a mistyped path."""
    scheme, _, rest = url.partition("://")
    if scheme.split("+")[0] == "sqlite" and rest.startswith("/"):
        database = rest[1:].split("?")[0]
        if database and database != ":memory:" and not Path(database).exists():
            raise StoreError(
                f"no database at {database}: check --db (or SA_DATABASE_URL), or run `sa run` first"
            )
    return url
