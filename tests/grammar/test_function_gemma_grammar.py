"""FunctionGemma grammars against the real XGrammar: every mode x args_format x parallel flag."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
import xgrammar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structured_agents.errors import GrammarConfigError
from structured_agents.grammar.artifacts import (
    EBNFGrammar,
    GrammarArtifact,
    JsonSchemaGrammar,
    StructuralTagGrammar,
)
from structured_agents.grammar.compiler import GrammarCache
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins.function_gemma import FunctionGemmaPlugin
from structured_agents.plugins.function_gemma.format import ESCAPE, RenderStyle, render_call
from structured_agents.plugins.function_gemma.grammar import build_function_gemma_grammar
from structured_agents.types import ToolCall, ToolSchema

_COMPILER = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo([]), cache_enabled=False)
_COMPILED: dict[str, xgrammar.CompiledGrammar] = {}


def to_grammar(artifact: GrammarArtifact) -> xgrammar.Grammar:
    """The artifact as an ``xgrammar.Grammar``, built the way XGrammar's own API reads it."""
    if isinstance(artifact, EBNFGrammar):
        return xgrammar.Grammar.from_ebnf(artifact.grammar)
    if isinstance(artifact, StructuralTagGrammar):
        return xgrammar.Grammar.from_structural_tag(artifact.tag_json)
    return xgrammar.Grammar.from_json_schema(artifact.schema_json, strict_mode=True)


def accepts(artifact: GrammarArtifact, text: str) -> bool:
    """Whether the whole of ``text`` is a complete match of ``artifact``."""
    compiled = _COMPILED.get(artifact.cache_key)
    if compiled is None:
        compiled = _COMPILED[artifact.cache_key] = _COMPILER.compile_grammar(to_grammar(artifact))
    matcher = xgrammar.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return bool(matcher.accept_string(text)) and bool(matcher.is_terminated())


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def render(config: GrammarConfig, calls: Sequence[ToolCall]) -> str:
    """Calls as a model constrained by ``config`` writes them."""
    if config.mode == "json_schema":
        items = ['{"name":' + _json(c.name) + ',"arguments":' + _json(c.arguments) + "}" for c in calls]
        return '{"tool_calls":[' + ",".join(items) + "]}" if config.allow_parallel_calls else items[0]
    style: RenderStyle = "json" if config.args_format == "json" else "escaped_strings"
    return "".join(render_call(call, style) for call in calls)


