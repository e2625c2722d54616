"""Errors of the API and how every error becomes an HTTP answer that leaks nothing.

::

    StructuredAgentsError
    └── AccessDeniedError       a path outside what the operator allowed (403)

Errors of the package map to statuses: unknown ids 404, a path outside the allowed directories
403, malformed jobs, bundles, roots or codebases 422, database or broker down 503, and anything
else (another database error included) 500. A 5xx answer says only what failed ("database
unavailable", "database error"); the error itself, with the driver's text, goes to the log. A
422 for a malformed request lists what is wrong where, never the input itself (FastAPI's
default echoes it, however large), and at most :data:`MAX_REPORTED` problems.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from structured_agents.errors import ConfigError, StructuredAgentsError
from structured_agents.jobs.errors import DiscoveryError
from structured_agents.store import RecordNotFoundError, StoreError, StoreUnavailableError
from structured_agents.workers.errors import BrokerError

__all__ = ["MAX_REPORTED", "AccessDeniedError", "install_error_handlers", "status_of"]

MAX_REPORTED = 20
"""Validation problems listed in a 422 answer before the rest are only counted."""
_MAX_TEXT = 200
"""Longest location part or message of a validation problem (a dict key may be the input)."""

log = logging.getLogger(__name__)


class AccessDeniedError(StructuredAgentsError):
    """A request names a path outside the directories the operator allowed; the message says
    which setting allows more."""


def status_of(exc: StructuredAgentsError) -> tuple[int, str]:
    """The status and the answer's ``detail`` for ``exc``: its message below 500, a fixed line above."""
    if isinstance(exc, RecordNotFoundError):
        return 404, str(exc)
    if isinstance(exc, AccessDeniedError):
        return 403, str(exc)
    if isinstance(exc, ConfigError | DiscoveryError):
        return 422, str(exc)
    if isinstance(exc, StoreUnavailableError):
        return 503, "database unavailable"
    if isinstance(exc, BrokerError):
        return 503, "broker unavailable"
    if isinstance(exc, StoreError):
        return 500, "database error"
    return 500, "internal error"


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _MAX_TEXT:
        return value[:_MAX_TEXT] + "..."
    return value


async def _problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StructuredAgentsError)
    status, detail = status_of(exc)
    if status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, detail, exc_info=exc)
    return JSONResponse(status_code=status, content={"detail": detail})


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    detail = [
        {"type": err["type"], "loc": [_short(part) for part in err["loc"]], "msg": _short(err["msg"])}
        for err in errors[:MAX_REPORTED]
    ]
    if len(errors) > MAX_REPORTED:
        detail.append(
            {"type": "more", "loc": [], "msg": f"... and {len(errors) - MAX_REPORTED} more problems"}
        )
    return JSONResponse(status_code=422, content={"detail": detail})


def install_error_handlers(app: FastAPI) -> None:
    """Answer the package's errors and malformed requests as described above."""
    app.add_exception_handler(StructuredAgentsError, _problem)
    app.add_exception_handler(RequestValidationError, _invalid)
