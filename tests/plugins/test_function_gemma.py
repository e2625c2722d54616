"""The function_gemma plugin: rendering, parsing, prompts and request options."""

from __future__ import annotations

import json
from typing import Any

import pytest

from structured_agents.errors import ParseError
from structured_agents.grammar.artifacts import EBNFGrammar, JsonSchemaGrammar, StructuralTagGrammar
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins import ModelPlugin, get_plugin
from structured_agents.plugins.function_gemma import DEVELOPER_PROMPT, FunctionGemmaPlugin
from structured_agents.types import Message, ToolCall, ToolResult, ToolSchema

WEATHER = ToolSchema(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer"},
            "ratio": {"type": "number"},
            "detail": {
                "type": "object",
                "properties": {
                    "hours": {"type": "array", "items": {"type": "integer"}},
                    "scale": {"type": "number"},
                },
            },
            "where": {"$ref": "#/$defs/point"},
        },
        "required": ["city"],
        "$defs": {"point": {"type": "object", "properties": {"lat": {"type": "number"}}}},
    },
)
EXAMPLE = (
    "<start_function_call>call:NAME{key:<escape>string value<escape>,n:3,flag:true,"
    "obj:{a:<escape>x<escape>},arr:[1,<escape>s<escape>],nothing:null}<end_function_call>"
)


@pytest.fixture
def plugin() -> FunctionGemmaPlugin:
    return FunctionGemmaPlugin()


def test_is_a_model_plugin_from_the_registry() -> None:
    plugin = get_plugin("function_gemma")
    assert isinstance(plugin, FunctionGemmaPlugin)
    assert isinstance(plugin, ModelPlugin)
    assert (
        plugin.name,
        plugin.supports_ebnf,
        plugin.supports_structural_tags,
        plugin.supports_json_schema,
    ) == (
        "function_gemma",
        True,
        True,
        True,
    )


@pytest.mark.parametrize(
    ("mode", "kind"),
    [("ebnf", EBNFGrammar), ("structural_tag", StructuralTagGrammar), ("json_schema", JsonSchemaGrammar)],
)
def test_build_grammar_serves_every_mode(plugin: FunctionGemmaPlugin, mode: Any, kind: type) -> None:
    assert isinstance(plugin.build_grammar([WEATHER], GrammarConfig(mode=mode)), kind)


def test_render_tool_calls_exact_format(plugin: FunctionGemmaPlugin) -> None:
    calls = [
        ToolCall(
            "NAME",
            {
                "key": "string value",
                "n": 3,
                "flag": True,
                "obj": {"a": "x"},
                "arr": [1, "s"],
                "nothing": None,
            },
        ),
        ToolCall("b-c.d", {}),
    ]
    assert plugin.render_tool_calls(calls, ()) == (
        "<start_function_call>call:NAME{arr:[1,<escape>s<escape>],flag:true,key:<escape>string value<escape>,"
        "n:3,nothing:null,obj:{a:<escape>x<escape>}}<end_function_call>"
        "<start_function_call>call:b-c.d{}<end_function_call>"
    )
    assert plugin.render_tool_calls([], ()) == ""


def test_render_sorts_keys_case_insensitively_and_neutralises_escape(plugin: FunctionGemmaPlugin) -> None:
    text = plugin.render_tool_calls([ToolCall("t", {"b": 1, "A": 2, "c": "x<escape>y", "f": 0.5})], ())
    assert (
        text
        == "<start_function_call>call:t{A:2,b:1,c:<escape>x&lt;escape&gt;y<escape>,f:0.5}<end_function_call>"
    )


def test_parse_the_native_example(plugin: FunctionGemmaPlugin) -> None:
    content, calls = plugin.parse_response(EXAMPLE, ())
    assert content is None
    assert [(c.name, c.arguments) for c in calls] == [
        (
            "NAME",
            {
                "key": "string value",
                "n": 3,
                "flag": True,
                "obj": {"a": "x"},
                "arr": [1, "s"],
                "nothing": None,
            },
        )
    ]
    assert calls[0].id.startswith("call_")


def test_parse_strings_with_delimiters_and_unicode(plugin: FunctionGemmaPlugin) -> None:
    value = 'a}, b:{c}, "d"\n[e] <esc <end_function_call> é😀'
    content, calls = plugin.parse_response(
        plugin.render_tool_calls([ToolCall("t", {"s": value, "n": -1.5e-3})], ()), ()
    )
    assert content is None
    assert calls[0].arguments == {"s": value, "n": -1.5e-3}