WEATHER = ToolSchema(
    "get-weather.v2",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "detail": {
                "type": "object",
                "properties": {
                    "fields": {"type": "array", "items": {"type": "string"}},
                    "hourly": {"type": "boolean"},
                },
                "required": ["hourly"],
            },
            "note": {"type": ["string", "null"]},
            "ratio": {"type": "number"},
            "units": {"type": "string", "enum": ["c", "f"]},
        },
        "required": ["city"],
    },
)
QUOTE = ToolSchema(
    'say"quote\\d',
    "Say it.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
NOARGS = ToolSchema("noargs", "No arguments.")
TOOLS = [WEATHER, QUOTE, NOARGS]

FULL = ToolCall(
    WEATHER.name,
    {
        "city": 'Paris}, "x"\n<esc<e',
        "days": 3,
        "detail": {"fields": ["a}", "", "é😀"], "hourly": True},
        "note": None,
        "ratio": -0.5e-3,
        "units": "f",
    },
)
MINIMAL = ToolCall(WEATHER.name, {"city": "Zürich"})
SAY = ToolCall(QUOTE.name, {"text": "{[<>]}:,"})
EMPTY = ToolCall(NOARGS.name, {})
VALID = [FULL, MINIMAL, SAY, EMPTY]
# Calls that break the schema; the permissive format accepts all but the unknown tool.
UNKNOWN_TOOL = ToolCall("get-weather", {"city": "x"})
SCHEMA_BREAKERS = {
    "unknown key": ToolCall(WEATHER.name, {"city": "x", "bogus": 1}),
    "missing required": ToolCall(WEATHER.name, {"days": 3}),
    "string for integer": ToolCall(WEATHER.name, {"city": "x", "days": "3"}),
    "integer for string": ToolCall(WEATHER.name, {"city": 3}),
    "not in enum": ToolCall(WEATHER.name, {"city": "x", "units": "k"}),
    "nested missing required": ToolCall(WEATHER.name, {"city": "x", "detail": {"fields": []}}),
    "array item type": ToolCall(WEATHER.name, {"city": "x", "detail": {"fields": [1], "hourly": False}}),
}

CONFIGS = [
    GrammarConfig(mode=mode, args_format=args_format, allow_parallel_calls=parallel)
    for mode in ("ebnf", "structural_tag", "json_schema")
    for args_format in ("permissive", "escaped_strings", "json")
    for parallel in (True, False)
]


def _id(config: GrammarConfig) -> str:
    return f"{config.mode}-{config.args_format}-{'parallel' if config.allow_parallel_calls else 'single'}"


@pytest.fixture(params=CONFIGS, ids=_id)
def config(request: pytest.FixtureRequest) -> GrammarConfig:
    return request.param  # type: ignore[no-any-return]


def test_artifact_kind_follows_mode(config: GrammarConfig) -> None:
    artifact = build_function_gemma_grammar(TOOLS, config)
    kinds = {"ebnf": EBNFGrammar, "structural_tag": StructuralTagGrammar, "json_schema": JsonSchemaGrammar}
    assert isinstance(artifact, kinds[config.mode])


@pytest.mark.parametrize("call", VALID, ids=["full", "minimal", "quote-name", "no-args"])
def test_accepts_each_valid_call(config: GrammarConfig, call: ToolCall) -> None:
    artifact = build_function_gemma_grammar(TOOLS, config)
    assert accepts(artifact, render(config, [call]))


def test_parallel_calls_only_when_allowed(config: GrammarConfig) -> None:
    artifact = build_function_gemma_grammar(TOOLS, config)
    if config.mode == "json_schema":
        single = render(GrammarConfig(mode="json_schema", allow_parallel_calls=False), [FULL])
        several = render(GrammarConfig(mode="json_schema"), [FULL, SAY, EMPTY])
        assert accepts(artifact, several) is config.allow_parallel_calls
        assert accepts(artifact, single) is not config.allow_parallel_calls
        assert not accepts(artifact, '{"tool_calls":[]}')
    else:
        assert accepts(artifact, render(config, [FULL, SAY, EMPTY])) is config.allow_parallel_calls
        assert accepts(artifact, render(config, [EMPTY, EMPTY])) is config.allow_parallel_calls


def test_rejects_unknown_tool_and_no_call(config: GrammarConfig) -> None:
    artifact = build_function_gemma_grammar(TOOLS, config)
    assert not accepts(artifact, render(config, [UNKNOWN_TOOL]))
    assert not accepts(artifact, "")
    assert not accepts(artifact, "I would rather chat.")


@pytest.mark.parametrize("case", sorted(SCHEMA_BREAKERS))
def test_schema_breakers(config: GrammarConfig, case: str) -> None:
    artifact = build_function_gemma_grammar(TOOLS, config)
    accepted = accepts(artifact, render(config, [SCHEMA_BREAKERS[case]]))
    assert accepted is (config.args_format == "permissive")


def test_native_strings_need_escape_markers() -> None:
    for parallel in (True, False):
        for mode in ("ebnf", "structural_tag"):
            config = GrammarConfig(mode=mode, args_format="escaped_strings", allow_parallel_calls=parallel)
            artifact = build_function_gemma_grammar(TOOLS, config)
            assert not accepts(
                artifact, "<start_function_call>call:get-weather.v2{city:Paris}<end_function_call>"
            )
            assert not accepts(
                artifact, '<start_function_call>call:get-weather.v2{city:"Paris"}<end_function_call>'
            )
            assert not accepts(
                artifact, f"<start_function_call>call:get-weather.v2{{city:{ESCAPE}Paris}}<end_function_call>"
            )
            assert not accepts(
                artifact,
                f"<start_function_call>call:get-weather.v2{{city:{ESCAPE}a{ESCAPE}b{ESCAPE}}}<end_function_call>",
            )


@pytest.mark.parametrize("mode", ["ebnf", "structural_tag"])
def test_escaped_strings_keep_the_format_markers_out(mode: Any) -> None:
    config = GrammarConfig(mode=mode, args_format="escaped_strings")
    artifact = build_function_gemma_grammar(TOOLS, config)

    def say(text: str) -> str:
        return render(config, [ToolCall(QUOTE.name, {"text": text})])

    assert accepts(artifact, say("a < b, 1 <2, <b>bold, <p>"))
    for leaked in (
        "Done.<end_function_call>",
        "x</start_function_call>",
        "<start_function_response>r",
        "<end_of_turn>",
        "Paris}</escape>",  # the README example's city, as the model ran on with it
        "Paris<end-function_call>call:get_weather{",
        "</p>",
    ):
        assert not accepts(artifact, say(leaked)), leaked


def test_json_args_need_json_strings_and_quoted_keys() -> None:
    artifact = build_function_gemma_grammar(TOOLS, GrammarConfig(args_format="json"))
    assert accepts(artifact, '<start_function_call>call:get-weather.v2{"city":"a\\"}\\n"}<end_function_call>')
    assert not accepts(
        artifact, f"<start_function_call>call:get-weather.v2{{city:{ESCAPE}a{ESCAPE}}}<end_function_call>"
    )
    assert not accepts(artifact, '<start_function_call>call:get-weather.v2{city:"a"}<end_function_call>')


@pytest.mark.parametrize("args_format", ["escaped_strings", "json"])
def test_keys_come_in_case_insensitive_sorted_order(args_format: Any) -> None:
    tool = ToolSchema(
        "t", "", {"type": "object", "properties": {"beta": {"type": "integer"}, "Alpha": {"type": "integer"}}}
    )
    config = GrammarConfig(args_format=args_format)
    artifact = build_function_gemma_grammar([tool], config)
    assert accepts(artifact, render(config, [ToolCall("t", {"beta": 1, "Alpha": 2})]))
    key = (lambda k: json.dumps(k)) if args_format == "json" else (lambda k: k)
    assert not accepts(
        artifact, f"<start_function_call>call:t{{{key('beta')}:1,{key('Alpha')}:2}}<end_function_call>"
    )
    assert accepts(artifact, f"<start_function_call>call:t{{{key('beta')}:1}}<end_function_call>")


def test_ebnf_allows_no_text_around_calls_structural_tag_allows_it_between() -> None:
    call = render_call(FULL)
    ebnf = build_function_gemma_grammar(TOOLS, GrammarConfig())
    assert not accepts(ebnf, call + "\n" + call)
    assert not accepts(ebnf, call + " ")
    tag = build_function_gemma_grammar(TOOLS, GrammarConfig(mode="structural_tag"))
    assert accepts(tag, call + "\nand then\n" + call + " done")
    assert not accepts(tag, "first " + call)
    single = build_function_gemma_grammar(
        TOOLS, GrammarConfig(mode="structural_tag", allow_parallel_calls=False)
    )
    assert not accepts(single, call + " done")


def test_structural_tag_shape() -> None:
    artifact = build_function_gemma_grammar(
        TOOLS, GrammarConfig(mode="structural_tag", allow_parallel_calls=False)
    )
    assert isinstance(artifact, StructuralTagGrammar)
    fmt = artifact.tag["format"]
    assert artifact.tag["type"] == "structural_tag"
    assert (fmt["type"], fmt["triggers"], fmt["at_least_one"], fmt["stop_after_first"]) == (
        "triggered_tags",
        ["<start_function_call>"],
        True,
        True,
    )
    assert [tag["begin"] for tag in fmt["tags"]] == [f"<start_function_call>call:{t.name}{{" for t in TOOLS]
    assert {tag["end"] for tag in fmt["tags"]} == {"}<end_function_call>"}
    xgrammar.StructuralTag.from_json(artifact.tag_json)  # validates every field name


def test_json_schema_shape() -> None:
    artifact = build_function_gemma_grammar(
        TOOLS, GrammarConfig(mode="json_schema", args_format="permissive")
    )
    assert isinstance(artifact, JsonSchemaGrammar)
    calls = artifact.schema["properties"]["tool_calls"]
    assert calls["minItems"] == 1
    variants = calls["items"]["anyOf"]
    assert [v["properties"]["name"] for v in variants] == [{"const": t.name} for t in TOOLS]
    assert {json.dumps(v["properties"]["arguments"]) for v in variants} == {'{"type": "object"}'}


def test_empty_or_duplicate_tools_are_config_errors(config: GrammarConfig) -> None:
    with pytest.raises(GrammarConfigError, match="at least one tool"):
        build_function_gemma_grammar([], config)
    with pytest.raises(GrammarConfigError, match="unique"):
        build_function_gemma_grammar([NOARGS, NOARGS], config)


TREE = {
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}},
    "required": ["root"],
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                "label": {"type": "string"},
            },
            "required": ["label"],
        }
    },
}


