"""The tool-call harness over the shipped bundles, with scripted outputs checked by XGrammar.

The scripted model writes a valid submission when the request carries a grammar (validated
against it, so a constrained model could write it) and, without one, whatever the test needs:
prose, an unknown tool, a wrong argument, a broken call, or a call cut off by the token limit.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_helpers import submit_docstring
from typer.testing import CliRunner

from structured_agents.bundles import Bundle
from structured_agents.cli.main import app
from structured_agents.engines import Engine, GenerationRequest, ScriptedEngine
from structured_agents.engines.factory import register_engine
from structured_agents.harness import CaseReport, render_table, run_harness
from structured_agents.harness.measure import percentile
from structured_agents.plugins.registry import get_plugin
from structured_agents.settings import EngineSettings
from structured_agents.types import ToolCall

pytestmark = pytest.mark.anyio
ENGINE = "harness-tests"
UNCONSTRAINED = [
    "The function adds numbers.",  # prose
    "<start_function_call>call:delete_file{path:<escape>x<escape>}<end_function_call>",  # unknown tool
    "<start_function_call>call:submit_result{text:<escape>x<escape>}<end_function_call>",  # wrong key
    "<start_function_call>call:submit_result{description:<escape>never closed",  # broken, not cut off
]

RAMBLING = [ToolCall("submit_result", {"description": "Return " + "word " * 400})]
"""A submission longer than the docstring bundle's token budget: always cut off."""


def engine() -> ScriptedEngine:
    """Valid submissions under a grammar; without one, the unconstrained outputs in turn."""
    unconstrained = itertools.cycle(UNCONSTRAINED)
    outputs: dict[str, str] = {}  # the bundle asks for several candidates: all alike

    def grammar_or_not(request: GenerationRequest) -> str | list[ToolCall]:
        if request.grammar is not None:
            return submit_docstring(request)
        if request.request_id not in outputs:
            outputs[request.request_id] = next(unconstrained)
        return outputs[request.request_id]

    return ScriptedEngine(
        lambda _key: [grammar_or_not],
        plugin=get_plugin("function_gemma"),
        key=lambda r: (r.request_id, r.grammar is None),
        validate_grammar=True,
    )


async def test_grammar_on_gives_valid_calls_and_off_shows_each_failure_kind(
    docstring_bundle: Bundle, project: Path
) -> None:
    scripted = engine()
    said: list[str] = []
    on, off = await run_harness(
        [docstring_bundle], scripted, project, prompts=12, batch_size=4, progress=said.append
    )
    assert said[0] == "docstring_calls, grammar on: decoding 12 prompt(s)..."
    assert said[1].startswith("docstring_calls, grammar on: done in ") and len(said) == 4

    assert (on.bundle, on.grammar, on.prompts, on.valid_rate) == ("docstring_calls", "ebnf", 12, 1.0)
    assert (off.grammar, off.prompts, off.count("valid")) == (None, 12, 0)
    assert [off.count(v) for v in ("no_call", "invalid_call", "parse_failure")] == [3, 6, 3]
    details = [check.detail for check in off.checks]
    assert details[:4] == [
        UNCONSTRAINED[0],
        "'delete_file' is not a tool of the bundle",
        "submit_result: 'description' is a required property",
        "ParseError: FunctionGemma call: unterminated <escape> string at offset 52 "
        "(near '_result{description:<escape>never closed')",
    ]
    assert off.to_dict()["failures"] and on.to_dict()["failures"] == []
    assert on.completion_tokens > 0 and on.tokens_per_s > 0 and len(on.latencies_s) == 12
    assert sum(scripted.batch_sizes) == 24 and max(scripted.batch_sizes) == 4  # batches of at most 4
    assert on.latencies_s[0] <= on.latencies_s[-1] == on.wall_s  # the last batch ends last


async def test_a_call_cut_off_by_the_token_limit_is_counted_apart(
    docstring_bundle: Bundle, project: Path
) -> None:
    cut = ScriptedEngine([RAMBLING, RAMBLING], plugin=get_plugin("function_gemma"), validate_grammar=True)

    on, off = await run_harness([docstring_bundle], cut, project, prompts=1)

    assert (on.count("cut_off"), off.count("parse_failure"), on.valid_rate) == (1, 1, 0.0)
    assert on.to_dict()["cut_off"] == 1


def test_percentiles_and_the_table() -> None:
    assert [percentile([0.3, 0.1, 0.2], q) for q in (50, 90, 99)] == [0.2, 0.3, 0.3]
    assert percentile([], 50) == 0.0
    report = CaseReport("docstring", "ebnf", (), 0, 0.0, ())
    assert (report.valid_rate, report.tokens_per_s) == (0.0, 0.0)
    assert render_table([report]).row_count == 1


@pytest.fixture
def scripted_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def factory(_settings: EngineSettings) -> Engine:
        return engine()

    def rambling(_settings: EngineSettings) -> Engine:  # every submission runs out of tokens
        long = [ToolCall("submit_result", {"description": "Return " + "word " * 400})]
        return ScriptedEngine(
            lambda _key: [long], plugin=get_plugin("function_gemma"), key=lambda r: r.request_id
        )

    register_engine(ENGINE, factory, replace=True)
    register_engine(f"{ENGINE}-rambling", rambling, replace=True)
    monkeypatch.setenv("SA_ENGINE__NAME", ENGINE)
    yield


@pytest.mark.usefixtures("scripted_engine")
def test_the_command_prints_a_table_writes_json_and_fails_only_on_invalid_constrained_output(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "harness.json"
    cli = CliRunner()

    done = cli.invoke(app, ["harness", str(project), "-b", "docstring_calls", "-n", "4", "--json", str(out)])

    assert done.exit_code == 0, done.output
    assert "tool-call harness" in done.output and "docstring_calls" in done.output
    data = json.loads(out.read_text())
    assert data["engine"] == ENGINE
    assert [(r["grammar"], r["prompts"], r["valid_calls"]) for r in data["reports"]] == [
        ("ebnf", 4, 4),
        (None, 4, 0),
    ]
    assert set(data["reports"][0]["latency_s"]) == {"p50", "p90", "p99"}

    stdout = cli.invoke(
        app, ["harness", str(project), "-b", "docstring_calls", "-n", "2", "--grammar", "off", "--json", "-"]
    )
    assert stdout.exit_code == 0 and json.loads(stdout.stdout)["reports"][0]["grammar"] is None

    cut = cli.invoke(app, ["harness", str(project), "-b", "docstring_calls", "-n", "2", "--grammar", "on"],
                     env={"SA_ENGINE__NAME": f"{ENGINE}-rambling"})  # fmt: skip
    assert cut.exit_code == 1, cut.output  # constrained outputs that are not valid calls

    missing = cli.invoke(app, ["harness", str(project), "-b", "no-such-bundle"])
    assert missing.exit_code == 2 and "no-such-bundle" in missing.output
