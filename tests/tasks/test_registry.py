"""Tasks are plugins: the built-ins by name, and a third task that is one module plus a bundle.

``HeaderTask`` (below) is that module: it finds the Python files whose first line is not a
comment and proposes the submitted header as their first line. Registered, it runs through
the embedded runner with its bundle like the shipped tasks, and nothing else had to change.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from structured_agents.bundles import load_bundle
from structured_agents.engines import ScriptedEngine, by_run_id
from structured_agents.jobs import JobSpec, iter_source_files, job_id, read_source
from structured_agents.kernel import RunResult
from structured_agents.patches import apply_patches, file_change
from structured_agents.plugins import get_plugin
from structured_agents.runner import EmbeddedRunner
from structured_agents.store import SqlStore
from structured_agents.tasks import Outcome, TaskError, available_tasks, get_task, register_task
from structured_agents.tasks.base import read_target, submission
from structured_agents.tasks.protocol import Guidance
from structured_agents.types import ToolCall

HERE = Path(__file__).resolve().parent


class HeaderTask:
    """A header comment for every Python file whose first line is not a comment."""

    name = "header"
    option_names: frozenset[str] = frozenset()

    def discover(
        self, root: Path, *, overwrite: bool = False, options: Mapping[str, Any] | None = None
    ) -> list[JobSpec]:
        jobs = []
        for relative in iter_source_files(root):
            source = read_source(root / relative)
            if source is None or (source.text.startswith("#") and not overwrite):
                continue
            path = relative.as_posix()
            jobs.append(
                JobSpec(
                    job_id("header", path, "<module>", source.text),
                    "header",
                    path,
                    "<module>",
                    source.hash,
                    {"path": path},
                )
            )
        return jobs

    def sample_inputs(self) -> dict[str, Any]:
        return {"path": "pkg/module.py"}

    def guidance(self, termination: str, fixed_texts: Sequence[str], shown_texts: Sequence[str]) -> Guidance:
        return Guidance()

    def outcome(self, job: JobSpec, result: RunResult, root: Path, options: Mapping[str, Any]) -> Outcome:
        header = submission(result).strip()
        if "\n" in header:
            raise TaskError("a header is one line")
        original = read_target(job, root)
        return Outcome(True, file_change(job.path, original, f"# {header}\n{original}"), summary=header)


@pytest.fixture
def header_task() -> Iterator[None]:
    register_task("header", HeaderTask, replace=True)
    sys.path.insert(0, str(HERE))
    yield
    sys.path.remove(str(HERE))


def test_the_built_in_tasks_are_there_and_unknown_names_list_them() -> None:
    assert {"docstring", "lint"} <= set(available_tasks())
    assert get_task("DocString").name == "docstring"
    with pytest.raises(TaskError, match=r"unknown task 'rename'; known tasks: .*docstring.*lint"):
        get_task("rename")
    with pytest.raises(ValueError, match="already registered"):
        register_task("lint", HeaderTask)


def test_a_third_task_is_one_module_plus_a_bundle(header_task: None, tmp_path: Path) -> None:
    root = tmp_path / "code"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    (root / "pkg" / "b.py").write_text("# has one\ny = 2\n")
    bundle = load_bundle(HERE / "header_bundle")
    plugin = get_plugin("function_gemma")
    engine = ScriptedEngine(
        lambda _key: [[ToolCall("submit_result", {"header": "Holds x."})]], plugin=plugin, key=by_run_id
    )
    try:
        jobs = bundle.discover_jobs(root)
        assert [job.path for job in jobs] == ["pkg/a.py"]
        with SqlStore(f"sqlite:///{tmp_path / 'sa.db'}") as store:
            summary = asyncio.run(EmbeddedRunner(bundle, engine, store).run(root, jobs))
            assert (summary.succeeded, summary.failed) == (1, 0)
            [result] = store.results(summary.batch_id)
            assert result.summary == "Holds x." and (root / "pkg" / "a.py").read_text() == "x = 1\n"
            apply_patches(root, [result])
    finally:
        bundle.close()
    assert (root / "pkg" / "a.py").read_text() == "# Holds x.\nx = 1\n"


def test_a_bundle_naming_an_unknown_task_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    text = (HERE / "header_bundle" / "bundle.yaml").read_text().replace("task: header", "task: rename")
    (tmp_path / "bundle.yaml").write_text(text)
    with pytest.raises(Exception, match="unknown task 'rename'; known tasks"):
        load_bundle(tmp_path)
