"""The docstring_team bundle in embedded mode: an agent run as a tool and a versioned MCP server.

Every job's agent asks the summarizer agent (a pipeline tool of the bundle's registry file)
for a summary, reads the rules of the style-guide MCP server (routed to version 2.0.0 by the
constraint ``^2``), and submits. The summarizer's turns are decoded by the same engine as the
docstring agent's, in the same batches: the scripted engine sees both, every output checked
against its request's grammar. The ``model`` test runs the real small model and asserts only
what the grammar and the registry guarantee.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator
from typing import TYPE_CHECKING

import pytest
from runner_helpers import run_embedded
from scripted_docstrings import summary
from services import require_model_stack
from team_project import write_team_project

from structured_agents.bundles import Bundle, load_bundle
from structured_agents.engines import GenerationRequest, ScriptedEngine, by_run_id
from structured_agents.engines.scripted import ScriptTurn
from structured_agents.pym import PymRunner
from structured_agents.store import Store
from structured_agents.types import ToolCall

if TYPE_CHECKING:
    from pathlib import Path

    from structured_agents.engines.transformers_engine import TransformersEngine

SUMMARY = "It does what its name says."
OFFERED = {"summarize_code", "style_rules", "submit_result"}


@pytest.fixture
def team_bundle(pym_runner: PymRunner) -> Iterator[Bundle]:
    bundle = load_bundle("docstring_team", runner=pym_runner)
    yield bundle
    bundle.close()


def is_summarizer(key: Hashable) -> bool:
    """Whether a conversation is an inner run of the summarizer (``<run id>/summarizer-<hex>``)."""
    return "/summarizer-" in str(key)


def team_script(key: Hashable) -> list[ScriptTurn]:
    """The summarizer submits a summary; a docstring agent asks it, reads the rules, submits."""
    if is_summarizer(key):
        return [[ToolCall("submit_summary", {"summary": SUMMARY})]]
    return [
        [ToolCall("summarize_code", {})],
        [ToolCall("style_rules", {})],
        submit,
    ]


def submit(request: GenerationRequest) -> list[ToolCall]:
    """The docstring agent's last turn: a summary opening as its job asks."""
    return [ToolCall("submit_result", {"description": summary(request, "what the name says.", "Do ")})]


def test_every_job_asks_the_summarizer_agent_and_the_style_guide_v2(
    team_bundle: Bundle, store: Store, project: Path
) -> None:
    targets = team_bundle.discover_jobs(project)
    engine = ScriptedEngine(team_script, plugin=team_bundle.plugin, key=by_run_id, validate_grammar=True)

    summary = run_embedded(team_bundle, engine, store, project)

    assert (summary.succeeded, summary.failed) == (len(targets), 0)
    by_id = {job.job_id: job for job in targets}
    for run in store.list_runs(summary.batch_id):
        calls = store.tool_calls(run.id)
        assert [call.name for call in calls] == ["summarize_code", "style_rules", "submit_result"]
        assert not any(call.is_error for call in calls), [call.output for call in calls]
        assert calls[0].output == SUMMARY  # the summarizer agent's own submission
        rules = json.loads(calls[1].output)
        assert (rules["server_version"], rules["target"]) == ("2.0.0", by_id[run.id].qualname)
        assert calls[0].arguments == {} and calls[1].arguments == {}  # source, qualname: bound

    inner = [request for request in engine.requests if is_summarizer(by_run_id(request))]
    assert len(inner) == len(targets), "one summarizer run per job, on the docstring agent's engine"
    for request in inner:
        job = by_id[by_run_id(request).split("/")[0]]
        assert (
            "Summarize this code:" in request.prompt and str(job.inputs["source"]).strip() in request.prompt
        )
        assert [tool["function"]["name"] for tool in request.tools] == ["submit_summary"]
    assert max(summary.batch_sizes) > 1


def test_without_an_engine_the_agent_tool_is_refused_with_an_error_result(team_bundle: Bundle) -> None:
    import asyncio

    from structured_agents.context import RunContext

    async def call() -> tuple[bool, str]:
        await team_bundle.connect()
        try:
            context = RunContext("r", inputs={"source": "def f():\n    pass\n"})
            result = await team_bundle.tools.execute(ToolCall("summarize_code", {}, "c"), context)
            return result.is_error, result.output
        finally:
            await team_bundle.aclose()

    is_error, output = asyncio.run(call())
    assert (
        is_error and "agent summarizer runs on the engine of the calling agent, and there is none" in output
    )


@pytest.fixture(scope="module")
def model() -> Iterator[TransformersEngine]:
    require_model_stack()
    from structured_agents.engines.transformers_engine import TransformersEngine

    yield TransformersEngine(device="cpu", max_batch_size=8)


@pytest.mark.model
def test_the_real_model_drives_the_team_within_the_grammar(
    model: TransformersEngine, team_bundle: Bundle, store: Store, tmp_path: Path
) -> None:
    project = write_team_project(tmp_path / "team")
    summary = run_embedded(team_bundle, model, store, project, concurrency=4)

    runs = store.list_runs(summary.batch_id)
    assert runs and summary.ran == len(runs)
    for run in runs:
        turns = store.turns(run.id)
        assert 1 <= len(turns) <= team_bundle.manifest.max_turns
        calls = store.tool_calls(run.id)
        assert {call.name for call in calls} <= OFFERED  # the grammar allows only offered tools
        for call in calls:
            if call.name == "style_rules":  # no arguments to get wrong: always routed to ^2
                assert json.loads(call.output)["server_version"] == "2.0.0"
            if call.name == "summarize_code":  # the summarizer's one turn may only submit
                assert not call.is_error, call.output
