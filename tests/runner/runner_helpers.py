"""Helpers of the runner tests: the sample project, scripted "models" for both bundles, a run."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

from structured_agents.bundles import Bundle
from structured_agents.engines import GenerationRequest, ScriptedEngine, by_run_id
from structured_agents.observer.protocol import Observer
from structured_agents.runner import EmbeddedRunner, RunSummary
from structured_agents.store import Store
from structured_agents.types import ToolCall

SAMPLE_PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"
_TASK = re.compile(r"Write the docstring of \w+ (\S+) in (\S+)\.")


def copy_sample_project(destination: Path) -> Path:
    """A fresh copy of the sample project (tests write to it)."""
    shutil.copytree(SAMPLE_PROJECT, destination)
    return destination


def target_of(request: GenerationRequest) -> tuple[str, str]:
    """(qualname, path) of the job a docstring request is about (the last task in its prompt)."""
    qualname, path = _TASK.findall(request.prompt)[-1]
    return qualname, path


def docstring_for(qualname: str) -> str:
    """The docstring the scripted model writes for ``qualname``."""
    return f"Summary of {qualname}.\n\nArgs:\n    value: What it takes."


def docstring_kept(qualname: str, parameters: Sequence[str]) -> str:
    """What ``submit_result`` keeps of :func:`docstring_for`: its ``Args`` section describes
    ``value``, so it goes unless the target takes ``value``."""
    return docstring_for(qualname) if "value" in parameters else f"Summary of {qualname}."


def submit_docstring(request: GenerationRequest) -> list[ToolCall]:
    """A turn that submits a docstring for the request's target."""
    qualname, _ = target_of(request)
    return [ToolCall("submit_result", {"docstring": docstring_for(qualname)})]


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