@pytest.mark.parametrize("mode", ["ebnf", "structural_tag", "json_schema"])
def test_recursive_refs(mode: Any) -> None:
    tool = ToolSchema("tree", "", TREE)
    config = GrammarConfig(mode=mode, allow_parallel_calls=False)
    artifact = build_function_gemma_grammar([tool, NOARGS], config)
    good = {"root": {"children": [{"label": "b"}, {"children": [], "label": "c"}], "label": "a"}}
    assert accepts(artifact, render(config, [ToolCall("tree", good)]))
    assert not accepts(
        artifact, render(config, [ToolCall("tree", {"root": {"children": [{}], "label": "a"}})])
    )


def test_any_of_min_items_and_free_objects() -> None:
    params = {
        "type": "object",
        "properties": {
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "free": {"type": "object"},
            "closed": {"type": "object", "additionalProperties": False},
            "pair": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        },
    }
    artifact = build_function_gemma_grammar([ToolSchema("t", "", params)], GrammarConfig())

    def ok(arguments: dict[str, Any]) -> bool:
        return accepts(artifact, render_call(ToolCall("t", arguments)))

    assert ok({"either": 1}) and ok({"either": "1"}) and not ok({"either": True})
    assert ok({"free": {"a": 1, "b_2": {"c": [None, "x"]}}}) and ok({"free": {}})
    assert ok({"closed": {}}) and not ok({"closed": {"a": 1}})
    assert ok({"pair": [1, 2, 3]}) and ok({"pair": [1, 2]}) and not ok({"pair": [1]})


