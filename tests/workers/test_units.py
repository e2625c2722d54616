"""The workers' parts without services: errors at the seams, the scripted engine, isolation, backoff."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from structured_agents.engines.batching import BatchingEngine
from structured_agents.engines.script_file import load_script
from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import GenerationRequest
from structured_agents.settings import Settings
from structured_agents.store import StoreError, StoreUnavailableError
from structured_agents.workers.celery_app import make_app
from structured_agents.workers.dispatch import send
from structured_agents.workers.errors import BrokerError, converting_broker, is_transient
from structured_agents.workers.runtime import Runtime


def _request(run_id: str, turn: int, prompt: str = "hello") -> GenerationRequest:
    return GenerationRequest(prompt, request_id=f"{run_id}:{turn}")


@pytest.mark.parametrize(
    "error", [KombuOperationalError("down"), RedisConnectionError("refused"), ConnectionRefusedError("no")]
)
def test_broker_errors_become_broker_errors(error: Exception) -> None:
    with pytest.raises(BrokerError, match="publish failed") as caught, converting_broker("publish"):
        raise error
    assert caught.value.__cause__ is error and is_transient(caught.value)


def test_an_unreachable_broker_is_a_broker_error() -> None:
    app = make_app(Settings(redis_url="redis://127.0.0.1:1/0"))
    with pytest.raises(BrokerError, match="Connection refused"):
        send(app, "sa.control.sweep", ())


def test_lost_database_connections_are_transient_and_other_errors_are_not() -> None:
    lost = StoreError("the step failed")
    lost.__cause__ = StoreUnavailableError(
        "claim run x failed: OperationalError: server closed the connection"
    )
    assert is_transient(lost) and is_transient(lost.__cause__)
    assert not is_transient(StoreError("constraint violated"))
    assert not is_transient(EngineError("the script has 0 turns"))


def _script(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data))
    return path


def test_the_script_file_plays_the_turn_of_each_request(tmp_path: Path) -> None:
    engine = load_script(
        _script(tmp_path, {"turns": ["one", "two"], "when_prompt_contains": {"SPECIAL": ["special"]}})
    )
    completions = engine.generate([_request("a", 2), _request("b", 1), _request("c", 1, "a SPECIAL prompt")])
    assert [c.text for c in completions] == ["two", "one", "special"]
    assert {c.batch_size for c in completions} == {3} and engine.batch_sizes == [3]
    assert engine.generate([_request("a", 2)])[0].text == "two"  # the same turn again: the same answer
    with pytest.raises(EngineError, match="has 2 turns, request a:3 asks for turn 3"):
        engine.generate([_request("a", 3)])
    plain = [GenerationRequest("x", request_id="no-turn"), GenerationRequest("y", request_id="other")]
    assert [c.text for c in engine.generate(plain)] == ["one", "two"]  # no turn in the id: in order


def test_the_script_file_engine_keeps_no_request_it_was_sent(tmp_path: Path) -> None:
    engine = load_script(_script(tmp_path, ["one"]))
    engine.generate([_request("warm-up", 1)])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(50):
            engine.generate([_request(f"run{index}", 1, "x" * 200_000)])
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1_000_000  # 10 MB of prompts were sent: a worker's memory must not keep them
    assert engine.requests == [] and engine.batch_sizes == [1] * 51


def test_script_files_load_from_both_formats(tmp_path: Path) -> None:
    assert load_script(_script(tmp_path, ["a", "b"])).generate([_request("r", 2)])[0].text == "b"
    engine = load_script(
        _script(tmp_path, {"turns": ["a"], "delay_s": 0.01, "when_prompt_contains": {"X": []}})
    )
    assert engine.delay_s == 0.01
    with pytest.raises(ConfigError, match="turns must be a JSON list of reply strings"):
        load_script(_script(tmp_path, {"turns": [1]}))
    with pytest.raises(ConfigError, match="expected a JSON list of strings, or an object"):
        load_script(_script(tmp_path, {"turns": ["a"], "unknown": 1}))
    with pytest.raises(ConfigError, match="cannot read the script"):
        load_script(tmp_path / "missing.json")


def test_a_poison_request_does_not_fail_its_batch(tmp_path: Path) -> None:
    """The llm worker's engine wrapper decodes a failed batch again one request at a time."""
    engine = load_script(_script(tmp_path, {"turns": ["ok"], "when_prompt_contains": {"POISON": []}}))
    with BatchingEngine(engine, max_batch_size=8, max_wait_s=0.5) as batching:
        requests = (_request("a", 1), _request("b", 1, "POISON"), _request("c", 1))
        streams = [batching.submit(request) for request in requests]
        assert streams[0].result().text == "ok" == streams[2].result().text
        with pytest.raises(EngineError):
            streams[1].result()
    assert engine.batch_sizes == [3, 1, 1, 1]


def test_backoff_doubles_up_to_its_cap() -> None:
    rt = Runtime(Settings(workers={"retry_backoff_s": 0.5, "retry_backoff_max_s": 3}))
    assert [rt.backoff(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
