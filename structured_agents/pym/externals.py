"""Host functions (``@external``) that ``.pym`` scripts may call, and who may call which.

An :class:`ExternalRegistry` maps names to ``async`` host functions. Each takes an
:class:`ExternalContext` first (the run's workspace), then the script's arguments. A host
function needs no timeout of its own: at the run's ``timeout_s`` it is cancelled.
The host grants a subset of the registry per bundle or run; a script declaring an external
that is not granted (PYM024) or whose parameters differ from the host function's (PYM025)
is rejected before it runs (:func:`check_grants`).

Every path argument goes through :func:`resolve_path`: relative to the workspace, refused
(``PermissionError`` in the script, :class:`PymExternalError` on the host) when it escapes it,
through ``..``, an absolute path or a symlink.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structured_agents.pym.errors import Diagnostic, PymExternalError
from structured_agents.pym.model import ExternalParam, PymScript

__all__ = [
    "ExternalContext",
    "ExternalFunction",
    "ExternalRegistry",
    "HostFunction",
    "check_grants",
    "resolve_path",
]

HostFunction = Callable[..., Awaitable[Any]]
"""``async def f(ctx: ExternalContext, *args) -> JSON value``."""


@dataclass(frozen=True, slots=True)
class ExternalContext:
    """What a host function knows about the run that calls it."""

    workspace: Path | None
    """Root every path argument is resolved against; None refuses every path."""


@dataclass(frozen=True, slots=True)
class ExternalFunction:
    """One registered host function."""

    name: str
    func: HostFunction
    params: tuple[ExternalParam, ...]
    """Parameters after the context, as the script must declare them."""
    description: str


def resolve_path(workspace: Path | None, path: object) -> Path:
    """``path`` resolved inside ``workspace``; PymExternalError when it is not inside it."""
    if not isinstance(path, str):
        raise PymExternalError(f"a path must be a str, got {type(path).__name__}", exc_type="TypeError")
    if workspace is None:
        raise PymExternalError(f"no workspace: cannot access {path!r}", exc_type="PermissionError")
    root = workspace.resolve()
    try:
        candidate = (root / path).resolve()  # an absolute `path` replaces root; symlinks are followed
    except (OSError, ValueError) as exc:
        raise PymExternalError(f"invalid path {path!r}: {exc}", exc_type="ValueError") from None
    if not candidate.is_relative_to(root):
        raise PymExternalError(f"path {path!r} is outside the workspace", exc_type="PermissionError")
    return candidate


class ExternalRegistry:
    """Host functions by name; see the module docstring."""

    def __init__(self) -> None:
        self._functions: dict[str, ExternalFunction] = {}

    def register(self, func: HostFunction, *, name: str | None = None) -> HostFunction:
        """Register ``func`` (usable as a decorator); its signature after the context is the API."""
        if not inspect.iscoroutinefunction(func):
            raise TypeError(f"external {func.__name__!r} must be an async function")
        params = list(inspect.signature(func).parameters.values())[1:]
        spec = tuple(
            ExternalParam(
                p.name, "" if p.annotation is p.empty else str(p.annotation), p.default is not p.empty
            )
            for p in params
        )
        doc = inspect.getdoc(func) or ""
        fname = name or func.__name__
        self._functions[fname] = ExternalFunction(fname, func, spec, doc.split("\n\n")[0])
        return func

    def get(self, name: str) -> ExternalFunction | None:
        """The function registered as ``name``."""
        return self._functions.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __iter__(self) -> Iterator[ExternalFunction]:
        return iter(self._functions.values())


def _mismatch(declared: tuple[ExternalParam, ...], host: tuple[ExternalParam, ...]) -> str | None:
    names = [p.name for p in declared]
    host_names = [p.name for p in host]
    required = [p.name for p in host if not p.has_default]
    if names != host_names[: len(names)] or len(names) < len(required):
        return f"declares ({', '.join(names)}), the host function takes ({', '.join(host_names)})"
    return None


def check_grants(script: PymScript, registry: ExternalRegistry, grants: Collection[str]) -> list[Diagnostic]:
    """PYM024/PYM025 diagnostics for the script's externals against the granted host functions."""
    out: list[Diagnostic] = []
    path = str(script.path)
    for decl in script.externals:
        function = registry.get(decl.name)
        if function is None or decl.name not in grants:
            granted = ", ".join(sorted(g for g in grants if g in registry)) or "none"
            message = f"external {decl.name!r} is not granted by the host (granted: {granted})"
            out.append(Diagnostic("PYM024", message, path, decl.line, decl.column))
            continue
        mismatch = _mismatch(decl.params, function.params)
        if mismatch:
            message = f"external {decl.name!r} {mismatch}"
            out.append(Diagnostic("PYM025", message, path, decl.line, decl.column))
    return out
