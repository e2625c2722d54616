"""Qwen grammars checked with the real XGrammar compiler and matcher.

Every grammar is built by ``QwenPlugin.build_grammar`` and compiled by XGrammar itself; the
round-trip properties render calls with the plugin, run them through the compiled grammar
and parse them back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import xgrammar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xgrammar.testing import _is_grammar_accept_string

from structured_agents.errors import ConfigError
from structured_agents.grammar.artifacts import GrammarArtifact, JsonSchemaGrammar, StructuralTagGrammar
from structured_agents.grammar.config import ArgsFormat, GrammarConfig
from structured_agents.plugins.qwen import QwenPlugin
from structured_agents.types import ToolCall, ToolSchema

_COMPILER = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo([]), cache_enabled=False)
ARGS_FORMATS: tuple[ArgsFormat, ...] = ("escaped_strings", "json", "permissive")

WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "options": {
                "type": "object",
                "properties": {
                    "hourly": {"type": "boolean"},
                    "fields": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["hourly"],
            },
        },
        "required": ["city"],
    },
)
SEARCH = ToolSchema(
    name="web.search-v2",
    description="Search the web.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "number"}},
        "required": ["query", "limit"],
    },
)
NO_ARGS = ToolSchema(name="finish", description="End the run.")
TOOLS = [WEATHER, SEARCH, NO_ARGS]


def _grammar(config: GrammarConfig, tools: list[ToolSchema] = TOOLS) -> tuple[QwenPlugin, GrammarArtifact]:
    plugin = QwenPlugin()
    return plugin, plugin.build_grammar(tools, config)


def _accepts(artifact: GrammarArtifact, text: str) -> bool:
    """Whether XGrammar accepts ``text`` as a whole (terminated) output of ``artifact``."""
    if isinstance(artifact, StructuralTagGrammar):
        grammar = xgrammar.Grammar.from_structural_tag(artifact.tag_json)
    else:
        assert isinstance(artifact, JsonSchemaGrammar)
        grammar = xgrammar.Grammar.from_json_schema(artifact.schema_json, strict_mode=True)
    return bool(_is_grammar_accept_string(grammar, text))


def _xml(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


# -- structural tag, default args_format (escaped_strings) ---------------------------------------

TAG = GrammarConfig(mode="structural_tag")
SINGLE = GrammarConfig(mode="structural_tag", allow_parallel_calls=False)

MUST_ACCEPT = {
    "single call": _xml("get_weather", city="London"),
    "all params": _xml("get_weather", city="Paris", days="3", unit="celsius", options='{"hourly": true}'),
    "tricky string": _xml("get_weather", city='a}b,c"d<e\nf\n\nmulti-line </para'),
    "nested json": _xml(
        "get_weather", city="x", options='{"hourly": false, "fields": ["a}", "b\\"c", "<x>"]}'
    ),
    "unicode": _xml("get_weather", city="Zürich 東京 😀"),
    "dotted dashed name": _xml("web.search-v2", query="q", limit="2.5"),
    "no arguments": "<tool_call>\n<function=finish>\n</function>\n</tool_call>",
    "empty string": _xml("get_weather", city=""),
    "compact": "<tool_call>\n<function=get_weather>\n<parameter=city>London</parameter>"
    "</function>\n</tool_call>",
    "quoted json string": _xml("get_weather", city='"London"'),
}
MUST_REJECT = {
    "unknown tool": _xml("get_forecast", city="London"),
    "unknown key": _xml("get_weather", city="London", country="UK"),
    "missing required key": _xml("get_weather", days="3"),
    "wrong type": _xml("get_weather", city="London", days="three"),
    "float for integer": _xml("get_weather", city="London", days="3.5"),
    "not in enum": _xml("get_weather", city="London", unit="kelvin"),
    "wrong nested type": _xml("get_weather", city="x", options='{"hourly": "yes"}'),
    "ends value early": _xml("get_weather", city="a</parameter>b"),
    "closes function inside value": _xml("get_weather", city="a</function>b"),
    "nested string ends value": _xml(
        "get_weather", city="x", options='{"hourly": true, "fields": ["</parameter>"]}'
    ),
    "free text before call": "Sure!\n" + _xml("get_weather", city="London"),
    "empty output": "",
    "missing close": "<tool_call>\n<function=get_weather>\n<parameter=city>\nLondon\n</parameter>\n",
}


@pytest.mark.parametrize("text", MUST_ACCEPT.values(), ids=MUST_ACCEPT.keys())
def test_structural_tag_accepts(text: str) -> None:
    _, artifact = _grammar(TAG)
    assert _accepts(artifact, text)


@pytest.mark.parametrize("text", MUST_REJECT.values(), ids=MUST_REJECT.keys())
def test_structural_tag_rejects(text: str) -> None:
    _, artifact = _grammar(TAG)
    assert not _accepts(artifact, text)


def test_parallel_calls_follow_the_config() -> None:
    two = _xml("get_weather", city="London") + "\n" + _xml("web.search-v2", query="q", limit="1")
    _, parallel = _grammar(TAG)
    _, single = _grammar(SINGLE)
    assert _accepts(parallel, two)
    assert _accepts(parallel, two + "\n" + _xml("finish"))
    assert not _accepts(single, two)
    assert _accepts(single, _xml("get_weather", city="London"))


def test_structural_tag_shape_uses_qwen_xml_and_excludes() -> None:
    _, artifact = _grammar(TAG)
    assert isinstance(artifact, StructuralTagGrammar)
    calls = artifact.tag["format"]
    assert calls["type"] == "tags_with_separator"
    assert calls["at_least_one"] is True and calls["stop_after_first"] is False
    first = calls["tags"][0]
    assert first["begin"] == "<tool_call>\n<function=get_weather>\n"
    assert first["end"] == "</function>\n</tool_call>"
    assert first["content"]["style"] == "qwen_xml"
    assert "</parameter>" in first["content"]["excludes"]
    xgrammar.StructuralTag.from_json(artifact.tag_json)  # XGrammar's own model validates it


# -- the other args formats ------------------------------------------------------------------


def test_json_args_format_requires_json_strings() -> None:
    _, artifact = _grammar(GrammarConfig(mode="structural_tag", args_format="json"))
    assert _accepts(artifact, _xml("get_weather", city='"London"', days="2"))
    assert _accepts(artifact, _xml("get_weather", city='"a\\"b</x>\\n"', options='{"hourly": true}'))
    assert _accepts(artifact, _xml("finish"))
    assert not _accepts(artifact, _xml("get_weather", city="London"))
    assert not _accepts(artifact, _xml("get_weather", city='"London"', country='"UK"'))
    assert not _accepts(artifact, _xml("get_weather", days="2"))
    assert not _accepts(artifact, _xml("get_weather", city='"a</parameter>"'))
    assert _accepts(artifact, _xml("get_weather", city='"a<\\/parameter>"'))


def test_permissive_keeps_keys_but_not_types() -> None:
    _, artifact = _grammar(GrammarConfig(mode="structural_tag", args_format="permissive"))
    assert _accepts(artifact, _xml("get_weather", city="London", days="three"))
    assert not _accepts(artifact, _xml("get_weather", days="3"))
    assert not _accepts(artifact, _xml("get_weather", city="x", country="UK"))
    assert not _accepts(artifact, _xml("get_weather", city="a</parameter>"))


@pytest.mark.parametrize("parallel", [True, False])
def test_json_schema_mode(parallel: bool) -> None:
    _, artifact = _grammar(GrammarConfig(mode="json_schema", allow_parallel_calls=parallel))
    call = {"name": "get_weather", "arguments": {"city": "London", "days": 2}}
    other = {"name": "web.search-v2", "arguments": {"query": "q", "limit": 1.5}}
    doc = [call, other] if parallel else call
    assert _accepts(artifact, json.dumps(doc))
    assert not _accepts(artifact, json.dumps([call, other] if not parallel else call))
    bad_calls: list[dict[str, Any]] = [
        {"name": "nope", "arguments": {}},
        {"name": "get_weather", "arguments": {"days": 2}},
        {"name": "get_weather", "arguments": {"city": "x", "extra": 1}},
        {"name": "get_weather", "arguments": {"city": 5}},
    ]
    for bad in bad_calls:
        assert not _accepts(artifact, json.dumps([bad] if parallel else bad))


def test_refs_survive_embedding() -> None:
    tool = ToolSchema(
        name="move",
        description="Move a point.",
        parameters={
            "type": "object",
            "$defs": {
                "Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
            },
            "properties": {"to": {"$ref": "#/$defs/Point"}, "label": {"type": "string"}},
            "required": ["to"],
        },
    )
    for config in (
        GrammarConfig(mode="structural_tag"),
        GrammarConfig(mode="structural_tag", args_format="json"),
        GrammarConfig(mode="json_schema", allow_parallel_calls=False),
    ):
        plugin, artifact = _grammar(config, [tool, WEATHER])
        call = ToolCall("move", {"to": {"x": 3}, "label": "a"})
        text = plugin.render_tool_calls([call], [tool, WEATHER])
        assert _accepts(artifact, text), (config, text)
        assert not _accepts(artifact, text.replace("3", '"3"')), config
        assert plugin.parse_response(text, [tool, WEATHER])[1][0].arguments == call.arguments


def test_byte_level_tokens_follow_the_mask() -> None:
    """Decode a rendered call token by token (one token per byte) under the compiled grammar."""
    vocab = [bytes([b]) for b in range(256)] + [b"<eos>"]
    info = xgrammar.TokenizerInfo(vocab, stop_token_ids=[256])
    plugin = QwenPlugin()
    artifact = plugin.build_grammar(TOOLS, SINGLE)
    matcher = xgrammar.GrammarMatcher(
        xgrammar.GrammarCompiler(info, cache_enabled=False).compile_grammar(artifact.parse())
    )
    bitmask = xgrammar.allocate_token_bitmask(1, info.vocab_size)
    text = plugin.render_tool_calls([ToolCall("get_weather", {"city": "Zürich </x>", "days": 2})], TOOLS)
    for byte in text.encode():
        matcher.fill_next_token_bitmask(bitmask)
        assert (int(bitmask[0, byte // 32]) >> (byte % 32)) & 1, f"byte {byte!r} masked"
        assert matcher.accept_token(byte)
    matcher.fill_next_token_bitmask(bitmask)
    allowed = [t for t in range(info.vocab_size) if (int(bitmask[0, t // 32]) >> (t % 32)) & 1]
    assert allowed == [256]
    assert matcher.accept_token(256) and matcher.is_terminated()


# -- round trip over generated schemas and values -----------------------------------------------

_KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_NAMES = st.from_regex(r"[a-z][a-z0-9_.\-]{0,10}", fullmatch=True)
_MARKUP = [
    '"',
    "'",
    "<",
    "</",
    "</parameter>",
    "</function>",
    "</tool_call>",
    "<parameter=k>",
    "\n",
    "{",
    "}",
    ",",
    "\\",
]
# Free text mixed with quotes and the format's own markup (the renderer must escape the closers).
_TEXT = st.lists(st.one_of(st.text(max_size=6), st.sampled_from(_MARKUP)), max_size=5).map("".join)
_LEAF_SCHEMAS: list[tuple[dict[str, Any], st.SearchStrategy[Any]]] = [
    ({"type": "string"}, _TEXT),
    (
        {"type": "string"},
        st.sampled_from(['"quoted"', "'single'", "42", "true", "null", "{}", " padded ", "\n"]),
    ),
    ({"type": "integer"}, st.integers(-(10**12), 10**12)),
    ({"type": "number"}, st.floats(allow_nan=False, allow_infinity=False, width=64)),
    ({"type": "boolean"}, st.booleans()),
    ({"type": "string", "enum": ["red", "green blue", "x-y"]}, st.sampled_from(["red", "green blue", "x-y"])),
    ({"type": "array", "items": {"type": "string"}}, st.lists(_TEXT, max_size=3)),
    ({"type": "array", "items": {"type": "integer"}}, st.lists(st.integers(-100, 100), max_size=3)),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a"],
        },
        st.fixed_dictionaries({"a": st.integers(0, 9)}, optional={"b": _TEXT}),
    ),
]


@st.composite
def _tool_and_call(draw: st.DrawFn) -> tuple[ToolSchema, ToolCall]:
    keys = draw(st.lists(_KEYS, min_size=0, max_size=4, unique=True))
    picks = [draw(st.sampled_from(_LEAF_SCHEMAS)) for _ in keys]
    required = [k for k in keys if draw(st.booleans())]
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {k: schema for k, (schema, _) in zip(keys, picks, strict=True)},
    }
    if required:
        parameters["required"] = required
    arguments = {
        k: draw(values)
        for k, (_, values) in zip(keys, picks, strict=True)
        if k in required or draw(st.booleans())
    }
    # Calls come in any key order; the plugin writes them in the schema's order.
    arguments = dict(draw(st.permutations(list(arguments.items()))))
    tool = ToolSchema(name=draw(_NAMES), description="generated", parameters=parameters)
    return tool, ToolCall(tool.name, arguments)


def _matcher_accepts(artifact: GrammarArtifact, text: str) -> bool:
    matcher = xgrammar.GrammarMatcher(
        _COMPILER.compile_grammar(artifact.parse()), terminate_without_stop_token=True
    )
    return bool(matcher.accept_string(text)) and bool(matcher.is_terminated())


_ROUND_TRIP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _assert_round_trip(config: GrammarConfig, pairs: list[tuple[ToolSchema, ToolCall]]) -> None:
    tools: dict[str, ToolSchema] = {}
    calls = [call for tool, call in pairs if tools.setdefault(tool.name, tool) is tool]
    plugin = QwenPlugin()
    artifact = plugin.build_grammar(list(tools.values()), config)
    text = plugin.render_tool_calls(calls, list(tools.values()))
    assert _matcher_accepts(artifact, text), text
    content, parsed = plugin.parse_response(text, list(tools.values()))
    assert content is None
    assert [(c.name, c.arguments) for c in parsed] == [(c.name, c.arguments) for c in calls]
    # equal as JSON and as types (1 vs 1.0 vs True)
    assert json.dumps([c.arguments for c in parsed], sort_keys=True) == json.dumps(
        [c.arguments for c in calls], sort_keys=True
    )


@pytest.mark.parametrize("args_format", ARGS_FORMATS)
@_ROUND_TRIP
@given(pair=_tool_and_call())
def test_round_trip_structural_tag_single(args_format: ArgsFormat, pair: tuple[ToolSchema, ToolCall]) -> None:
    _assert_round_trip(
        GrammarConfig(mode="structural_tag", allow_parallel_calls=False, args_format=args_format), [pair]
    )


@_ROUND_TRIP
@given(pairs=st.lists(_tool_and_call(), min_size=1, max_size=3))
def test_round_trip_structural_tag_parallel(pairs: list[tuple[ToolSchema, ToolCall]]) -> None:
    _assert_round_trip(GrammarConfig(mode="structural_tag"), pairs)


@pytest.mark.parametrize("parallel", [True, False])
@_ROUND_TRIP
@given(pair=_tool_and_call())
def test_round_trip_json_schema(parallel: bool, pair: tuple[ToolSchema, ToolCall]) -> None:
    _assert_round_trip(GrammarConfig(mode="json_schema", allow_parallel_calls=parallel), [pair])


def test_optional_calls_allow_text_and_calls_where_the_model_opens_one() -> None:
    _, artifact = _grammar(GrammarConfig(mode="structural_tag", require_calls=False))
    assert _accepts(artifact, "It is sunny, no tool needed.")
    assert _accepts(artifact, "Let me check. " + _xml("finish"))
    assert not _accepts(artifact, "Let me check. <tool_call>\n<function=nope>\n</function>\n</tool_call>")
    with pytest.raises(ConfigError, match="require_calls=False needs mode='structural_tag'"):
        GrammarConfig(mode="ebnf", require_calls=False)
