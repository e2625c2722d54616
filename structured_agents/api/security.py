"""Who may call the API and how: the bearer token, JSON-only state changes, CORS.

:func:`route_dependencies` gives the dependencies ``create_app`` sets on the whole application,
so every route, present or added later, requires them:

- the bearer token of ``SA_API__TOKEN``, compared in constant time; a missing or wrong one is
  401 with ``WWW-Authenticate: Bearer``. OpenAPI declares the ``HTTPBearer`` scheme on every
  operation. The docs pages (``/docs``, ``/redoc``, ``/openapi.json``) stay open.
- a JSON content type on state-changing methods (POST, PUT, PATCH, DELETE), else 415: a browser
  sends a cross-origin request without asking first (CORS preflight) only with a form or
  plain-text type, so such a request never reaches an endpoint.

CORS headers are sent only for the origins of ``SA_API__CORS_ORIGINS`` (none by default).
:func:`check_auth` refuses an application without a token unless ``SA_API__AUTH=none``.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request, Security, params
from fastapi.middleware.cors import CORSMiddleware
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from structured_agents.errors import ConfigError
from structured_agents.settings import ApiSettings

__all__ = ["STATE_CHANGING", "add_cors", "check_auth", "require_json", "route_dependencies"]

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods that must send a JSON content type."""

_BEARER = HTTPBearer(auto_error=False, description="The server's SA_API__TOKEN.")


def check_auth(api: ApiSettings) -> None:
    """ConfigError unless the settings ask for a token and give one, or turn authentication off."""
    if api.auth == "none" and api.token is not None:
        raise ConfigError("SA_API__AUTH=none and SA_API__TOKEN are both set: unset one of them")
    if api.auth == "bearer" and api.token is None:
        raise ConfigError(
            "SA_API__TOKEN is not set: the API refuses to start without a bearer token "
            "(SA_API__AUTH=none turns authentication off, on a trusted network only)"
        )


def _require_token(expected: bytes) -> Callable[..., Awaitable[None]]:
    async def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_BEARER)],
    ) -> None:
        given = b"" if credentials is None else credentials.credentials.encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(given, expected):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    return require_token


async def require_json(request: Request) -> None:
    """415 for a state-changing request whose content type is not JSON."""
    if request.method not in STATE_CHANGING:
        return
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        raise HTTPException(415, f"{request.method} requests must send Content-Type: application/json")


def route_dependencies(api: ApiSettings) -> list[params.Depends]:
    """The dependencies of every route: the token (unless ``auth`` is ``none``), then JSON."""
    check_auth(api)
    token = [] if api.token is None else [Depends(_require_token(api.token.get_secret_value().encode()))]
    return [*token, Depends(require_json)]


def add_cors(app: FastAPI, api: ApiSettings) -> None:
    """Answer CORS requests from ``SA_API__CORS_ORIGINS`` (none: no CORS headers at all)."""
    if api.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(api.cors_origins),
            allow_methods=["GET", *sorted(STATE_CHANGING)],
            allow_headers=["Authorization", "Content-Type"],
        )
