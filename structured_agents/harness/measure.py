"""Measuring one model turn of many jobs per bundle, with the bundle's grammar and without.

For each bundle the harness builds the first turn of up to ``prompts`` of its jobs exactly as a
run would (prompt files, worked examples, context providers, then the kernel's request), decodes
them all at once in batches, once per grammar setting, and checks every output: it must parse
with the bundle's plugin into at least one call, each to a tool the bundle offers, with
arguments that its JSON schema accepts. Nothing runs the tools and nothing is written.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonschema
from jsonschema.exceptions import best_match

from structured_agents.bundles import Bundle
from structured_agents.engines.batching import BatchingEngine
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.types import ToolCall, ToolSchema

__all__ = ["CaseReport", "OutputCheck", "check_output", "percentile", "run_harness"]

Verdict = Literal["valid", "invalid_call", "no_call", "parse_failure", "cut_off"]
"""What one output was: valid calls only, a call the tools reject, no call, unparsable, or (under
a grammar) cut off by ``max_new_tokens`` before its call ended: a grammar fixes the form, not the
length."""


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """The verdict on one output, and why when it is not ``valid``."""

    verdict: Verdict
    detail: str = ""


def check_output(
    plugin: ModelPlugin, tools: Mapping[str, ToolSchema], completion: Completion, *, constrained: bool
) -> OutputCheck:
    """Whether ``completion`` is one or more valid calls of ``tools``, as ``plugin`` reads it.

    An output decoded under a grammar (``constrained``) that the token limit ended is a prefix
    of a valid one: when it does not parse, or holds no call yet, it was ``cut_off``. Without
    a grammar nothing says the text was on its way to a call, so it counts as what it is.
    """
    cut = constrained and completion.finish_reason == "length"
    try:
        _, calls = plugin.parse_response(completion.text, list(tools.values()), completion.tool_calls_raw)
    except Exception as exc:
        return OutputCheck("cut_off" if cut else "parse_failure", f"{type(exc).__name__}: {exc}")
    if not calls:
        return OutputCheck("cut_off" if cut else "no_call", completion.text[:120])
    for call in calls:
        problem = _call_problem(call, tools)
        if problem is not None:
            return OutputCheck("invalid_call", problem)
    return OutputCheck("valid")


def _call_problem(call: ToolCall, tools: Mapping[str, ToolSchema]) -> str | None:
    schema = tools.get(call.name)
    if schema is None:
        return f"{call.name!r} is not a tool of the bundle"
    error = best_match(jsonschema.Draft202012Validator(schema.parameters).iter_errors(call.arguments))
    return None if error is None else f"{call.name}: {error.message}"


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of ``values``; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class CaseReport:
    """One bundle, grammar on or off: what its outputs were and how fast they came."""

    bundle: str
    grammar: str | None
    """The grammar kind (``ebnf``, ``structural_tag``, ``json_schema``), None when off."""
    checks: tuple[OutputCheck, ...]
    completion_tokens: int
    wall_s: float
    """Time from submitting the case's requests to the last completion."""
    latencies_s: tuple[float, ...]
    """Per output: time from submission to its completion (its batch's end)."""

    def count(self, verdict: Verdict) -> int:
        """Outputs with ``verdict``."""
        return sum(check.verdict == verdict for check in self.checks)

    @property
    def prompts(self) -> int:
        """Outputs checked."""
        return len(self.checks)

    @property
    def valid_rate(self) -> float:
        """Share of outputs that were valid calls (0.0 for no outputs)."""
        return self.count("valid") / self.prompts if self.checks else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second over the whole case."""
        return self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data, with the failures' reasons."""
        return {
            "bundle": self.bundle,
            "grammar": self.grammar,
            "prompts": self.prompts,
            "valid_calls": self.count("valid"),
            "valid_call_rate": round(self.valid_rate, 4),
            "parse_failures": self.count("parse_failure"),
            "no_call": self.count("no_call"),
            "invalid_calls": self.count("invalid_call"),
            "cut_off": self.count("cut_off"),
            "completion_tokens": self.completion_tokens,
            "tokens_per_s": round(self.tokens_per_s, 2),
            "latency_s": {f"p{q}": round(percentile(self.latencies_s, q), 4) for q in (50, 90, 99)},
            "failures": [
                {"verdict": check.verdict, "detail": check.detail}
                for check in self.checks
                if check.verdict != "valid"
            ],
        }


