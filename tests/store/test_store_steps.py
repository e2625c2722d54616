"""Runs driven step by step: state commits are compare-and-set, step attempts are counted, the
sweep finds what stopped moving; on SQLite, PostgreSQL and in memory alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from structured_agents.jobs import JobSpec
from structured_agents.kernel import RunState
from structured_agents.store import Store, StoreUnavailableError, TurnRecord
from structured_agents.store.converting import converting
from structured_agents.store.errors import StoreError


def _claimed(store: Store, tmp_path: Path, run_id: str = "r1") -> None:
    batch = store.create_batch("b", "1", str(tmp_path), {"bundle": "x"})
    store.add_jobs(batch.id, [JobSpec(run_id, "lookup", "a.txt", "<module>", "")])
    store.claim(run_id)


def test_state_commits_are_compare_and_set(store: Store, tmp_path: Path) -> None:
    _claimed(store, tmp_path)
    run = store.load_runs(["r1"])["r1"]
    assert run.state is None and run.job.job_id == "r1" and run.job.path == "a.txt"
    state = RunState(run_id="r1")
    start = {"type": "kernel_start", "run_id": "r1", "turn": 0}
    started = store.init_state(run, state.to_dict(), [start])
    assert started is not None and (started.epoch, started.version) == (1, 0)
    assert store.init_state(run, state.to_dict(), [start]) is None  # a duplicate start
    loaded = store.load_runs(["r1"])["r1"]
    assert loaded.state is not None and (loaded.epoch, loaded.version) == (1, 0)
    state.turn, state.phase = 1, "tools"
    turn = TurnRecord("r1", 1, 10, 5, 0.1, 4, "stop", "text")
    response = {"type": "model_response", "run_id": "r1", "turn": 1}
    committed = store.commit_state(loaded, state.to_dict(), [response], turn=turn)
    assert committed is not None and committed.version == 1 and committed.state == state.to_dict()
    assert (
        store.commit_state(loaded, state.to_dict(), [response], turn=turn) is None
    )  # stale version: nothing
    assert [e.type for e in store.events("r1")] == ["kernel_start", "model_response"]
    assert [t.batch_size for t in store.turns("r1")] == [4]
    again = store.load_runs(["r1"])["r1"]
    assert again.state is not None and again.state["phase"] == "tools" and again.version == 1


def test_a_chunk_of_runs_is_claimed_counted_and_started_together(store: Store, tmp_path: Path) -> None:
    batch = store.create_batch("b", "1", str(tmp_path), {"bundle": "x"})
    store.add_jobs(batch.id, [JobSpec(f"r{i}", "lookup", "a.txt", f"f{i}", "") for i in range(4)])
    store.claim("r0")
    assert sorted(record.id for record in store.claim_runs(["r0", "r1", "r2", "r2", "nope"])) == ["r1", "r2"]
    assert store.claim_runs([]) == []
    assert store.begin_steps([("r1", "start"), ("r2", "start")]) == {("r1", "start"): 1, ("r2", "start"): 1}
    counted = store.begin_steps([("r2", "start"), ("r3", "start"), ("r2", "e1:llm:1"), ("r2", "start")])
    assert counted == {("r2", "start"): 2, ("r3", "start"): 1, ("r2", "e1:llm:1"): 1}
    assert store.begin_steps([]) == {}
    runs = store.load_runs(["r0", "r1", "r2"])
    first = store.init_state(runs["r1"], RunState(run_id="r1").to_dict(), [])  # r1 started alone first
    assert first is not None
    starts = [
        (runs[r], RunState(run_id=r).to_dict(), [{"type": "kernel_start", "run_id": r, "turn": 0}])
        for r in runs
    ]
    stored = store.init_states(starts)
    assert [run is not None for run in stored] == [True, False, True]  # r1's duplicate writes nothing
    assert [(run.epoch, run.version) for run in stored if run is not None] == [(1, 0), (1, 0)]
    assert [len(store.events(r)) for r in ("r0", "r1", "r2")] == [1, 0, 1]
    assert all(run.state is not None for run in store.load_runs(["r0", "r1", "r2"]).values())
    assert store.init_states([]) == []
    with pytest.raises(StoreError, match="same run twice"):
        store.init_states([starts[0], starts[0]])


def test_a_restart_replaces_the_state_of_the_claim_before_it(store: Store, tmp_path: Path) -> None:
    _claimed(store, tmp_path)
    run = store.load_runs(["r1"])["r1"]
    assert store.init_state(run, RunState(run_id="r1").to_dict(), []) is not None
    assert store.requeue("r1") and store.claim("r1") is not None
    again = store.load_runs(["r1"])["r1"]
    assert again.state is None and again.epoch == 1  # the old claim's state
    (restarted,) = store.init_states([(again, RunState(run_id="r1").to_dict(), [])])
    assert restarted is not None and restarted.epoch == 2
    assert store.init_states([(again, RunState(run_id="r1").to_dict(), [])]) == [None]  # a duplicate restart


def test_step_attempts_count_and_remember_the_last_error(store: Store, tmp_path: Path) -> None:
    _claimed(store, tmp_path)
    assert [store.begin_step("r1", "e1:llm:2") for _ in range(3)] == [1, 2, 3]
    store.fail_step("r1", "e1:llm:2", "EngineError: boom")
    assert store.step_error("r1", "e1:llm:2") == "EngineError: boom"
    store.clear_steps("r1")
    assert store.begin_step("r1", "e1:llm:2") == 1
    assert store.step_error("r1", "e1:other") is None


def test_the_sweep_finds_runs_whose_state_stopped_moving(store: Store, tmp_path: Path) -> None:
    _claimed(store, tmp_path)
    run = store.load_runs(["r1"])["r1"]
    store.init_state(run, RunState(run_id="r1").to_dict(), [])
    assert [r.id for r in store.stale_runs(-1.0)] == ["r1"]  # older than "the future"
    assert store.stale_runs(3600.0) == []
    store.touch_state("r1")
    batches, waiting = store.undispatched(-1.0)
    assert batches == [run.batch_id] and waiting == []
    assert store.move_batch(run.batch_id, "running", only_from=("queued",))
    assert not store.move_batch(run.batch_id, "running", only_from=("queued",))


def test_a_lost_connection_is_a_store_unavailable_error() -> None:
    with pytest.raises(StoreUnavailableError, match="claim run x failed: OperationalError"):  # noqa: SIM117
        with converting("claim run x"):
            raise OperationalError("SELECT 1", {}, Exception("server closed the connection"))
