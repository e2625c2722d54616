"""Grounded docstrings: each job's termination tool shaped to its target, and the candidate whose
words come from the target's code kept over one that borrows the worked examples' words."""

from __future__ import annotations

from pathlib import Path

from structured_agents.borrowed import file_words
from structured_agents.context import RunContext
from structured_agents.tasks.docstring.grounding import PROSE, Grounding, narrow, opening
from structured_agents.types import ToolCall, ToolSchema
from structured_agents.words import word_grams, words

SUBMIT = ToolSchema(
    "submit_result", "Submit.", {"type": "object", "properties": {"description": {"type": "string"}}}
)
OTHER = ToolSchema("read", "Read.", {"type": "object", "properties": {}})
EXAMPLES = ["Convert a temperature in degrees Celsius to kelvin.", "The stock-keeping unit of the product."]
SOURCE = "def scientific(value, precision=2):\n    return format_exponent(value, precision)\n"
INPUTS = {"source": SOURCE, "qualname": "scientific", "path": "humanize/number.py"}
RUN = RunContext("r1", inputs=INPUTS)  # no workspace: no file words


def _in_file(tmp_path: Path, text: str) -> RunContext:
    """The run's context with its target file, ``humanize/number.py``, holding ``text``."""
    (tmp_path / "humanize").mkdir(exist_ok=True)
    (tmp_path / "humanize" / "number.py").write_text(text)
    return RunContext("r1", workspace=tmp_path, inputs=INPUTS)


def _submit(description: str, **more: object) -> tuple[None, list[ToolCall]]:
    return None, [ToolCall("submit_result", {"description": description, **more})]


def test_words_split_identifiers_and_stem_lightly() -> None:
    assert words("formatExponent(values) formatted_strings Formats") == words(
        "format exponent value format string format"
    )
    assert len(set(words("format formats formatted formatting"))) == 1
    assert len(set(words("value values valued"))) == 1 and words("classes") == words("class")
    assert ("to", "kelvin", "the", "end") in word_grams("Convert to kelvin, the end.")


def test_the_tool_of_a_job_takes_exactly_its_parameters_and_what_it_gives() -> None:
    inputs = {"parameter_names": ["value", "*args"], "gives": "returns", "style": "google"}
    shaped, other = narrow([SUBMIT, OTHER], inputs, termination="submit_result")
    assert other is OTHER
    schema = shaped.parameters
    assert list(schema["properties"]) == ["description", "parameters", "returns"]
    assert schema["required"] == ["description", "parameters", "returns"]
    assert schema["properties"]["parameters"]["required"] == ["value", "args"]
    assert schema["properties"]["parameters"]["additionalProperties"] is False
    [bare] = narrow([SUBMIT], {"parameter_names": [], "gives": None}, termination="submit_result")
    assert list(bare.parameters["properties"]) == ["description"]
    plain_inputs = {"parameter_names": ["a"], "gives": "yields", "style": "plain"}
    plain = narrow([SUBMIT], plain_inputs, termination="submit_result")
    assert list(plain[0].parameters["properties"]) == ["description"]


def test_the_summary_of_a_function_that_returns_or_yields_opens_on_pep_257s_verb() -> None:
    def pattern(gives: str | None) -> str:
        shaped = narrow([SUBMIT], {"parameter_names": [], "gives": gives}, termination="submit_result")[0]
        return str(shaped.parameters["properties"]["description"]["pattern"])

    assert pattern("returns").startswith("^Return [") and pattern("yields").startswith("^Yield [")
    assert pattern(None) == PROSE  # a class, or a function that hands nothing back: any opening
    # the opening word is never banned (a stop word), even where the file and the code lack it
    grounding = Grounding.of("submit_result", [], ["Return it. Yield it. Write it."])
    for gives, word in (("returns", "Return"), ("yields", "Yield")):
        banned = grounding.bad_words(RunContext("r1", inputs={**INPUTS, "gives": gives, "source": "x"}))
        assert opening({"gives": gives}) == f"{word} " and word not in banned and "Write" in banned


def test_the_grounded_candidate_is_kept_over_a_copy_of_the_examples() -> None:
    grounding = Grounding.of("submit_result", EXAMPLES)
    parsed = [
        None,
        _submit("Convert a temperature in degrees Celsius to kelvin."),
        _submit("Format a value in scientific notation with a precision."),
        (None, [ToolCall("read", {})]),
        _submit(""),
    ]
    assert grounding.choose(RUN, parsed) == 2
    code = set(words(SOURCE))
    assert grounding.score(parsed[1], code) < grounding.score(parsed[2], code)
    assert grounding.score(parsed[4], code) < grounding.score(parsed[2], code)


