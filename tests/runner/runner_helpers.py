"""Helpers of the runner tests: the sample project, scripted "models" for the shipped bundles, a run."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

from scripted_docstrings import submit_tool, summary

from structured_agents.bundles import Bundle
from structured_agents.engines import GenerationRequest, ScriptedEngine, by_run_id
from structured_agents.observer.protocol import Observer
from structured_agents.plugins.python_docstring import PythonDocstringPlugin
from structured_agents.runner import EmbeddedRunner, RunSummary
from structured_agents.store import Store
from structured_agents.tasks.docstring import docstring_text
from structured_agents.tasks.docstring.grounding import opening
from structured_agents.types import ToolCall, ToolSchema

SAMPLE_PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"
_TASK = re.compile(r"Write the docstring of \w+ (\S+) in (\S+)\.")
_DOCUMENTED = re.compile(r"^# (\S+), documented:$", re.MULTILINE)
"""A target as the ``docstring`` bundle shows it: its path as a comment, then its definition."""


def copy_sample_project(destination: Path) -> Path:
    """A fresh copy of the sample project (tests write to it)."""
    shutil.copytree(SAMPLE_PROJECT, destination)
    return destination


def target_of(request: GenerationRequest) -> tuple[str, str]:
    """(qualname, path) of the job a ``docstring_calls`` request is about (the last task in
    its prompt)."""
    qualname, path = _TASK.findall(request.prompt)[-1]
    return qualname, path


def _spoken(qualname: str) -> str:
    """A qualified name as prose may say it (``<locals>`` is markup the grammar keeps out)."""
    return qualname.replace("<locals>.", "")


def docstring_parts(request: GenerationRequest) -> dict[str, object]:
    """The parts the scripted model submits for the request's target, shaped as the job's own
    ``submit_result`` asks (its parameters and what it gives back, from the request's tools)."""
    return _parts(request, _spoken(target_of(request)[0]))


def _parts(request: GenerationRequest, qualname: str) -> dict[str, object]:
    properties = submit_tool(request)["parameters"]["properties"]
    parts: dict[str, object] = {"description": summary(request, f"what {qualname} makes.", "Summary of ")}
    if "parameters" in properties:
        parts["parameters"] = {name: f"What {name} is." for name in properties["parameters"]["properties"]}
    for gives in ("returns", "yields"):
        if gives in properties:
            parts[gives] = f"What {qualname} {gives}."
    return parts


def expected_docstring(inputs: Mapping[str, Any]) -> str:
    """The docstring :func:`submit_docstring` leads to for a job with ``inputs``."""
    names = [str(name).lstrip("*") for name in inputs.get("parameter_names") or ()]
    qualname = _spoken(str(inputs["qualname"]))
    parts: dict[str, object] = {"description": f"{opening(inputs) or 'Summary of '}what {qualname} makes."}
    if names and inputs.get("style") != "plain":
        parts["parameters"] = {name: f"What {name} is." for name in names}
    gives = inputs.get("gives")
    if gives and inputs.get("style") != "plain":
        parts[str(gives)] = f"What {qualname} {gives}."
    return docstring_text(parts, inputs)


def submit_docstring(request: GenerationRequest) -> list[ToolCall]:
    """A turn that submits a docstring for the request's target (``docstring_calls``)."""
    return [ToolCall("submit_result", docstring_parts(request))]


def write_docstring(request: GenerationRequest) -> str:
    """A turn of the ``docstring`` bundle's model (python_docstring: it writes the docstring of
    the code its prompt ends on): the parts :func:`submit_docstring` submits, the target named
    as the prompt's last ``# QUALNAME, documented:`` comment does, written in the form of the
    job's own ``submit_result``."""
    [*_, qualname] = _DOCUMENTED.findall(request.prompt)
    name = _spoken(qualname).replace(".", " ")  # a summary is one sentence: no period inside
    tool = submit_tool(request)
    schema = ToolSchema(tool["name"], tool.get("description", ""), tool["parameters"])
    return PythonDocstringPlugin().render_tool_calls(
        [ToolCall("submit_result", _parts(request, name))], [schema]
    )


def scripted(bundle: Bundle, *turns: Callable[[GenerationRequest], list[ToolCall]]) -> ScriptedEngine:
    """A grammar-checked engine playing ``turns`` in every run (default: submit a docstring)."""

    def script(_key: Hashable) -> list[Callable[[GenerationRequest], list[ToolCall]]]:
        return list(turns or (submit_docstring,))

    return ScriptedEngine(script, plugin=bundle.plugin, key=by_run_id, validate_grammar=True)


def run_embedded(
    bundle: Bundle,
    engine: ScriptedEngine,
    store: Store,
    root: Path,
    *,
    concurrency: int = 8,
    overwrite: bool = False,
    observers: tuple[Observer, ...] = (),
) -> RunSummary:
    """Discover the bundle's jobs under ``root`` and run them all."""
    runner = EmbeddedRunner(bundle, engine, store, concurrency=concurrency, observers=observers)
    jobs = bundle.discover_jobs(root, overwrite=overwrite)
    return asyncio.run(runner.run(root, jobs, overwrite=overwrite))
