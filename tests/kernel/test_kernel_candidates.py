"""Several candidates per turn (``SamplingParams.n``) and per-run tool views.

The scripted engine decodes ``n`` candidates of a turn, one per seed; the kernel keeps the one
``KernelConfig.choose`` picks (by default the first that parses into calls), records its text,
and counts every candidate's tokens. ``KernelConfig.tool_view`` shows each run its own tools,
in the prompt and in the grammar alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kernel_doubles import LinePlugin
from test_kernel_loop import TASK, make_kernel, make_tools

from structured_agents.context import RunContext
from structured_agents.engines import BatchInfo, FunctionEngine
from structured_agents.errors import ConfigError, KernelError
from structured_agents.kernel import AgentKernel, GenerationRequest, KernelConfig, SamplingParams
from structured_agents.kernel.config import ParsedTurn
from structured_agents.kernel.engine import Candidate, Completion, Review
from structured_agents.observer import ModelResponse, RecordingObserver
from structured_agents.types import ToolCall, ToolResult, ToolSchema

pytestmark = pytest.mark.anyio


def _by_seed(request: GenerationRequest) -> list[ToolCall] | str:
    """Candidate ``seed % 3``: a summary naming it, or (for 1) no call at all."""
    which = (request.sampling.seed or 0) % 3
    if which == 1:
        return "just text"
    return [ToolCall("submit_result", {"summary": f"candidate {which}"})]


async def test_the_chooser_keeps_one_candidate_and_every_token_counts() -> None:
    seen: list[Sequence[ParsedTurn | None]] = []

    def longest(
        context: RunContext, parsed: Sequence[ParsedTurn | None], margins: Sequence[float | None]
    ) -> int:
        seen.append(parsed)
        assert context.inputs == {"job": 7}
        assert list(margins) == [None, None, None]  # no review asked: nothing measured
        scores = [len(p[1][0].arguments["summary"]) if p and p[1] else -1 for p in parsed]
        return scores.index(max(scores)) if parsed[2] is None else 2

    recorder = RecordingObserver()
    sampling = SamplingParams(n=3, temperature=0.8, seed=3)  # seeds 3, 4, 5: candidates 0, 1, 2
    kernel, engine = make_kernel([_by_seed], observers=(recorder,), sampling=sampling, choose=longest)
    with kernel:
        result = await kernel.run(TASK, run_id="r1", inputs={"job": 7})
    assert result.final_output == "submitted: candidate 2"
    [candidates] = seen
    assert [p is None or p[1] == [] for p in candidates] == [False, True, False]
    [response] = recorder.of_type(ModelResponse)
    assert "candidate 2" in response.text and response.usage.completion_tokens > len(response.text) // 4
    assert engine.batch_sizes == [1]  # one request, three candidates


async def test_without_a_chooser_the_first_candidate_that_calls_a_tool_is_kept() -> None:
    sampling = SamplingParams(n=3, temperature=0.8, seed=4)  # seeds 4, 5, 6: text, 2, 0
    kernel, _ = make_kernel([_by_seed], sampling=sampling)
    with kernel:
        result = await kernel.run(TASK, run_id="r1")
    assert result.final_output == "submitted: candidate 2"


async def test_a_chooser_out_of_range_is_a_kernel_error() -> None:
    sampling = SamplingParams(n=2, temperature=0.8)
    kernel, _ = make_kernel([_by_seed], sampling=sampling, choose=lambda _inputs, _parsed, _margins: 5)
    with kernel, pytest.raises(KernelError, match="picked candidate 5 of 2"):
        await kernel.run(TASK, run_id="r1")


def test_sampling_refuses_n_out_of_range_and_blank_bad_words() -> None:
    with pytest.raises(ConfigError, match=r"n must be in \[1, 16\], got 0"):
        SamplingParams(n=0)
    with pytest.raises(ConfigError, match="bad_words must be non-blank"):
        SamplingParams(bad_words=("ok", " "))


async def test_a_tool_view_narrows_what_each_run_sees() -> None:
    def only_the_jobs_fields(
        tools: Sequence[ToolSchema], inputs: Mapping[str, Any], results: Sequence[ToolResult] = ()
    ) -> list[ToolSchema]:
        narrowed = []
        for tool in tools:
            if tool.name == "submit_result":
                properties = {name: {"type": "string"} for name in inputs["fields"]}
                tool = ToolSchema(tool.name, tool.description, {"type": "object", "properties": properties})
            narrowed.append(tool)
        return narrowed

    kernel, engine = make_kernel(
        [[ToolCall("submit_result", {"colour": "red"})]], tool_view=only_the_jobs_fields, max_turns=1
    )
    with kernel:
        await kernel.run(TASK, run_id="r1", inputs={"fields": ["colour"]})
    [request] = engine.requests
    assert request.grammar is not None
    [submit] = [t for t in request.tools if t["function"]["name"] == "submit_result"]
    assert list(submit["function"]["parameters"]["properties"]) == ["colour"]


async def test_a_tool_view_sees_the_runs_tool_results_so_far() -> None:
    """A tool the run already used is not offered again (a lint job decides one fix a turn)."""
    seen: list[list[str]] = []

    def unused_tools(
        tools: Sequence[ToolSchema], inputs: Mapping[str, Any], results: Sequence[ToolResult] = ()
    ) -> list[ToolSchema]:
        seen.append([result.name for result in results])
        return [tool for tool in tools if tool.name not in {result.name for result in results}]

    script = [[ToolCall("read", {"path": "a.py"})], [ToolCall("submit_result", {"summary": "done"})]]
    kernel, engine = make_kernel(script, tool_view=unused_tools)
    with kernel:
        await kernel.run(TASK, run_id="r1")
    first, second = ([t["function"]["name"] for t in request.tools] for request in engine.requests)
    assert "read" in first and "read" not in second and "submit_result" in second
    assert seen[0] == [] and seen[-1] == ["read"]


async def test_a_jobs_bad_words_reach_every_request_except_those_the_call_syntax_needs() -> None:
    def unused_words(context: RunContext) -> list[str]:
        own = context.inputs["own"]
        return [word for word in ("zebra", "Zebra", "summary", "CALL", "submit") if word not in own]

    kernel, engine = make_kernel(
        [[ToolCall("submit_result", {"summary": "fine"})]], job_bad_words=unused_words, max_turns=1
    )
    with kernel:
        await kernel.run(TASK, run_id="r1", inputs={"own": ["Zebra"]})
    [request] = engine.requests
    # "CALL submit_result {"summary": ""}" is how the line plugin writes a call: those stay writable
    # where it writes them; after a space or a comma they are banned unless the syntax writes
    # them there too ("CALL submit_result": " submit" stays writable)
    assert request.sampling.bad_words == ("zebra", " summary", ",summary", " CALL", ",CALL", ",submit")


async def test_a_review_is_asked_for_each_turn_and_the_kept_candidate_s_margin_is_the_confidence() -> None:
    asked: list[GenerationRequest] = []

    def reviewed(request: GenerationRequest, info: BatchInfo) -> Completion:
        asked.append(request)
        call = LinePlugin().render_tool_calls([ToolCall("submit_result", {"summary": "done"})], ())
        scores = (-5.0, -2.0, -9.0)
        candidates = tuple(Candidate(call, "stop", 3, review=score) for score in scores)
        return Completion(request.request_id, call, candidates=candidates, review=-5.0, review_baseline=-4.0)

    def best_margin(
        _context: RunContext, _parsed: Sequence[ParsedTurn | None], margins: Sequence[float | None]
    ) -> int:
        assert list(margins) == [-1.0, 2.0, -5.0]
        return 1

    plugin = LinePlugin()
    review = Review("\n    return 1\n", empty='"""')
    kernel = AgentKernel(
        plugin=plugin,
        engine=FunctionEngine(reviewed),
        tools=make_tools(),
        config=KernelConfig(
            sampling=SamplingParams(n=3, temperature=0.5), choose=best_margin, review=lambda _ctx: review
        ),
    )
    with kernel:
        result = await kernel.run(TASK, run_id="r1")
    assert [request.review for request in asked] == [review]
    assert result.confidence == 2.0  # the kept candidate's score over the baseline
