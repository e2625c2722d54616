"""The workers' parts without services: errors at the seams, the scripted engine, isolation, backoff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import GenerationRequest
from structured_agents.settings import Settings
from structured_agents.store import StoreError, StoreUnavailableError
from structured_agents.workers.celery_app import make_app
from structured_agents.workers.dispatch import send
from structured_agents.workers.engine import TurnScriptEngine, load_turn_script
from structured_agents.workers.errors import BrokerError, converting_broker, is_transient
from structured_agents.workers.runtime import Runtime
from structured_agents.workers.tasks_llm import generate_isolated


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


def test_turn_script_plays_the_turn_of_each_request() -> None:
    engine = TurnScriptEngine(["one", "two"], when_prompt_contains={"SPECIAL": ["special"]})
    completions = engine.generate([_request("a", 2), _request("b", 1), _request("c", 1, "a SPECIAL prompt")])
    assert [c.text for c in completions] == ["two", "one", "special"]
    assert {c.batch_size for c in completions} == {3} and engine.batch_sizes == [3]
    assert engine.generate([_request("a", 2)])[0].text == "two"  # the same turn again: the same answer
    with pytest.raises(EngineError, match="has 2 turns, request a:3 asks for turn 3"):
        engine.generate([_request("a", 3)])
    with pytest.raises(EngineError, match="does not end in ':<turn>'"):
        engine.generate([GenerationRequest("x", request_id="no-turn")])


def test_turn_scripts_load_from_both_formats(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(["a", "b"]))
    assert load_turn_script(plain).turns == ("a", "b")
    full = tmp_path / "full.json"
    full.write_text(json.dumps({"turns": ["a"], "delay_s": 0.01, "when_prompt_contains": {"X": []}}))
    engine = load_turn_script(full)
    assert (engine.delay_s, engine.when_prompt_contains) == (0.01, {"X": ()})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"turns": [1]}))
    with pytest.raises(ConfigError, match="turns must be a JSON list of reply strings"):
        load_turn_script(bad)
    with pytest.raises(ConfigError, match="cannot read the script"):
        load_turn_script(tmp_path / "missing.json")


def test_a_poison_request_does_not_fail_its_batch() -> None:
    engine = TurnScriptEngine(["ok"], when_prompt_contains={"POISON": []})
    outcomes = generate_isolated(engine, [_request("a", 1), _request("b", 1, "POISON"), _request("c", 1)])
    assert [getattr(o, "text", None) for o in outcomes] == ["ok", None, "ok"]
    assert isinstance(outcomes[1], EngineError)
    assert engine.batch_sizes == [3, 1, 1, 1]


def test_backoff_doubles_up_to_its_cap() -> None:
    rt = Runtime(Settings(workers={"retry_backoff_s": 0.5, "retry_backoff_max_s": 3}))
    assert [rt.backoff(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
