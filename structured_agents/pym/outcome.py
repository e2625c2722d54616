"""Turn what the sandbox returned or raised into a JSON result or a typed :class:`PymError`.

=====================================================  =====================================
Monty                                                  PymError
=====================================================  =====================================
``MontySyntaxError``, "parser does not yet support"    ``PymParseError`` (PYM001, its line)
``MemoryError: memory limit exceeded``                 ``PymLimitError(limit="memory")``
``TimeoutError: ... time limit exceeded``              ``PymLimitError(limit="duration")``
``MontyCrashedError`` timed out before the request     ``PymLimitError(limit="duration")``:
timeout (the pool's backstop of the time limit)        an operation the sandbox cannot
                                                       interrupt (``10 ** 10 ** 7``) ran on
``RecursionError: maximum recursion depth exceeded``   ``PymLimitError(limit="recursion")``
``RuntimeError: suspension limit ... exceeded``        ``PymLimitError(limit="external_calls")``
the run passing its ``timeout_s``                       ``PymLimitError(limit="timeout")``
``MontyCrashedError`` killed by the request timeout    ``PymLimitError(limit="request_timeout")``
the exception an external raised, uncaught             ``PymExternalError``
any other exception, other ``MontyCrashedError``       ``PymExecutionError``
=====================================================  =====================================

Every limit message names the limit that was hit, its configured value and what was measured
(Monty's own figures, or the seconds a step ran), never another limit: a step that Monty's
pool stopped 1 s after the execution time limit is a duration error, not a run timeout.

Errors carry the line and column of the innermost frame in the user's file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic_monty import MontyCrashedError, MontyError, MontyRuntimeError, MontySyntaxError

from structured_agents.pym.errors import (
    Diagnostic,
    PymError,
    PymExecutionError,
    PymExternalError,
    PymLimitError,
    PymOutputError,
    PymParseError,
)
from structured_agents.pym.limits import PymLimits
from structured_agents.pym.model import PymScript

__all__ = ["json_output", "sandbox_error"]

_UNSUPPORTED = "The monty syntax parser does not yet support"
_LIMITS = (
    ("MemoryError", "memory limit exceeded", "memory"),
    ("TimeoutError", "time limit exceeded", "duration"),
    ("RecursionError", "maximum recursion depth exceeded", "recursion"),
    ("RuntimeError", "suspension limit", "external_calls"),
)


def _limit_message(limit: str, limits: PymLimits, measured: str) -> str:
    message = {
        "memory": f"memory limit of {limits.memory_mb:g} MiB exceeded",
        "duration": f"execution time limit of {limits.duration_s:g}s exceeded",
        "recursion": f"recursion depth limit of {limits.recursion_depth} exceeded",
        "external_calls": f"more than {limits.external_calls} external calls",
        "timeout": f"timeout of {limits.timeout_s:g}s exceeded (wall clock, host functions included)",
    }[limit]
    return f"{message} ({measured})" if measured else message


def sandbox_error(
    exc: MontyError | None,
    script: PymScript,
    limits: PymLimits,
    failures: Sequence[PymExternalError],
    *,
    step_s: float,
    request_timeout_s: float,
) -> PymError:
    """The PymError for a failed run (``exc`` None: the run's timeout passed).

    ``step_s`` is how long the failing sandbox step ran (for ``exc`` None: the whole run);
    ``request_timeout_s`` the pool's per-step deadline.
    """
    path = str(script.path)
    frames = exc.traceback() if isinstance(exc, MontyRuntimeError | MontySyntaxError) else []
    line, column = (frames[-1].line, frames[-1].column) if frames else (0, 0)

    def limit_error(limit: str, message: str) -> PymLimitError:
        return PymLimitError(message, limit=limit, path=path, line=line, column=column)

    if isinstance(exc, MontySyntaxError) or _UNSUPPORTED in str(exc):
        message = f"the sandbox cannot parse this: {exc}"
        return PymParseError([Diagnostic("PYM001", message, path, line or 1, column or 1)])
    if exc is None:
        return limit_error("timeout", _limit_message("timeout", limits, f"{step_s:.1f}s"))
    if isinstance(exc, MontyCrashedError) and exc.timed_out and step_s < request_timeout_s:
        measured = (
            "an operation the sandbox cannot interrupt, such as arithmetic on a huge integer, ran on: "
            f"its worker was stopped after {step_s:.1f}s"
        )
        return limit_error("duration", _limit_message("duration", limits, measured))
    if isinstance(exc, MontyCrashedError) and exc.timed_out:
        message = f"the sandbox did not answer within the request timeout of {request_timeout_s:g}s"
        return limit_error("request_timeout", f"{message} (stopped after {step_s:.1f}s)")
    if isinstance(exc, MontyCrashedError):
        return PymExecutionError(f"the sandbox worker crashed: {exc}", path=path)
    inner = exc.exception()
    kind, text = type(inner).__name__, str(inner)
    for exc_kind, marker, limit in _LIMITS:
        if kind == exc_kind and marker in text:
            measured = text.partition(": ")[2] if limit in ("memory", "duration") else ""
            return limit_error(limit, _limit_message(limit, limits, measured))
    for failure in failures:
        if kind == failure.exc_type and text == failure.message:
            return PymExternalError(failure.message, exc_type=kind, path=path, line=line, column=column)
    return PymExecutionError(f"{kind}: {text}", path=path, line=line, column=column)


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists; TypeError naming the first non-JSON value."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a dict with non-string keys")
        return {k: _plain(v) for k, v in value.items()}
    raise TypeError(f"a {type(value).__name__}")


def json_output(value: Any, script: PymScript, limits: PymLimits) -> tuple[Any, str]:
    """The result as JSON data and text; PymOutputError if it is not JSON or too large."""
    try:
        data = _plain(value)
        text = json.dumps(data, allow_nan=False, ensure_ascii=False)
    except TypeError as exc:
        problem = f"the result is not JSON-serialisable: it contains {exc}"
    except ValueError:
        problem = "the result contains NaN or infinity, which JSON cannot carry"
    except RecursionError:
        problem = "the result is nested too deeply to encode as JSON"
    else:
        if len(text.encode()) <= limits.output_kb * 1024:
            return data, text
        problem = f"the result is larger than the {limits.output_kb} KiB output limit"
    raise PymOutputError(problem, path=str(script.path))