def test_parse_types_arguments_by_schema(plugin: FunctionGemmaPlugin) -> None:
    text = (
        "<start_function_call>call:get_weather{city:<escape>42<escape>,days:3.0,ratio:2,"
        "detail:{hours:[1.0,2],scale:1},where:{lat:5}}<end_function_call>"
    )
    _, [call] = plugin.parse_response(text, [WEATHER])
    assert call.arguments == {
        "city": "42",
        "days": 3,
        "ratio": 2.0,
        "detail": {"hours": [1, 2], "scale": 1.0},
        "where": {"lat": 5.0},
    }
    args = call.arguments
    assert (
        isinstance(args["days"], int) and isinstance(args["ratio"], float) and isinstance(args["city"], str)
    )
    assert all(isinstance(h, int) for h in args["detail"]["hours"]) and isinstance(
        args["where"]["lat"], float
    )


def test_parse_without_schema_keeps_syntactic_types(plugin: FunctionGemmaPlugin) -> None:
    _, [call] = plugin.parse_response(
        "<start_function_call>call:x{a:3,b:3.0,c:1e3,d:false}<end_function_call>", ()
    )
    assert call.arguments == {"a": 3, "b": 3.0, "c": 1000.0, "d": False}
    assert isinstance(call.arguments["a"], int) and isinstance(call.arguments["b"], float)


def test_parse_json_args_format(plugin: FunctionGemmaPlugin) -> None:
    text = '<start_function_call>call:t{"s":"a\\"}","o":{"k":[1,"x"]}}<end_function_call>'
    assert plugin.parse_response(text, ())[1][0].arguments == {"s": 'a"}', "o": {"k": [1, "x"]}}


def test_parse_several_calls_with_text_between(plugin: FunctionGemmaPlugin) -> None:
    one = plugin.render_tool_calls([ToolCall("a", {"x": 1})], ())
    two = plugin.render_tool_calls([ToolCall("b", {})], ())
    content, calls = plugin.parse_response(f"Let me check.\n{one}\nand {two} done", ())
    assert content == "Let me check.\n\nand  done"
    assert [c.name for c in calls] == ["a", "b"]


def test_parse_is_lenient_where_the_grammar_is_not(plugin: FunctionGemmaPlugin) -> None:
    text = "<start_function_call> call:t { a : hello world , b : [ 1 , 2 ] }"
    assert plugin.parse_response(text, ())[1][0].arguments == {"a": "hello world", "b": [1, 2]}


def test_parse_drops_an_imagined_function_response(plugin: FunctionGemmaPlugin) -> None:
    call = plugin.render_tool_calls([ToolCall("a", {})], ())
    text = call + "<start_function_response>response:a{v:1}<end_function_response>" + call
    content, calls = plugin.parse_response(text, ())
    assert (content, len(calls)) == (None, 1)


def test_known_names_win_over_braces_in_names(plugin: FunctionGemmaPlugin) -> None:
    tool = ToolSchema("odd{name", "")
    _, [call] = plugin.parse_response("<start_function_call>call:odd{name{}<end_function_call>", [tool])
    assert (call.name, call.arguments) == ("odd{name", {})


@pytest.mark.parametrize("text", ["Just words.", "  padded answer \n", "a { brace } and <escape> marker"])
def test_text_without_calls_is_content(plugin: FunctionGemmaPlugin, text: str) -> None:
    assert plugin.parse_response(text, ()) == (text.strip(), [])


def test_empty_text_is_no_content(plugin: FunctionGemmaPlugin) -> None:
    assert plugin.parse_response("", ()) == (None, [])
    assert plugin.parse_response(" \n", ()) == (None, [])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<start_function_call>call:t{a:<escape>open}<end_function_call>", "unterminated <escape>"),
        ("<start_function_call>call:t{a}<end_function_call>", "expected ':'"),
        ("<start_function_call>call:t{a:1", "expected ','"),
        ("<start_function_call>call:t{a:}<end_function_call>", "expected a value"),
        ("<start_function_call>t{a:1}<end_function_call>", "expected 'call:'"),
        ("<start_function_call>call:{a:1}<end_function_call>", "tool name"),
        ("<start_function_call>call:t{a:1}junk", "expected '<end_function_call>'"),
        ('<start_function_call>call:t{a:"x}<end_function_call>', "bad JSON string"),
    ],
)
def test_malformed_calls_raise_parse_error_with_offset(
    plugin: FunctionGemmaPlugin, text: str, problem: str
) -> None:
    with pytest.raises(ParseError, match="offset") as info:
        plugin.parse_response(text, ())
    assert problem in str(info.value)