def _tiny_tokenizer() -> xgrammar.TokenizerInfo:
    markers = ["<start_function_call>", "<end_function_call>", "<escape>", "call:", "</s>"]
    return xgrammar.TokenizerInfo(
        markers + [chr(c) for c in range(32, 127)] + ["\n", "é"], stop_token_ids=[4]
    )


@pytest.mark.parametrize("mode", ["ebnf", "structural_tag", "json_schema"])
def test_grammar_cache_compiles_and_hits(mode: Any) -> None:
    cache = GrammarCache(_tiny_tokenizer())
    artifact = FunctionGemmaPlugin().build_grammar(TOOLS, GrammarConfig(mode=mode))
    first = cache.compile(artifact)
    again = cache.compile(FunctionGemmaPlugin().build_grammar(TOOLS, GrammarConfig(mode=mode)))
    assert again is first
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    matcher = xgrammar.GrammarMatcher(first)
    assert matcher.accept_string(render(GrammarConfig(mode=mode), [MINIMAL]))
    assert matcher.accept_token(4)  # the stop token ends a complete response
    assert matcher.is_terminated()


# --- Hypothesis round trip: random schemas and matching arguments -----------------------------

KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True)
NAMES = st.text(alphabet='abXY_-."\\ é:0', min_size=1, max_size=8)
PIECES = st.one_of(
    st.characters(exclude_categories=["Cs"]),
    st.sampled_from(["}", "{", ",", ":", '"', "\n", "<", ">", "<esc", "<escape", "[", "]", "\\", "é", "😀"]),
)
TEXT = st.lists(PIECES, max_size=12).map("".join).filter(lambda s: ESCAPE not in s)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), st.sampled_from([0.5, -2.25, 1e-3]), TEXT
)
# XGrammar's JSON schema matches an enum string only as it serialises it, and it writes DEL as
# "\u007f" where json.dumps(ensure_ascii=False) writes the raw character: keep DEL out of enums.
ENUM_SCALARS = SCALARS.map(lambda v: v.replace("\x7f", "") if isinstance(v, str) else v)
GENERIC = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=6,
)
LEAVES = st.one_of(
    st.sampled_from(
        [
            {"type": "string"},
            {"type": "integer"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": ["string", "null"]},
            {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            {},
        ]
    ),
    st.lists(ENUM_SCALARS, min_size=1, max_size=4, unique_by=lambda v: json.dumps(v)).map(
        lambda vs: {"enum": vs}
    ),
)


def _object(fields: dict[str, tuple[Any, bool]]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: fields[k][0] for k in sorted(fields)},
        "required": sorted(k for k, (_, required) in fields.items() if required),
    }


SCHEMAS = st.recursive(
    LEAVES,
    lambda inner: (
        st.dictionaries(KEYS, st.tuples(inner, st.booleans()), max_size=4).map(_object)
        | inner.map(lambda items: {"type": "array", "items": items})
    ),
    max_leaves=8,
)
PARAMETERS = st.dictionaries(KEYS, st.tuples(SCHEMAS, st.booleans()), max_size=5).map(_object)


def values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Argument values that satisfy ``schema`` (as generated above)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([values_for(branch) for branch in schema["anyOf"]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([values_for({"type": k}) for k in kind])
    if kind == "object":
        props, required = schema["properties"], set(schema["required"])
        return st.fixed_dictionaries(
            {k: values_for(s) for k, s in props.items() if k in required},
            optional={k: values_for(s) for k, s in props.items() if k not in required},
        )
    simple: dict[Any, st.SearchStrategy[Any]] = {
        "string": TEXT,
        "integer": st.integers(-(10**9), 10**9),
        "number": st.floats(allow_nan=False, allow_infinity=False, width=64) | st.integers(-1000, 1000),
        "boolean": st.booleans(),
        "null": st.none(),
        "array": st.lists(values_for(schema["items"]), max_size=3) if kind == "array" else st.nothing(),
    }
    return simple.get(kind, GENERIC)


@st.composite
def tools_and_calls(draw: st.DrawFn) -> tuple[list[ToolSchema], list[ToolCall]]:
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    tools = [ToolSchema(name, "generated", draw(PARAMETERS)) for name in names]
    chosen = draw(st.lists(st.sampled_from(tools), min_size=1, max_size=3))
    return tools, [ToolCall(tool.name, draw(values_for(tool.parameters))) for tool in chosen]


ROUND_TRIP_CONFIGS = [
    GrammarConfig(mode="ebnf", args_format="escaped_strings"),
    GrammarConfig(mode="ebnf", args_format="json"),
    GrammarConfig(mode="ebnf", args_format="permissive"),
    GrammarConfig(mode="structural_tag", args_format="escaped_strings"),
    GrammarConfig(mode="json_schema", args_format="escaped_strings"),
]


@pytest.mark.parametrize("config", ROUND_TRIP_CONFIGS, ids=_id)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tools_and_calls())
def test_round_trip_render_accept_parse(
    config: GrammarConfig, case: tuple[list[ToolSchema], list[ToolCall]]
) -> None:
    tools, calls = case
    plugin = FunctionGemmaPlugin()
    artifact = plugin.build_grammar(tools, config)
    native = config.mode != "json_schema" and config.args_format != "json"
    text = plugin.render_tool_calls(calls, tools) if native else render(config, calls)
    assert accepts(artifact, text), text
    content, parsed = plugin.parse_response(text, tools)
    assert content is None
    assert [(c.name, c.arguments) for c in parsed] == [(c.name, c.arguments) for c in calls]


@pytest.mark.parametrize("mode", ["ebnf", "structural_tag", "json_schema"])
@pytest.mark.parametrize("args_format", ["escaped_strings", "json"])
@pytest.mark.parametrize("parallel", [True, False])
def test_render_tool_calls_follows_the_last_grammar(mode: str, args_format: str, parallel: bool) -> None:
    """The plugin writes calls in the form its last grammar accepts (history, scripted engines)."""
    plugin = FunctionGemmaPlugin()
    tool = ToolSchema(
        name="locate",
        description="d",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
            "required": ["path", "line"],
        },
    )
    config = GrammarConfig(mode=mode, args_format=args_format, allow_parallel_calls=parallel)  # type: ignore[arg-type]
    artifact = plugin.build_grammar([tool], config)
    calls = [ToolCall("locate", {"line": 3, "path": 'a "b" {c}'})]
    text = plugin.render_tool_calls(calls, [tool])
    assert accepts(artifact, text), text
    _, parsed = plugin.parse_response(text, [tool])
    assert [(c.name, c.arguments) for c in parsed] == [("locate", {"line": 3, "path": 'a "b" {c}'})]


def test_optional_calls_allow_text_and_calls_where_the_model_opens_one() -> None:
    config = GrammarConfig(mode="structural_tag", require_calls=False, allow_parallel_calls=False)
    artifact = FunctionGemmaPlugin().build_grammar(TOOLS, config)
    call = render(config, [MINIMAL])
    assert accepts(artifact, "No tool is needed here.")
    assert accepts(artifact, "Let me look. " + call)
    assert not accepts(artifact, "Let me look. <start_function_call>call:no_such_tool{}<end_function_call>")


@pytest.mark.parametrize("mode", ["ebnf", "structural_tag", "json_schema"])
def test_a_none_of_pattern_keeps_call_syntax_and_markup_out_of_a_string(mode: Any) -> None:
    """``pattern: ^[^<>{}:]*$`` (a docstring's parts): prose passes, call syntax or markup inside
    the value does not, in the native strings and in JSON-schema mode alike; a pattern the
    grammar does not enforce leaves the string free (the tool validates it)."""
    prose = {"type": "string", "pattern": "^[^<>{}:]*$"}
    opening = {"type": "string", "pattern": "^[^<,. ][^<>{}:]*$"}  # and no opening on , . or a space
    maybe = {"type": "string", "pattern": "^([^<,. ][^<>{}:]*)?$"}  # the same, or empty
    other = {"type": "string", "pattern": "^[a-z]+$"}
    properties = {"free": other, "line": prose, "maybe": maybe, "opening": opening}
    tool = ToolSchema("note", "Note.", {"type": "object", "properties": properties})
    args_format = "json" if mode == "json_schema" else "escaped_strings"
    config = GrammarConfig(mode=mode, args_format=args_format)
    artifact = build_function_gemma_grammar([tool], config)

    def say(line: str, free: str = "x", opening: str = "Fine.", maybe: str = "") -> str:
        arguments = {"free": free, "line": line, "maybe": maybe, "opening": opening}
        return render(config, [ToolCall("note", arguments)])

    assert accepts(artifact, say("Return the sum of a, b and c (a list)."))
    if mode != "json_schema":  # XGrammar's own JSON schema reads the pattern too
        assert accepts(artifact, say("Fine.\nTwo lines.", free="Not: [a-z] {at} <all>"))
    for leaked in ("The value,result:", "x,parameters:{additionalProperties:false", "a <url>", "b}"):
        assert not accepts(artifact, say(leaked)), leaked
    assert accepts(artifact, say("", opening="(optional) `x`, a value."))
    for broken in (",default", ". x", " x", "", "x{"):
        assert not accepts(artifact, say("x", opening=broken)), broken
        # XGrammar 0.2.8's own JSON schema lets ",default" through "^(...)?$" (an optional group)
        assert broken == "" or mode == "json_schema" or not accepts(artifact, say("x", maybe=broken)), broken
    assert accepts(artifact, say("x", maybe="Fine too."))


@pytest.mark.parametrize("mode", ["ebnf", "structural_tag", "json_schema"])
def test_a_pattern_opening_on_words_holds_the_value_to_them(mode: Any) -> None:
    """``^Return [^<,. ][^<>{}:]*$`` (the summary of a function that returns a value): the value
    opens on the words, then is prose; it is never empty, and the rest of a call cannot follow."""
    summary = {"type": "string", "pattern": "^Return [^<,. ][^<>{}:]*$"}
    tool = ToolSchema("note", "Note.", {"type": "object", "properties": {"summary": summary}})
    args_format = "json" if mode == "json_schema" else "escaped_strings"
    config = GrammarConfig(mode=mode, args_format=args_format)
    artifact = build_function_gemma_grammar([tool], config)

    def say(text: str) -> str:
        return render(config, [ToolCall("note", {"summary": text})])

    assert accepts(artifact, say("Return the sum of a, b and c."))
    for wrong in ("", "Add the sum.", "Returns the sum.", "Return  the sum.", "Return ,x", "Return x:{a}"):
        assert not accepts(artifact, say(wrong)), wrong
