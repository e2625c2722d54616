"""``.pym`` tool scripts (the Grail format) checked with ``ast`` and run in pydantic-monty.

A script declares its inputs and the host functions it calls, and its result is the value of
its last expression::

    \"\"\"Count the lines of a file.\"\"\"
    from grail import Input, external

    path: str = Input("path", description="file to count")
    limit: int = Input("limit", default=1000)

    @external
    async def read_file(path: str) -> str: ...

    text = await read_file(path)
    {"lines": min(len(text.splitlines()), limit)}

================  ===========================================================================
module            what it holds
================  ===========================================================================
``checker``       the rules and their codes (PYM001..PYM030)
``schema``        input annotations -> JSON schema
``loader``        check (through ``cache``), blank the declarations, ``ScriptLoader``
``inputs``        argument coercion rules, defaults, validation
``limits``        ``PymLimits`` presets (strict/default/permissive), ``LimitsPolicy``
``externals``     host-function registry, grants, workspace path resolution
``host_functions``  read_file, list_files, file_exists, run_ruff, write_file
``runner``        ``PymRunner``: the Monty pool and the run loop
``outcome``       sandbox failures -> typed errors, result -> JSON
``errors``        the ``PymError`` tree
================  ===========================================================================
"""

from __future__ import annotations

from structured_agents.pym.cache import PymCache
from structured_agents.pym.errors import (
    Diagnostic,
    PymCheckError,
    PymError,
    PymExecutionError,
    PymExternalError,
    PymInputError,
    PymLimitError,
    PymOutputError,
    PymParseError,
    PymRunError,
)
from structured_agents.pym.externals import ExternalContext, ExternalRegistry, check_grants, resolve_path
from structured_agents.pym.host_functions import DEFAULT_GRANTS, default_externals
from structured_agents.pym.limits import PRESETS, LimitsPolicy, PymLimits
from structured_agents.pym.loader import ScriptLoader, load_source
from structured_agents.pym.model import ExternalDecl, InputSpec, PymScript
from structured_agents.pym.runner import PymResult, PymRunner

__all__ = [
    "DEFAULT_GRANTS",
    "PRESETS",
    "Diagnostic",
    "ExternalContext",
    "ExternalDecl",
    "ExternalRegistry",
    "InputSpec",
    "LimitsPolicy",
    "PymCache",
    "PymCheckError",
    "PymError",
    "PymExecutionError",
    "PymExternalError",
    "PymInputError",
    "PymLimitError",
    "PymLimits",
    "PymOutputError",
    "PymParseError",
    "PymResult",
    "PymRunError",
    "PymRunner",
    "PymScript",
    "ScriptLoader",
    "check_grants",
    "default_externals",
    "load_source",
    "resolve_path",
]