def test_parse_openai_tool_calls_raw(plugin: FunctionGemmaPlugin) -> None:
    raw: list[dict[str, Any]] = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Rome", "days": 2.0}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "other", "arguments": {"k": [1]}}},
        {"function": {"name": "empty", "arguments": ""}},
    ]
    content, calls = plugin.parse_response("thinking", [WEATHER], raw)
    assert content == "thinking"
    assert [(c.id, c.name, c.arguments) for c in calls[:2]] == [
        ("call_1", "get_weather", {"city": "Rome", "days": 2}),
        ("call_2", "other", {"k": [1]}),
    ]
    assert isinstance(calls[0].arguments["days"], int)
    assert (calls[2].name, calls[2].arguments) == ("empty", {})


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"function": {"name": "x", "arguments": "{bad"}}, "not JSON"),
        ({"function": {"arguments": "{}"}}, "missing tool name"),
        ({"function": {"name": "x", "arguments": "[1]"}}, "must be an object"),
        ("not a dict", "must be an object"),
    ],
)
def test_bad_tool_calls_raw_raise_parse_error(plugin: FunctionGemmaPlugin, raw: Any, problem: str) -> None:
    with pytest.raises(ParseError, match=problem) as info:
        plugin.parse_response("", (), [raw])
    assert "tool_calls_raw[0]" in str(info.value)


def test_parse_json_schema_mode_documents(plugin: FunctionGemmaPlugin) -> None:
    plugin.build_grammar([WEATHER], GrammarConfig(mode="json_schema"))
    parallel = {
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "a", "ratio": 1}},
            {"name": "x", "arguments": {}},
        ]
    }
    content, calls = plugin.parse_response(json.dumps(parallel, indent=2), [WEATHER])
    assert content is None
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "a", "ratio": 1.0}), ("x", {})]
    assert isinstance(calls[0].arguments["ratio"], float)
    single = plugin.parse_response(' {"name": "get_weather", "arguments": {"city": "b"}}', [WEATHER])
    assert [(c.name, c.arguments) for c in single[1]] == [("get_weather", {"city": "b"})]
    assert plugin.parse_response('{"answer": 42}', ()) == ('{"answer": 42}', [])
    assert plugin.parse_response('{"tool_calls": [', ()) == ('{"tool_calls": [', [])


def test_request_options(plugin: FunctionGemmaPlugin) -> None:
    stops = ["<end_of_turn>", "<start_function_response>"]
    assert plugin.request_options(None) == {"tool_choice": "auto", "stop": stops}
    for mode in ("ebnf", "structural_tag", "json_schema"):
        assert plugin.request_options(GrammarConfig(mode=mode)) == {"tool_choice": "none", "stop": stops}


def test_format_messages_and_tools_are_openai(plugin: FunctionGemmaPlugin) -> None:
    call = ToolCall("get_weather", {"city": "x"}, id="c1")
    messages = [
        Message.user("hi"),
        Message.assistant(None, (call,)),
        Message.tool(ToolResult("c1", "get_weather", "ok")),
    ]
    assert plugin.format_messages(messages, [WEATHER]) == [m.to_openai_format() for m in messages]
    assert plugin.format_tools([WEATHER]) == [WEATHER.to_openai_format()]


SIMPLE = ToolSchema(
    "get_current_weather",
    "Gets the weather.",
    {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": 'City, e.g. "Tokyo, JP"'},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["location"],
    },
)
DECLARATION = (
    "<start_function_declaration>declaration:get_current_weather{"
    "description:<escape>Gets the weather.<escape>,parameters:{properties:{"
    'location:{description:<escape>City, e.g. "Tokyo, JP"<escape>,type:<escape>STRING<escape>},'
    "unit:{enum:[<escape>celsius<escape>,<escape>fahrenheit<escape>],type:<escape>STRING<escape>}},"
    "required:[<escape>location<escape>],type:<escape>OBJECT<escape>}}<end_function_declaration>"
)


