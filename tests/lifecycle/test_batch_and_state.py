"""The lifecycle's batch step (cancel) and how it reads a run's stored state, on the in-memory
store (tests/store holds the SQL stores to the same contract): the calls both drivers, the API
and the CLI make."""

from __future__ import annotations

from pathlib import Path

from structured_agents.jobs import JobSpec
from structured_agents.kernel import RunState
from structured_agents.lifecycle import cancel_batch, state_of
from structured_agents.store import MemoryStore


def _store(tmp_path: Path, runs: int) -> tuple[MemoryStore, str]:
    store = MemoryStore()
    batch = store.create_batch("b", "1", str(tmp_path), {"bundle": str(tmp_path)})
    store.add_jobs(batch.id, [JobSpec(f"r{i}", "lookup", "a.txt", f"f{i}", "") for i in range(runs)])
    return store, batch.id


def test_cancel_ends_queued_runs_at_once_and_running_ones_too(tmp_path: Path) -> None:
    store, batch_id = _store(tmp_path, 3)
    with store:
        assert store.claim_runs(["r0"])
        assert cancel_batch(store, batch_id) == 3
        runs = {run.id: (run.status, run.error) for run in store.list_runs(batch_id)}
        assert {status for status, _ in runs.values()} == {"cancelled"}
        assert runs["r0"][1] == "cancelled with its batch"
        assert cancel_batch(store, batch_id) == 0  # nothing left to cancel


def test_state_of_decodes_the_current_claim_s_state_anew_each_time(tmp_path: Path) -> None:
    store, _ = _store(tmp_path, 1)
    with store:
        store.claim_runs(["r0"])
        run = store.load_runs(["r0"])["r0"]
        assert state_of(run) is None  # claimed, not started
        started = store.init_state(run, RunState(run_id="r0", turn=0).to_dict(), [])
        assert started is not None
        first = state_of(started)
        assert first is not None and (first.run_id, first.phase, first.turn) == ("r0", "model", 0)
        first.turn = 5  # a step's change reaches the store only through its commit
        again = state_of(store.load_runs(["r0"])["r0"])
        assert again is not None and again.turn == 0 and again is not first
        assert store.requeue("r0") and store.claim_runs(["r0"])
        assert state_of(store.load_runs(["r0"])["r0"]) is None  # the old claim's state is not current
