"""Grail tools: a folder of ``.pym`` scripts as a registry, and the backend that runs them.

:class:`GrailRegistry` scans a folder (recursively, skipping hidden folders) once, on first
use or on :meth:`~GrailRegistry.refresh`. Each valid script is a ``ToolSchema(backend="grail")``
named after its file; every problem is kept in ``problems`` as ``file:line:col`` diagnostics,
and resolving a broken tool raises :class:`~structured_agents.pym.PymCheckError` with them.

:class:`GrailBackend` runs the script of a call in the sandbox (see
:mod:`structured_agents.pym.runner`) under the tool's limits (a preset or overrides per tool;
``timeout_s`` bounds the whole run, host functions included) and returns the JSON of its
result; every failure, typed error included, is a ``ToolResult(is_error=True)`` whose output
starts with the error's type.
It is also the :class:`~structured_agents.tools.composite.ContextProviderRunner` of a
composite backend (:meth:`GrailBackend.run_script`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from structured_agents.context import RunContext
from structured_agents.errors import StructuredAgentsError
from structured_agents.pym.cache import PymCache
from structured_agents.pym.errors import Diagnostic, PymCheckError
from structured_agents.pym.externals import ExternalRegistry, check_grants
from structured_agents.pym.host_functions import DEFAULT_GRANTS, default_externals
from structured_agents.pym.limits import LimitsPolicy, LimitsSpec
from structured_agents.pym.loader import ScriptLoader
from structured_agents.pym.model import PymScript
from structured_agents.pym.runner import PymResult, PymRunner
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["GrailBackend", "GrailRegistry"]

logger = logging.getLogger(__name__)


class GrailRegistry:
    """The ``.pym`` scripts of a folder as tools; see the module docstring."""

    def __init__(
        self,
        root: Path | str,
        *,
        name: str = "grail",
        loader: ScriptLoader | None = None,
        externals: ExternalRegistry | None = None,
        grants: Collection[str] = DEFAULT_GRANTS,
    ) -> None:
        self.name = name
        self.root = Path(root)
        self.loader = loader if loader is not None else ScriptLoader(PymCache())
        self.externals = externals if externals is not None else default_externals()
        self.grants = frozenset(grants)
        self.problems: list[Diagnostic] = []
        """Every problem of the last scan, in file order."""
        self._scripts: dict[str, PymScript] = {}
        self._broken: dict[str, PymCheckError] = {}
        self._scanned = False

    def refresh(self) -> None:
        """Scan the folder again."""
        self._scripts.clear()
        self._broken.clear()
        self.problems = []
        self._scanned = True
        if not self.root.is_dir():
            self.problems.append(Diagnostic("PYM000", "no such folder", str(self.root), 0, 0))
            return
        paths = sorted(p for p in self.root.rglob("*.pym") if not _hidden(p, self.root))
        for path in paths:
            self._scan_one(path)

    def _scan_one(self, path: Path) -> None:
        if path.stem in self._scripts or path.stem in self._broken:
            message = f"another script already provides tool {path.stem!r}"
            self.problems.append(Diagnostic("PYM031", message, str(path), 1, 1))
            return
        try:
            script = self.loader.load(path)
            diagnostics = check_grants(script, self.externals, self.grants)
            if diagnostics:
                raise PymCheckError(diagnostics)
        except PymCheckError as exc:
            self._broken[path.stem] = exc
            self.problems.extend(exc.diagnostics)
        except (OSError, UnicodeDecodeError) as exc:
            error = PymCheckError([Diagnostic("PYM000", f"cannot read: {exc}", str(path), 0, 0)])
            self._broken[path.stem] = error
            self.problems.extend(error.diagnostics)
        else:
            self._scripts[path.stem] = script

    def _ensure_scanned(self) -> None:
        if not self._scanned:
            self.refresh()

    def list_tools(self) -> list[str]:
        """Names of the valid tools, sorted; broken ones are in ``problems``."""
        self._ensure_scanned()
        return sorted(self._scripts)

    def script(self, tool_name: str) -> PymScript | None:
        """The checked script of a tool; PymCheckError if it is broken, None if unknown."""
        self._ensure_scanned()
        broken = self._broken.get(tool_name)
        if broken is not None:
            raise broken
        return self._scripts.get(tool_name)

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The schema of a tool; PymCheckError (with its diagnostics) if its script is broken."""
        script = self.script(tool_name)
        return script.to_tool_schema() if script is not None else None


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts[:-1])


class GrailBackend:
    """Runs ``grail`` tools; never raises for a tool failure (see the module docstring)."""

    def __init__(
        self,
        *,
        runner: PymRunner | None = None,
        loader: ScriptLoader | None = None,
        limits: LimitsPolicy | LimitsSpec = None,
        tool_limits: Mapping[str, LimitsSpec] | None = None,
        grants: Collection[str] = DEFAULT_GRANTS,
    ) -> None:
        self.runner = runner if runner is not None else PymRunner()
        self.loader = loader if loader is not None else ScriptLoader(PymCache())
        self.limits = limits if isinstance(limits, LimitsPolicy) else LimitsPolicy.build(limits, tool_limits)
        self.grants = frozenset(grants)

    async def run(self, path: Path, arguments: Mapping[str, Any], context: RunContext) -> PymResult:
        """Run one script; raises the PymError (or OSError) of what failed."""
        script = self.loader.load(path)
        limits = self.limits.for_tool(script.name)
        return await self.runner.run(
            script, arguments, workspace=context.workspace, limits=limits, grants=self.grants
        )

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run the call's script with its arguments; the JSON result, or an error result."""
        if schema.script_path is None:
            return ToolResult(call.id, call.name, f"tool {schema.name!r} has no .pym script_path", True)
        try:
            result = await self.run(schema.script_path, call.arguments, context)
        except Exception as exc:  # a backend reports failures as results, never raises
            return ToolResult(call.id, call.name, _describe(exc), True)
        return ToolResult(call.id, call.name, result.output)

    async def run_script(self, path: Path, inputs: dict[str, Any], context: RunContext) -> ToolResult:
        """Run a context provider with the inputs it declares; text results stay plain text."""
        call_id = f"context:{path.name}"
        try:
            declared = {spec.name for spec in self.loader.load(path).inputs}
            arguments = {key: value for key, value in inputs.items() if key in declared}
            result = await self.run(path, arguments, context)
        except Exception as exc:  # providers report failures as results, never raise
            return ToolResult(call_id, path.stem, _describe(exc), True)
        output = result.value if isinstance(result.value, str) else result.output
        return ToolResult(call_id, path.stem, output)

    def close(self) -> None:
        """Stop the runner's sandbox workers."""
        self.runner.close()


def _describe(exc: Exception) -> str:
    if not isinstance(exc, StructuredAgentsError | OSError | TimeoutError):
        logger.exception("unexpected error in a .pym run")
    return f"{type(exc).__name__}: {exc}"