def test_render_prompt_single_turn(plugin: FunctionGemmaPlugin) -> None:
    prompt = plugin.render_prompt([Message.user("  What's the weather in Tokyo? ")], [SIMPLE])
    assert prompt == (
        f"<start_of_turn>developer\n{DEVELOPER_PROMPT}{DECLARATION}<end_of_turn>\n"
        "<start_of_turn>user\nWhat's the weather in Tokyo?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_render_prompt_full_conversation(plugin: FunctionGemmaPlugin) -> None:
    call = ToolCall("get_current_weather", {"location": "Tokyo"}, id="c1")
    messages = [
        Message.system("You check weather."),
        Message.user("Tokyo?"),
        Message.assistant(None, (call,)),
        Message(role="tool", content='15 C, "sunny" <escape>', tool_call_id="c1"),
        Message.assistant("It is sunny."),
        Message.user("Thanks"),
    ]
    prompt = plugin.render_prompt(messages, [SIMPLE])
    assert prompt == (
        f"<start_of_turn>developer\nYou check weather.\n{DEVELOPER_PROMPT}{DECLARATION}<end_of_turn>\n"
        "<start_of_turn>user\nTokyo?<end_of_turn>\n"
        "<start_of_turn>model\n"
        "<start_function_call>call:get_current_weather{location:<escape>Tokyo<escape>}<end_function_call>"
        "<start_function_response>response:get_current_weather{"
        'result:<escape>15 C, "sunny" &lt;escape&gt;<escape>}'
        "<end_function_response>It is sunny.<end_of_turn>\n"
        "<start_of_turn>user\nThanks<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_render_prompt_after_tool_results_continues_the_model_turn(plugin: FunctionGemmaPlugin) -> None:
    calls = (ToolCall("a", {}, id="1"), ToolCall("b", {"x": 1}, id="2"))
    messages = [
        Message.user("go"),
        Message.assistant("On it.", calls),
        Message.tool(ToolResult("1", "a", "A")),
        Message.tool(ToolResult("2", "b", "B")),
    ]
    prompt = plugin.render_prompt(messages, [])
    assert prompt == (
        "<start_of_turn>user\ngo<end_of_turn>\n<start_of_turn>model\nOn it."
        "<start_function_call>call:a{}<end_function_call><start_function_call>call:b{x:1}<end_function_call>"
        "<start_function_response>response:a{result:<escape>A<escape>}<end_function_response>"
        "<start_function_response>response:b{result:<escape>B<escape>}<end_function_response>"
    )
    assert not prompt.endswith(" ")


def test_render_prompt_keeps_a_given_trigger_and_late_system_turns(plugin: FunctionGemmaPlugin) -> None:
    messages = [Message.system(DEVELOPER_PROMPT), Message.user("a"), Message.system("Be brief.")]
    prompt = plugin.render_prompt(messages, [SIMPLE])
    assert prompt.count(DEVELOPER_PROMPT) == 1
    assert prompt.endswith("<start_of_turn>developer\nBe brief.<end_of_turn>\n<start_of_turn>model\n")
    assert (
        plugin.render_prompt([Message.user("hi")], [])
        == "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    )


def test_calls_in_a_prompt_parse_back(plugin: FunctionGemmaPlugin) -> None:
    call = ToolCall("get_weather", {"city": "Oslo", "days": 2, "detail": {"hours": [1, 2]}})
    prompt = plugin.render_prompt([Message.user("x"), Message.assistant(None, (call,))], [WEATHER])
    start = prompt.index("<start_function_call>")
    end = prompt.index("<end_function_call>") + len("<end_function_call>")
    _, [parsed] = plugin.parse_response(prompt[start:end], [WEATHER])
    assert (parsed.name, parsed.arguments) == (call.name, call.arguments)


def test_render_no_calls_is_empty_in_every_mode() -> None:
    from structured_agents.grammar.config import GrammarConfig as _Config
    from structured_agents.types import ToolSchema as _Schema

    plugin = FunctionGemmaPlugin()
    for mode in ("ebnf", "structural_tag", "json_schema"):
        plugin.build_grammar([_Schema("t", "d")], _Config(mode=mode, allow_parallel_calls=False))  # type: ignore[arg-type]
        assert plugin.render_tool_calls([], ()) == ""


def test_a_declaration_leaves_a_strings_pattern_out_but_not_a_parameter_named_pattern(
    plugin: FunctionGemmaPlugin,
) -> None:
    properties = {
        "location": {"type": "string", "description": 'City, e.g. "Tokyo, JP"', "pattern": "^[^<>{}:]*$"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    }
    patterned = ToolSchema(SIMPLE.name, SIMPLE.description, {**SIMPLE.parameters, "properties": properties})
    assert plugin.render_prompt([Message.user("Tokyo?")], [patterned]) == plugin.render_prompt(
        [Message.user("Tokyo?")], [SIMPLE]
    )
    named = ToolSchema("find", "Find.", {"type": "object", "properties": {"pattern": {"type": "string"}}})
    assert "pattern:{type:<escape>STRING<escape>}" in plugin.render_prompt([Message.user("x")], [named])


def test_each_response_is_typed_by_its_own_request_tools(plugin: FunctionGemmaPlugin) -> None:
    """One instance serves every job of a batch: what another job's tools say of a name never
    types this job's arguments."""
    text = "<start_function_call>call:get_weather{city:<escape>Rome<escape>,days:2.0}<end_function_call>"
    other = ToolSchema("get_weather", "", {"type": "object", "properties": {"days": {"type": "number"}}})
    plugin.build_grammar([WEATHER], GrammarConfig())
    [as_other] = plugin.parse_response(text, [other])[1]
    [as_weather] = plugin.parse_response(text, [WEATHER])[1]
    assert isinstance(as_other.arguments["days"], float) and isinstance(as_weather.arguments["days"], int)
