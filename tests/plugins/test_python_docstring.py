"""The python_docstring plugin: a call written as a docstring, its grammar (real XGrammar
matcher), parsing, and prompts that end on the opened docstring."""

from __future__ import annotations

from typing import Any

import pytest
import xgrammar

from structured_agents.errors import GrammarConfigError
from structured_agents.grammar.artifacts import EBNFGrammar
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins import ModelPlugin, get_plugin
from structured_agents.plugins.python_docstring import PythonDocstringPlugin
from structured_agents.tasks.docstring.grounding import narrow
from structured_agents.types import Message, ToolCall, ToolResult, ToolSchema

_COMPILER = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo([]), cache_enabled=False)
EBNF = GrammarConfig(mode="ebnf")

LOOSE = ToolSchema(
    "submit_result",
    "Submit the docstring.",
    {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "parameters": {
                "anyOf": [{"type": "object", "additionalProperties": {"type": "string"}}, {"type": "null"}]
            },
            "returns": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["description"],
    },
)


def shaped(**inputs: Any) -> ToolSchema:
    """submit_result as the docstring task shapes it for a target."""
    [tool] = narrow([LOOSE], {"style": "google", **inputs}, termination="submit_result")
    return tool


def accepts(grammar: EBNFGrammar, text: str) -> bool:
    matcher = xgrammar.GrammarMatcher(
        _COMPILER.compile_grammar(xgrammar.Grammar.from_ebnf(grammar.grammar)),
        terminate_without_stop_token=True,
    )
    return bool(matcher.accept_string(text)) and bool(matcher.is_terminated())


def grammar_of(tool: ToolSchema) -> EBNFGrammar:
    artifact = PythonDocstringPlugin().build_grammar([tool], EBNF)
    assert isinstance(artifact, EBNFGrammar)
    return artifact


def test_is_a_model_plugin_from_the_registry() -> None:
    plugin = get_plugin("python_docstring")
    assert isinstance(plugin, PythonDocstringPlugin)
    assert isinstance(plugin, ModelPlugin)
    assert (plugin.supports_ebnf, plugin.supports_structural_tags, plugin.supports_json_schema) == (
        True,
        False,
        False,
    )


def test_a_shaped_call_round_trips_through_the_grammar_and_the_parser() -> None:
    tool = shaped(parameter_names=["word", "count"], gives="returns")
    plugin = PythonDocstringPlugin()
    grammar = plugin.build_grammar([tool], EBNF)
    assert isinstance(grammar, EBNFGrammar)
    call = ToolCall(
        "submit_result",
        {
            "description": "Return the plural form of a word",
            "parameters": {"word": "The word to pluralize", "count": "How many there are"},
            "returns": "The plural form",
        },
    )
    text = plugin.render_tool_calls([call], [tool])
    assert text == (
        "Return the plural form of a word\n\n    Parameters:\n        word: The word to pluralize\n"
        '        count: How many there are\n\n    Returns:\n        The plural form\n    """'
    )
    assert accepts(grammar, text) and accepts(
        grammar, doc(call.arguments["description"], "word: W", "count: C")
    )
    content, [parsed] = plugin.parse_response(text, [tool])
    assert content is None
    assert (parsed.name, parsed.arguments) == (call.name, call.arguments)


def doc(summary: str, *args: str, returns: str | None = "It") -> str:
    """Docstring text: ``summary``, the ``Parameters:`` lines, the ``Returns:`` line, the close."""
    text = summary + "\n\n    Parameters:" + "".join(f"\n        {line}" for line in args)
    if returns is not None:
        text += f"\n\n    Returns:\n        {returns}"
    return text + '\n    """'


@pytest.mark.parametrize(
    "text",
    [
        doc("Returns the plural", "word: A word", "count: A count"),  # not the job's opening verb
        doc("Return the plural", "other: A word", "count: A count"),  # not a parameter of the target
        doc("Return the plural", "word: A word"),  # a required parameter left out
        doc("Return the plural", "word: ", "count: A count"),  # an empty entry
        doc("Return the plural", "word:  A", "count: A count"),  # an entry opening on a space
        doc("Return {x}", "word: A word", "count: A count"),  # call syntax in prose
        doc('Return the "plural"', "word: A word", "count: A count"),  # a quote could close it early
        doc("Return the plural\nof a word", "word: A", "count: A count"),  # a second summary line
        doc("Return the plural", "word: A word", "count: A count", returns=None),  # no Returns section
    ],
)
def test_the_grammar_refuses_what_the_job_forbids(text: str) -> None:
    assert not accepts(grammar_of(shaped(parameter_names=["word", "count"], gives="returns")), text)


