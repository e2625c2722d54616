"""Broken bundles fail to load with one clear message (file, line, field), and nothing is written."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import pytest
from bundle_helpers import SAMPLE_PROJECT, edit, line_of
from typer.testing import CliRunner

from structured_agents.bundles import BundleError, load_bundle
from structured_agents.cli.main import app
from structured_agents.pym import PymRunner

_SUBMIT = "  - name: submit_result\n    bind: [parameter_names]\n"
_GONE = "  - name: read_type_hints\n    bind: [source]\n"


def _error(bundle: Path, runner: PymRunner) -> str:
    with pytest.raises(BundleError) as caught:
        load_bundle(bundle, runner=runner)
    return str(caught.value)


def test_a_typo_names_the_line_and_the_field_meant(docstring_copy: Path, pym_runner: PymRunner) -> None:
    manifest = docstring_copy / "bundle.yaml"
    edit(manifest, "max_turns: 2", "max_turn: 2")

    message = _error(docstring_copy, pym_runner)

    assert message == (
        f"{manifest}:{line_of(manifest, 'max_turn:')}:1: max_turn: Extra inputs are not permitted "
        "(did you mean 'max_turns'?)"
    )


def test_a_missing_tool_names_the_manifest_line_and_the_tools_there_are(
    docstring_copy: Path, pym_runner: PymRunner
) -> None:
    manifest = docstring_copy / "bundle.yaml"
    edit(manifest, _SUBMIT, _SUBMIT + _GONE)  # a tool the bundle no longer has

    message = _error(docstring_copy, pym_runner)

    assert message.startswith(f"{manifest}:{line_of(manifest, 'read_type_hints')}:")
    assert "registry 'grail' has no tool 'read_type_hints' (available: submit_result)" in message


def test_a_broken_script_gives_its_own_diagnostics(docstring_copy: Path, pym_runner: PymRunner) -> None:
    script = docstring_copy / "tools" / "submit_result.pym"
    script.write_text(script.read_text() + "\nclass Oops:\n    pass\n")

    message = _error(docstring_copy, pym_runner)

    assert "tool 'submit_result' cannot be used" in message
    assert f"{script}:" in message and "PYM002" in message


def test_a_template_error_names_the_template_file_and_line(
    docstring_copy: Path, pym_runner: PymRunner
) -> None:
    template = docstring_copy / "prompts" / "user.j2"
    edit(template, "{{ qualname }}", "{{ qualnme }}")

    message = _error(docstring_copy, pym_runner)

    assert message == f"{template}:1: initial_context.user_template: template error: 'qualnme' is undefined"


def test_an_inline_template_error_names_the_manifest_line(
    docstring_copy: Path, pym_runner: PymRunner
) -> None:
    manifest = docstring_copy / "bundle.yaml"
    edit(
        manifest,
        "  user_template_file: prompts/user.j2\n",
        "  user_template: |\n    Document {{ qualname }}.\n    {% if source %}{{ source }}\n",
    )

    message = _error(docstring_copy, pym_runner)

    line = line_of(manifest, "{% if source %}")
    assert message.startswith(
        f"{manifest}:{line}: initial_context.user_template: template error: Unexpected end"
    )


def test_a_grammar_mode_the_plugin_cannot_build_names_the_mode_line(
    docstring_copy: Path, pym_runner: PymRunner
) -> None:
    manifest = docstring_copy / "bundle.yaml"
    edit(manifest, "plugin: function_gemma", "plugin: qwen")

    message = _error(docstring_copy, pym_runner)

    assert message.startswith(f"{manifest}:{line_of(manifest, 'mode: ebnf')}:")
    assert "model.grammar.mode: plugin 'qwen' cannot build a 'ebnf' grammar" in message
    assert "it supports ['structural_tag', 'json_schema']" in message


def test_an_unknown_grammar_mode_lists_the_modes(docstring_copy: Path, pym_runner: PymRunner) -> None:
    manifest = docstring_copy / "bundle.yaml"
    edit(manifest, "mode: ebnf", "mode: regex")

    message = _error(docstring_copy, pym_runner)

    assert message.startswith(f"{manifest}:{line_of(manifest, 'mode: regex')}:")
    assert "model.grammar.mode: Input should be 'ebnf', 'structural_tag' or 'json_schema'" in message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("plugin: function_gemma", "plugin: gemma", "model.plugin: unknown model plugin 'gemma'"),
        (
            "bind: [parameter_names]",
            "bind: [parameters_names]",
            "tool 'submit_result' has no input 'parameters_names' to bind "
            "(inputs: description, parameters, returns, yields, parameter_names)",
        ),
        (
            "  - type: grail\n    path: tools",
            "  - type: grail\n    path: tool",
            "registries.0.path: no such folder",
        ),
    ],
)
def test_other_mistakes_name_their_line(
    docstring_copy: Path, pym_runner: PymRunner, old: str, new: str, expected: str
) -> None:
    manifest = docstring_copy / "bundle.yaml"
    edit(manifest, old, new)

    message = _error(docstring_copy, pym_runner)

    assert message.startswith(f"{manifest}:") and expected in message


PROVIDER = '''"""How many Python files the project has."""

from grail import external


@external
async def list_files(pattern: str) -> list[str]:
    """List workspace files matching a glob pattern, or the files in a directory."""
    ...


len([name for name in await list_files(".") if name.endswith(".py")])
'''


@pytest.mark.parametrize(
    ("new", "needle", "expected"),
    [
        (
            "externals: [list_files, read_files]",
            "externals:",
            "externals: unknown host function 'read_files' (known: ",
        ),
        (  # the provider calls list_files, no longer granted
            "externals: [read_file]",
            "files: context/files.pym",
            "initial_context.context_providers.files: "
            "{provider}:7:1: PYM024 external 'list_files' is not granted by the host (granted: read_file)",
        ),
    ],
)
def test_externals_mistakes_name_their_line(
    docstring_copy: Path, pym_runner: PymRunner, new: str, needle: str, expected: str
) -> None:
    provider = docstring_copy / "context" / "files.pym"
    provider.parent.mkdir()
    provider.write_text(PROVIDER)
    manifest = docstring_copy / "bundle.yaml"
    edit(
        manifest,
        "  examples_file: prompts/examples.yaml\n",
        "  examples_file: prompts/examples.yaml\n  context_providers:\n    files: context/files.pym\n",
    )
    edit(manifest, _SUBMIT, _SUBMIT + "\nexternals: [list_files, read_file]\n")
    load_bundle(docstring_copy, runner=pym_runner).close()  # as granted, the bundle loads
    edit(manifest, "externals: [list_files, read_file]", new)

    message = _error(docstring_copy, pym_runner)

    assert message.startswith(f"{manifest}:{line_of(manifest, needle)}:")
    assert expected.format(provider=provider) in message


def test_an_example_calling_an_unknown_tool_names_the_examples_file_line(
    docstring_copy: Path, pym_runner: PymRunner
) -> None:
    examples = docstring_copy / "prompts" / "examples.yaml"
    edit(examples, "    - name: submit_result\n", "    - name: submit\n")

    message = _error(docstring_copy, pym_runner)

    assert message.startswith(f"{examples}:{line_of(examples, '- name: submit')}:")
    assert "example calls unknown tool 'submit'" in message


def test_unknown_bundles_list_the_known_ones(pym_runner: PymRunner) -> None:
    message = _error(Path("no-such-bundle"), pym_runner)

    assert message.startswith("no bundle named 'no-such-bundle' (known bundles: ") and "docstring" in message


def test_sa_run_with_a_broken_bundle_writes_nothing(docstring_copy: Path, tmp_path: Path) -> None:
    edit(docstring_copy / "bundle.yaml", _SUBMIT, _SUBMIT + _GONE)
    project = tmp_path / "project"
    shutil.copytree(SAMPLE_PROJECT, project)
    database = tmp_path / "sa.db"

    result = CliRunner().invoke(
        app, ["run", str(docstring_copy), str(project), "--db", f"sqlite:///{database}"]
    )

    assert result.exit_code == 2
    assert "sa run:" in result.output and "read_type_hints" in result.output
    assert not database.exists()
    assert not filecmp.dircmp(SAMPLE_PROJECT, project).diff_files
