"""The ``qwen`` plugin: prompts, call rendering, response parsing and capability errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from structured_agents.errors import GrammarConfigError, ParseError
from structured_agents.grammar.artifacts import JsonSchemaGrammar, StructuralTagGrammar
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins import ModelPlugin, get_plugin
from structured_agents.plugins.qwen import QwenPlugin
from structured_agents.types import Message, ToolCall, ToolResult, ToolSchema

WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city"],
    },
)


@pytest.fixture
def plugin() -> QwenPlugin:
    qwen = QwenPlugin()
    qwen.build_grammar([WEATHER], GrammarConfig(mode="structural_tag"))
    return qwen


def _call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


# -- the plugin seam -------------------------------------------------------------------------


def test_registry_builds_a_model_plugin() -> None:
    qwen = get_plugin("qwen")
    assert isinstance(qwen, QwenPlugin)
    assert isinstance(qwen, ModelPlugin)
    assert (qwen.supports_ebnf, qwen.supports_structural_tags, qwen.supports_json_schema) == (
        False,
        True,
        True,
    )


def test_ebnf_is_refused_naming_plugin_and_mode() -> None:
    with pytest.raises(GrammarConfigError, match=r"'qwen'.*'ebnf'"):
        QwenPlugin().build_grammar([WEATHER], GrammarConfig(mode="ebnf"))


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([], "without tools"),
        ([WEATHER, WEATHER], "duplicate tool name 'get_weather'"),
        ([ToolSchema("a>b", "bad")], "tool name 'a>b'"),
        ([ToolSchema("t", "bad", {"type": "object", "properties": {"x\ny": {}}})], "argument name"),
        ([ToolSchema("t", "bad", {"type": "array"})], "must be type 'object'"),
    ],
)
def test_unusable_tools_are_refused(tools: list[ToolSchema], message: str) -> None:
    for mode in ("structural_tag", "json_schema"):
        with pytest.raises(GrammarConfigError, match=message):
            QwenPlugin().build_grammar(tools, GrammarConfig(mode=mode))


def test_build_grammar_returns_the_mode_artifact() -> None:
    qwen = QwenPlugin()
    assert isinstance(
        qwen.build_grammar([WEATHER], GrammarConfig(mode="structural_tag")), StructuralTagGrammar
    )
    schema = qwen.build_grammar([WEATHER], GrammarConfig(mode="json_schema", allow_parallel_calls=False))
    assert isinstance(schema, JsonSchemaGrammar)
    assert schema.schema["properties"]["name"] == {"const": "get_weather"}
    parallel = qwen.build_grammar([WEATHER], GrammarConfig(mode="json_schema"))
    assert isinstance(parallel, JsonSchemaGrammar)
    assert parallel.schema["type"] == "array" and parallel.schema["minItems"] == 1


def test_request_options() -> None:
    qwen = QwenPlugin()
    assert qwen.request_options(None) == {}
    options = qwen.request_options(GrammarConfig(mode="structural_tag", allow_parallel_calls=False))
    assert options == {"tool_choice": "auto", "parallel_tool_calls": False}


def test_openai_formats() -> None:
    qwen = QwenPlugin()
    call = ToolCall("get_weather", {"city": "Oslo"}, id="c1")
    messages = [Message.user("hi"), Message.assistant(None, (call,))]
    assert qwen.format_messages(messages, [WEATHER]) == [m.to_openai_format() for m in messages]
    assert qwen.format_tools([WEATHER]) == [WEATHER.to_openai_format()]


# -- prompts -----------------------------------------------------------------------------------


def test_render_prompt_is_qwen_chatml(plugin: QwenPlugin) -> None:
    call = ToolCall("get_weather", {"days": 2, "city": "Oslo"}, id="c1")
    messages = [
        Message.system("Be brief."),
        Message.user("Weather?"),
        Message.assistant("Checking.", (call,)),
        Message.tool(ToolResult("c1", "get_weather", "sunny")),
        Message.tool(ToolResult("c2", "get_weather", "rain")),
        Message.user("Thanks"),
    ]
    prompt = plugin.render_prompt(messages, [WEATHER])
    system, rest = prompt.split("<|im_end|>\n", 1)
    assert system.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n\n")
    assert "<tools>\n" + json.dumps(WEATHER.to_openai_format(), ensure_ascii=False) + "\n</tools>" in system
    assert (
        "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n" in system
    )
    assert rest == (
        "<|im_start|>user\nWeather?<|im_end|>\n"
        "<|im_start|>assistant\nChecking.\n"
        "<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n2\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n"
        "<tool_response>\nrain\n</tool_response><|im_end|>\n"
        "<|im_start|>user\nThanks<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_render_prompt_without_tools_or_system() -> None:
    qwen = QwenPlugin()
    assert (
        qwen.render_prompt([Message.user("hi")], [])
        == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    with_system = qwen.render_prompt([Message.system("S"), Message.user("hi")], [])
    assert with_system.startswith("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi")
    tools_only = qwen.render_prompt([Message.user("hi")], [WEATHER])
    assert tools_only.startswith("<|im_start|>system\n# Tools\n\nYou may call one or more functions")
    assert tools_only.endswith("<|im_start|>assistant\n") and not tools_only.endswith(" \n")


def test_prompt_example_follows_the_grammar_form() -> None:
    qwen = QwenPlugin()
    qwen.build_grammar([WEATHER], GrammarConfig(mode="json_schema", allow_parallel_calls=False))
    prompt = qwen.render_prompt([Message.user("hi")], [WEATHER])
    assert '{"name": "example_function_name", "arguments": {"example_parameter_1": "value_1"' in prompt
    assert "You must call exactly one function" in prompt
    qwen.build_grammar([WEATHER], GrammarConfig(mode="structural_tag", args_format="json"))
    assert '<parameter=example_parameter_1>\n"value_1"\n</parameter>' in qwen.render_prompt([], [WEATHER])


# -- rendering calls ---------------------------------------------------------------------------


def test_render_tool_calls_in_schema_order_and_parallel(plugin: QwenPlugin) -> None:
    calls = [
        ToolCall("get_weather", {"tags": ["a", "b"], "city": "Oslo"}),
        ToolCall("other.tool", {"x": 1}),
    ]
    assert plugin.render_tool_calls(calls, [WEATHER]) == (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
        '<parameter=tags>\n["a", "b"]\n</parameter>\n</function>\n</tool_call>\n'
        "<tool_call>\n<function=other.tool>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"
    )


@pytest.mark.parametrize(
    ("schema", "value", "written"),
    [
        ({"type": "string"}, "London", "London"),
        ({"type": "string"}, "42", "42"),
        ({"type": ["integer", "string"]}, "42", '"42"'),
        ({"type": ["integer", "string"]}, 42, "42"),
        ({"type": "string"}, '"London"', '"\\"London\\""'),
        ({"type": "string"}, "a</parameter>b", '"a<\\/parameter>b"'),
        ({"type": "string"}, "line\nbreak", "line\nbreak"),
        ({"type": "string"}, "\n", "\n"),
        ({}, "true", '"true"'),
    ],
)
def test_strings_are_raw_unless_ambiguous(schema: dict[str, Any], value: Any, written: str) -> None:
    tool = ToolSchema("t", "test", {"type": "object", "properties": {"v": schema}})
    qwen = QwenPlugin()
    qwen.build_grammar([tool], GrammarConfig(mode="structural_tag"))
    text = qwen.render_tool_calls([ToolCall("t", {"v": value})], [tool])
    assert f"<parameter=v>\n{written}\n</parameter>" in text
    assert qwen.parse_response(text, [tool])[1][0].arguments == {"v": value}


# -- parsing -----------------------------------------------------------------------------------


def test_parse_xml_with_content_and_types(plugin: QwenPlugin) -> None:
    text = "Let me check.\n" + _call("get_weather", city="Oslo", days="3", unit="celsius", tags='["x", "y"]')
    content, calls = plugin.parse_response(text, [WEATHER])
    assert content == "Let me check."
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Oslo", "days": 3, "unit": "celsius", "tags": ["x", "y"]})
    ]


def test_parse_parallel_calls(plugin: QwenPlugin) -> None:
    text = _call("get_weather", city="A") + "\n" + _call("get_weather", city="B")
    content, calls = plugin.parse_response(text, [WEATHER])
    assert content is None
    assert [c.arguments["city"] for c in calls] == ["A", "B"]
    assert len({c.id for c in calls}) == 2


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ('"London"', "London"),
        ("'London'", "London"),
        ("London", "London"),
        ('He said "hi"', 'He said "hi"'),
        ('"a" and "b"', '"a" and "b"'),
        ('"it\'s"', "it's"),
        ("'it's'", "'it's'"),
        ("42", "42"),
        ("", ""),
    ],
)
def test_quote_noise_is_stripped_from_strings_only(plugin: QwenPlugin, raw: str, value: str) -> None:
    assert plugin.parse_response(_call("get_weather", city=raw), [WEATHER])[1][0].arguments == {"city": value}


def test_enum_quote_noise_and_untyped_values(plugin: QwenPlugin) -> None:
    calls = plugin.parse_response(_call("get_weather", city="x", unit='"celsius"'), [WEATHER])[1]
    assert calls[0].arguments["unit"] == "celsius"
    unknown = plugin.parse_response(
        _call("mystery", n="42", s="text", q='"quoted"', o='{"a": [1]}'), [WEATHER]
    )[1]
    assert unknown[0].arguments == {"n": 42, "s": "text", "q": "quoted", "o": {"a": [1]}}


@pytest.mark.parametrize(
    "text",
    [
        # the <tool_call> wrapper stripped by the server
        "<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>",
        "<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>",
        # vLLM's qwen3_xml variant
        '<tool_call>\n<tool name="get_weather">\n<parameter name="city">Oslo</parameter>\n'
        "</tool>\n</tool_call>",
        '<tool name="get_weather"><parameter name="city">Oslo</parameter></tool>',
        # compact, and a missing </parameter>
        "<tool_call><function=get_weather><parameter=city>Oslo</parameter></function></tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</function>\n</tool_call>",
        # Qwen3's Hermes JSON form, and the json_schema document
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}',
        '[{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}]',
    ],
)
def test_parse_tolerated_forms(plugin: QwenPlugin, text: str) -> None:
    content, calls = plugin.parse_response(text, [WEATHER])
    assert content is None
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Oslo"})]


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo",
        "<tool_call>\n<function=get_weather>\nnot a parameter\n</function>\n</tool_call>",
        "<tool_call>\n{not json}\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n</function>\nthen text",
        "Before " + _call("get_weather", city="x") + " <tool_call> dangling",
    ],
)
def test_malformed_calls_give_the_text_back(plugin: QwenPlugin, text: str) -> None:
    assert plugin.parse_response(text, [WEATHER]) == (text, [])


def test_plain_text_and_json_that_is_no_call(plugin: QwenPlugin) -> None:
    assert plugin.parse_response("Just an answer.", [WEATHER]) == ("Just an answer.", [])
    assert plugin.parse_response("   ", [WEATHER]) == (None, [])
    assert plugin.parse_response('{"answer": 42}', [WEATHER]) == ('{"answer": 42}', [])


def test_value_containing_markup_is_kept(plugin: QwenPlugin) -> None:
    text = _call("get_weather", city="a <parameter=x> b </function> c")
    assert plugin.parse_response(text, [WEATHER])[1][0].arguments == {
        "city": "a <parameter=x> b </function> c"
    }


# -- server tool_calls -----------------------------------------------------------------------


def test_raw_tool_calls_are_typed_and_cleaned(plugin: QwenPlugin) -> None:
    raw: list[dict[str, Any]] = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "\\"London\\"", "days": "4"}'},
        },
        {
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": 'He said "hi"', "days": 2}},
        },
        {"function": {"name": "get_weather", "arguments": ""}},
    ]
    content, calls = plugin.parse_response("  Thinking done. ", [WEATHER], raw)
    assert content == "Thinking done."
    assert calls[0].id == "call_1"
    assert [c.arguments for c in calls] == [
        {"city": "London", "days": 4},
        {"city": 'He said "hi"', "days": 2},
        {},
    ]
    assert calls[1].id.startswith("call_")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (["not a call"], r"tool_calls_raw\[0\] must be an object"),
        ([{"function": "x"}], r"function must be an object"),
        ([{"function": {"arguments": "{}"}}], r"name must be a non-empty string"),
        ([{"function": {"name": "get_weather", "arguments": "{broken"}}], r"not valid JSON"),
        ([{"function": {"name": "get_weather", "arguments": "[1, 2]"}}], r"must be a JSON object"),
    ],
)
def test_broken_raw_tool_calls_raise(plugin: QwenPlugin, raw: list[Any], message: str) -> None:
    with pytest.raises(ParseError, match=message):
        plugin.parse_response("", [WEATHER], raw)
