"""ScriptedEngine: deterministic turns, per-run scripts, and XGrammar validation of every output."""

from __future__ import annotations

import threading

import pytest

import structured_agents.engines as engines_pkg
from structured_agents.engines import (
    Engine,
    GenerationRequest,
    SamplingParams,
    ScriptedEngine,
    approx_token_count,
    by_run_id,
)
from structured_agents.errors import ConfigError, EngineError
from structured_agents.grammar import EBNFGrammar, GrammarConfig, JsonSchemaGrammar
from structured_agents.plugins import get_plugin
from structured_agents.types import ToolCall, ToolSchema

TOOLS = [
    ToolSchema(
        "read",
        "Read a file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSchema(
        "submit_result",
        "Finish with a summary.",
        {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
    ),
]
READ = ToolCall("read", {"path": "src/a.py"})
SUBMIT = ToolCall("submit_result", {"summary": "all good"})


def request(run_id: str = "run", turn: int = 1, **kwargs: object) -> GenerationRequest:
    return GenerationRequest(prompt="p" * 40, request_id=f"{run_id}:{turn}", **kwargs)  # type: ignore[arg-type]


def test_plays_text_calls_and_functions_in_order() -> None:
    plugin = get_plugin("function_gemma")
    seen: list[str] = []

    def echo(req: GenerationRequest) -> str:
        seen.append(req.request_id)
        return f"echo {req.request_id}"

    engine = ScriptedEngine(["hello", [READ, SUBMIT], echo], plugin=plugin)
    assert isinstance(engine, Engine)
    first, second = engine.generate([request(turn=1), request(turn=2)])
    (third,) = engine.generate([request(turn=3)])

    assert first.text == "hello" and first.request_id == "run:1"
    assert second.text == plugin.render_tool_calls([READ, SUBMIT], TOOLS)
    assert plugin.parse_response(second.text, TOOLS)[1][1].arguments == {"summary": "all good"}
    assert third.text == "echo run:3" and seen == ["run:3"]
    assert engine.batch_sizes == [2, 1]
    assert [c.batch_size for c in (first, second, third)] == [2, 2, 1]
    assert (
        first.usage.prompt_tokens == 10 and first.usage.completion_tokens == approx_token_count("hello") == 2
    )
    assert [c.metadata["script_turn"] for c in (first, second, third)] == [0, 1, 2]


def test_each_run_plays_its_own_script_position() -> None:
    engine = ScriptedEngine(["one", "two"], key=by_run_id)
    texts = [c.text for c in engine.generate([request("a", 1), request("b", 1), request("a:x", 1)])]
    texts += [c.text for c in engine.generate([request("b", 2), request("a", 2)])]
    assert texts == ["one", "one", "one", "two", "two"]
    assert (
        by_run_id(request("a:x", 3)) == "a:x"
        and by_run_id(GenerationRequest(prompt="", request_id="u")) == "u"
    )
    with pytest.raises(EngineError, match=r"conversation 'a' has 2 turns, request a:3 asks for turn 3"):
        engine.generate([request("a", 3)])


def test_per_run_scripts_from_a_factory_are_built_once_per_key() -> None:
    built: list[object] = []

    def script_for(key: object) -> list[str]:
        built.append(key)
        return [f"{key} first", f"{key} second"]

    engine = ScriptedEngine(script_for, key=by_run_id)
    outs = [c.text for c in engine.generate([request("x", 1), request("y", 1), request("x", 2)])]
    assert outs == ["x first", "y first", "x second"] and built == ["x", "y"]


def test_same_script_same_outputs_even_from_many_threads() -> None:
    def run_all() -> list[str]:
        engine = ScriptedEngine(["a", "b", "c"], key=by_run_id)
        out: dict[str, list[str]] = {}

        def worker(run: str) -> None:
            out[run] = [engine.generate([request(run, t)])[0].text for t in (1, 2, 3)]

        threads = [threading.Thread(target=worker, args=(f"r{i}",)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [text for run in sorted(out) for text in out[run]]

    assert run_all() == run_all() == ["a", "b", "c"] * 20


def test_tool_call_turns_need_a_plugin() -> None:
    with pytest.raises(ConfigError, match="plugin is required"):
        ScriptedEngine([[READ]])
    engine = ScriptedEngine([lambda req: [READ]])
    with pytest.raises(EngineError, match="returned tool calls but no plugin is set"):
        engine.generate([request()])


@pytest.mark.parametrize(
    ("plugin_name", "mode"),
    [("function_gemma", "ebnf"), ("function_gemma", "structural_tag"), ("qwen", "structural_tag")],
)
def test_rendered_calls_are_valid_under_the_real_plugin_grammars(plugin_name: str, mode: str) -> None:
    plugin = get_plugin(plugin_name)
    grammar = plugin.build_grammar(TOOLS, GrammarConfig(mode=mode))  # type: ignore[arg-type]
    engine = ScriptedEngine([[READ], [READ, SUBMIT]], plugin=plugin, validate_grammar=True)
    outs = engine.generate([request(turn=1, grammar=grammar), request(turn=2, grammar=grammar)])
    assert [len(plugin.parse_response(c.text, TOOLS)[1]) for c in outs] == [1, 2]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ([ToolCall("delete_everything", {})], "rejected at character 26"),  # a tool the grammar has not
        ([ToolCall("read", {"file": "a.py"})], "rejected at character"),  # a key the schema has not
        ("I think the code is fine.", "rejected at character 0"),  # prose where a call is required
    ],
)
def test_validation_rejects_outputs_the_grammar_forbids(bad: object, problem: str) -> None:
    plugin = get_plugin("function_gemma")
    grammar = plugin.build_grammar(TOOLS, GrammarConfig(mode="ebnf"))
    engine = ScriptedEngine([bad], plugin=plugin, validate_grammar=True)  # type: ignore[list-item]
    with pytest.raises(
        EngineError, match=f"turn 0 of conversation '' violates the request's ebnf grammar: {problem}"
    ):
        engine.generate([request(grammar=grammar)])


def test_validation_rejects_incomplete_output_and_covers_json_schema() -> None:
    engine = ScriptedEngine(['{"a": 1', '{"a": 1}'], validate_grammar=True)
    schema = JsonSchemaGrammar(
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    )
    with pytest.raises(EngineError, match="json_schema grammar: ends before the grammar allows"):
        engine.generate([request(grammar=schema)])
    assert engine.generate([request(grammar=schema)])[0].text == '{"a": 1}'
    unchecked = ScriptedEngine(["anything"])
    assert unchecked.generate([request(grammar=EBNFGrammar('root ::= "x"'))])[0].text == "anything"


def test_turns_longer_than_the_token_budget_are_cut_with_finish_reason_length() -> None:
    plugin = get_plugin("function_gemma")
    grammar = plugin.build_grammar(TOOLS, GrammarConfig(mode="ebnf"))
    long_submit = ToolCall("submit_result", {"summary": "word " * 50})
    engine = ScriptedEngine([[long_submit], [SUBMIT], "nope"], plugin=plugin, validate_grammar=True)
    budget = SamplingParams(max_new_tokens=30)

    cut, whole = engine.generate([request(turn=1, grammar=grammar, sampling=budget)] * 2)

    assert (cut.finish_reason, len(cut.text), cut.usage.completion_tokens) == ("length", 120, 30)
    assert plugin.render_tool_calls([long_submit], TOOLS).startswith(cut.text)
    assert (whole.finish_reason, whole.text) == ("stop", plugin.render_tool_calls([SUBMIT], TOOLS))
    with pytest.raises(EngineError, match="rejected at character 0"):  # a cut prefix is still checked
        engine.generate([request(grammar=grammar, sampling=SamplingParams(max_new_tokens=1))])


def test_public_names_are_sorted_and_importable() -> None:
    assert engines_pkg.__all__ == sorted(engines_pkg.__all__)
    for name in engines_pkg.__all__:
        assert hasattr(engines_pkg, name), name