async def first_turns(bundle: Bundle, engine: Engine, root: Path, prompts: int) -> list[GenerationRequest]:
    """The first-turn requests of the first ``prompts`` jobs of ``bundle`` over ``root``."""
    jobs = bundle.discover_jobs(root, overwrite=True)[:prompts]
    kernel = bundle.kernel(engine)
    requests: list[GenerationRequest] = []
    try:
        for job in jobs:
            messages = await bundle.initial_messages(job.inputs, root)
            state = await kernel.start(messages, run_id=job.job_id, workspace=root, inputs=job.inputs)
            requests.append(await kernel.build_request(state))
    finally:
        kernel.close()
    return requests


def measure(
    bundle: Bundle,
    engine: Engine,
    requests: Sequence[GenerationRequest],
    *,
    grammar: bool,
    batch_size: int = 8,
) -> CaseReport:
    """Decode ``requests`` (without their grammars unless ``grammar``) and check each output.

    Each request is decoded once (``n = 1``: a bundle's candidates are more samples of the same
    turn, which cost time and change no rate measured here). The requests go in all at once
    through a :class:`BatchingEngine` of ``batch_size``, as concurrent runs would: each one's
    latency is the time until its own batch was decoded.
    """
    batch = [
        dataclasses.replace(
            r, grammar=r.grammar if grammar else None, sampling=dataclasses.replace(r.sampling, n=1)
        )
        for r in requests
    ]
    finished: list[float] = [0.0] * len(batch)
    with BatchingEngine(engine, max_batch_size=batch_size) as batching:
        started = time.perf_counter()
        streams = [batching.submit(request) for request in batch]
        for index, stream in enumerate(streams):
            stream.add_done_callback(_record_time(finished, index))
        completions = [stream.result() for stream in streams]
    latencies = tuple(max(done - started, 0.0) for done in finished)
    tools = {schema.name: schema for schema in bundle.tools.tools()}
    kind = next((r.grammar.kind for r in batch if r.grammar is not None), None)
    return CaseReport(
        bundle=bundle.manifest.name,
        grammar=kind,
        checks=tuple(check_output(bundle.plugin, tools, c, constrained=grammar) for c in completions),
        completion_tokens=sum(c.usage.completion_tokens for c in completions),
        wall_s=max(latencies, default=0.0),
        latencies_s=latencies,
    )


def _record_time(times: list[float], index: int) -> Callable[[GenerationStream], None]:
    def record(_: GenerationStream) -> None:
        times[index] = time.perf_counter()

    return record


async def run_harness(
    bundles: Sequence[Bundle],
    engine: Engine,
    root: Path,
    *,
    prompts: int = 8,
    grammar: Sequence[bool] = (True, False),
    batch_size: int = 8,
    progress: Callable[[str], object] | None = None,
) -> list[CaseReport]:
    """For each bundle and grammar setting, one report over the first ``prompts`` jobs under ``root``,
    decoded in batches of ``batch_size``; ``progress`` is told as each case starts and ends (a
    case of the small model on a CPU takes minutes).

    Bundles with MCP servers must be connected (``await bundle.connect()``) first.
    """
    say = progress or (lambda _line: None)
    reports: list[CaseReport] = []
    for bundle in bundles:
        requests = await first_turns(bundle, engine, root, prompts)
        for on in grammar:
            case = f"{bundle.manifest.name}, grammar {'on' if on else 'off'}"
            say(f"{case}: decoding {len(requests)} prompt(s)...")
            started = time.monotonic()
            reports.append(measure(bundle, engine, requests, grammar=on, batch_size=batch_size))
            say(f"{case}: done in {time.monotonic() - started:.1f} s")
    return reports
