"""The guard in front of both HTTP services (the API, ``sa serve``): a bearer key and a body limit.

A pure ASGI middleware, so it runs before the framework reads or parses anything:

* **Body size**: the whole body is read, up to ``max_body_bytes``, before the application sees
  any of it; a body over the limit is a 413 whether it announces its length
  (``Content-Length``, refused before a byte is read) or streams in chunks (refused when the
  read passes the limit), and whether or not the route reads a body at all (``POST
  /batches/{id}/cancel`` does not: a route that never reads would otherwise let any chunked
  body through). The body is never echoed.
* **Key** (optional): requests whose path starts with ``key_prefix`` must send
  ``Authorization: Bearer KEY``, compared in constant time (:func:`hmac.compare_digest`);
  anything else is a 401 with ``WWW-Authenticate: Bearer``.

Each service shapes its own refusals (``refusal``: status and message to a JSON body): FastAPI's
``{"detail": ...}`` for the API, OpenAI's ``{"error": {...}}`` for ``sa serve``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["Guard", "Refusal", "detail_refusal"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Refusal = Callable[[int, str], dict[str, Any]]
"""The JSON body of a refusal, from its status (401, 413) and message."""


def detail_refusal(status: int, message: str) -> dict[str, Any]:
    """FastAPI's error body: ``{"detail": message}``."""
    return {"detail": message}


class Guard:
    """ASGI middleware checking the key and the body size of HTTP requests (module docstring)."""

    def __init__(
        self,
        app: App,
        *,
        max_body_bytes: int,
        api_key: str | None = None,
        key_prefix: str = "/",
        refusal: Refusal = detail_refusal,
        limit_name: str = "",
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self._expected = f"Bearer {api_key}".encode() if api_key else None
        self._key_prefix = key_prefix
        self._refusal = refusal
        self._too_large = f"request body larger than {max_body_bytes} bytes" + (
            f" ({limit_name})" if limit_name else ""
        )

    async def _refuse(self, send: Send, status: int, message: str, *extra: tuple[bytes, bytes]) -> None:
        body = json.dumps(self._refusal(status, message)).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            *extra,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        if self._expected is not None and str(scope.get("path", "")).startswith(self._key_prefix):
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await self._refuse(send, 401, "missing or wrong API key", (b"www-authenticate", b"Bearer"))
                return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._refuse(send, 413, self._too_large)
            return
        body = bytearray()
        while True:  # the whole body (small, bounded) before the app sees any of it
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await self._refuse(send, 413, self._too_large)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # after the body: the disconnect a handler listens for
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)