def test_a_summary_alone_closes_on_its_line() -> None:
    grammar = grammar_of(shaped())
    assert accepts(grammar, 'A heating control."""')
    assert not accepts(grammar, '"""')
    assert not accepts(grammar, 'A heating control.\n\n    Parameters:\n        x: y\n    """')


def test_the_unshaped_tool_takes_any_parameter_names_and_optional_sections() -> None:
    grammar = grammar_of(LOOSE)
    assert accepts(grammar, 'Do it."""')
    assert accepts(grammar, 'Do it.\n\n    Parameters:\n        a: One\n        *rest: More\n    """')
    assert accepts(grammar, 'Do it.\n\n    Returns:\n        All\n    """')
    plugin = PythonDocstringPlugin()
    plugin.build_grammar([LOOSE], EBNF)
    _, [call] = plugin.parse_response(
        'Do it.\n\n    Parameters:\n        a: One\n        *rest: More\n    """', [LOOSE]
    )
    assert call.arguments == {"description": "Do it.", "parameters": {"a": "One", "*rest": "More"}}


def test_a_response_without_a_summary_is_no_call() -> None:
    plugin = PythonDocstringPlugin()
    plugin.build_grammar([LOOSE], EBNF)
    assert plugin.parse_response('"""', [LOOSE]) == ('"""', [])


def test_the_prompt_is_code_ending_on_the_opened_docstring_and_a_retry_repeats_it() -> None:
    plugin = PythonDocstringPlugin()
    tool = shaped()
    user = 'def f(x):\n    """'
    first = plugin.render_prompt([Message.system("Say what it does."), Message.user(user)], [tool])
    assert first == "# Say what it does.\n" + user
    call = ToolCall("submit_result", {"description": "Copied line."}, id="c1")
    retry = plugin.render_prompt(
        [
            Message.system("Say what it does."),
            Message.user(user),
            Message.assistant(None, (call,)),
            Message.tool(ToolResult("c1", "submit_result", "refused: a copy\nwrite your own", is_error=True)),
        ],
        [tool],
    )
    assert retry == (
        "# Say what it does.\n" + user + 'Copied line."""\n\n\n# refused: a copy\n# write your own\n' + user
    )


def test_only_ebnf_and_one_tool_of_strings_are_served() -> None:
    plugin = PythonDocstringPlugin()
    with pytest.raises(GrammarConfigError, match="mode 'json_schema'"):
        plugin.build_grammar([LOOSE], GrammarConfig(mode="json_schema"))
    with pytest.raises(GrammarConfigError, match="exactly one tool"):
        plugin.build_grammar([LOOSE, LOOSE], EBNF)
    numbers = ToolSchema(
        "t", "", {"type": "object", "properties": {"d": {"type": "string"}, "n": {"type": "integer"}}}
    )
    with pytest.raises(GrammarConfigError, match="property 'n'"):
        plugin.build_grammar([numbers], EBNF)


def test_one_plugin_parses_the_calls_of_jobs_whose_tools_differ() -> None:
    plugin = PythonDocstringPlugin()
    first, second = shaped(parameter_names=["seq"], gives="returns"), shaped(parameter_names=["d"])
    plugin.build_grammar([first], EBNF)
    plugin.build_grammar([second], EBNF)  # the batch's last job, not the one whose text is parsed
    # the text is parsed as a call of its own request's tool, whatever the instance saw last
    text = doc("Return the second item", "seq: A sequence", returns="The item")
    assert accepts(grammar_of(first), text)
    _, [call] = plugin.parse_response(text, [first])
    assert call.arguments == {
        "description": "Return the second item",
        "parameters": {"seq": "A sequence"},
        "returns": "The item",
    }
