"""Leaked words: in a written docstring and in the bundle's own text, not in the target's file."""

from __future__ import annotations

import shutil
from pathlib import Path

from structured_agents.bundles import find_bundle, load_bundle
from structured_agents.evaluation.words import bundle_vocabulary, leaked_words
from structured_agents.words import plain_words as words


def test_words_split_identifiers_drop_short_and_stop_words() -> None:
    assert words("formatNumber(x) returns the format_number of an int") == {"format", "number", "int"}
    assert words("Args:\n    value: The value.") == {"value"}


def test_a_word_of_the_bundle_missing_from_the_file_is_leaked() -> None:
    vocabulary = frozenset({"stack", "integer", "number"})
    source = "def scientific(value):\n    return format_number(value)\n"
    assert leaked_words("Add a number to the stack.", source, vocabulary) == ["stack"]
    assert leaked_words("Format the value in scientific notation.", source, vocabulary) == []


def test_the_vocabulary_comes_from_the_loaded_bundles_examples_prompts_and_tools(tmp_path: Path) -> None:
    # docstring_calls (it shows worked examples) with the docstring bundle, whose tools it uses
    bundles = shutil.copytree(find_bundle("docstring_calls").parents[1], tmp_path / "bundles")
    bundle_dir = bundles / "docstring_calls"
    examples = bundle_dir / "prompts" / "examples.yaml"
    examples.write_text(examples.read_text().replace("holds a room", "holds a zebra"))
    system = bundle_dir / "prompts" / "system.j2"
    system.write_text(system.read_text() + " Never mention a quokka.")
    tool = bundles / "docstring" / "tools" / "submit_result.pym"
    text = tool.read_text().replace("Submit the finished docstring", "Submit the wombat docstring")
    tool.write_text(text.replace("One line per parameter: what it is.", "One line per platypus."))

    bundle = load_bundle(bundle_dir / "bundle.yaml")
    try:
        vocabulary = bundle_vocabulary(bundle)
    finally:
        bundle.close()

    # an example's call (zebra) and task (restock), the system prompt (quokka), the tool's
    # description (wombat) and its argument's (platypus)
    assert {"zebra", "restock", "quokka", "wombat", "platypus"} <= vocabulary
    assert not {"endif", "elif", "dedent", "qualname"} & vocabulary  # Jinja tags are not prompt text