def test_borrowed_words_cost_even_in_the_parameter_lines() -> None:
    grounding = Grounding.of("submit_result", EXAMPLES)
    clean = _submit("Format the value.", parameters={"value": "The number to format."})
    borrowed = _submit("Format the value.", parameters={"value": "The temperature of the product."})
    assert grounding.choose(RUN, [borrowed, clean]) == 1


def test_among_equals_the_first_is_kept() -> None:
    grounding = Grounding.of("submit_result", EXAMPLES)
    same = _submit("Format the value.")
    assert grounding.choose(RUN, [same, same, same]) == 0


SHOWN = ["Write the docstring. Convert a temperature to kelvin at a precision.", "def restock(sku): pass"]


def test_the_words_of_the_prompts_missing_from_the_file_are_banned_in_both_cases(tmp_path: Path) -> None:
    grounding = Grounding.of("submit_result", EXAMPLES, SHOWN)
    banned = grounding.bad_words(_in_file(tmp_path, "# convert to kelvin\n"))
    assert {"temperature", "Temperature", "restock", "Restock", "sku", "Sku", "docstring"} <= set(banned)
    # in the file, in the target's code, or a stop word: never banned
    assert not {"convert", "kelvin", "the", "value", "scientific"} & {w.lower() for w in banned}
    assert "Write" in banned  # "write" is not in this file
    alone = set(grounding.bad_words(RUN))
    assert {"convert", "kelvin"} <= alone and "precision" not in alone  # the target's own code uses it


def test_file_words_are_read_from_the_workspace_and_follow_the_file(tmp_path: Path) -> None:
    (tmp_path / "code.py").write_text("def convert(kelvin): pass\n")
    assert file_words(tmp_path, "code.py") == {"convert", "kelvin", "def", "pass"}
    (tmp_path / "code.py").write_text("def restock(sku, items): pass\n")  # changed: read again
    assert {"restock", "sku", "items"} <= file_words(tmp_path, "code.py")
    (tmp_path.parent / "outside.py").write_text("secret words\n")
    assert file_words(tmp_path, "../outside.py") == frozenset()  # outside the workspace
    assert file_words(tmp_path, "missing.py") == file_words(None, "code.py") == frozenset()


def test_a_candidate_with_call_markup_in_a_value_or_a_repeating_part_loses() -> None:
    grounding = Grounding.of("submit_result", EXAMPLES, SHOWN)
    clean = _submit("Format the value.", parameters={"value": "The number to format."})
    markup = _submit("Format the value.", parameters={"value": "The number</escape><end-function_call>"})
    looping = _submit("Format the value.", parameters={"value": "The digit, digit, digit, digit."})
    assert grounding.choose(RUN, [markup, clean]) == 1
    assert grounding.choose(RUN, [looping, clean]) == 1
    for broken in (
        ",parameters,one=1",
        ") return format_exponent(value)",
        "The value, precision=2.",
        "The перегов.",
        "Print(str(tbi), end, file.",
    ):
        assert grounding.choose(RUN, [_submit("Format the value.", parameters={"value": broken}), clean]) == 1


def test_a_word_of_the_prompts_the_file_lacks_costs_in_the_choice() -> None:
    grounding = Grounding.of("submit_result", [], SHOWN)
    assert grounding.choose(RUN, [_submit("Restock the value."), _submit("Format the value.")]) == 1


def test_a_summary_that_says_the_targets_name_is_kept_over_one_that_does_not() -> None:
    grounding = Grounding.of("submit_result", EXAMPLES)
    vague = _submit("Format the value with a precision.")
    named = _submit("Format the value in scientific notation.")
    assert grounding.choose(RUN, [vague, named]) == 1


def test_letters_outside_ascii_cost_only_where_the_code_does_not_use_them() -> None:
    grounding = Grounding.of("submit_result", EXAMPLES)
    accented = RunContext("r1", inputs={**INPUTS, "source": SOURCE + "# précision\n"})
    clean, french = _submit("Format the value."), _submit("Format the value, précision.")
    assert grounding.choose(RUN, [french, clean]) == 1
    assert grounding.choose(accented, [french, clean]) == 0
