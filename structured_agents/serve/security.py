"""The guard in front of ``sa serve``'s routes: an API key and a limit on request bodies.

* API key (``SA_SERVE__API_KEY``, as ``vllm serve --api-key``): every ``/v1/...`` request must
  send ``Authorization: Bearer KEY``; the comparison takes constant time
  (:func:`hmac.compare_digest`), and anything else is a 401. ``/health`` stays open.
* Body size (``SA_SERVE__MAX_BODY_BYTES``): a body larger than the limit is a 413, whether it
  announces its length (``Content-Length``) or streams in chunks (the guard reads the body,
  up to the limit, before the app sees it); the body is never echoed.

A pure ASGI middleware, so it runs before FastAPI reads or parses anything.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["Guard"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _refuse(send: Send, status: int, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    kind = {401: "AuthenticationError", 413: "RequestTooLarge"}[status]
    body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": status}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware checking the API key and the body size of HTTP requests."""

    def __init__(self, app: App, *, api_key: str | None, max_body_bytes: int) -> None:
        self.app = app
        self._expected = f"Bearer {api_key}".encode() if api_key else None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        if self._expected is not None and str(scope.get("path", "")).startswith("/v1"):
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await _refuse(send, 401, "missing or wrong API key", ((b"www-authenticate", b"Bearer"),))
                return
        limit = self.max_body_bytes
        too_large = f"the request body exceeds {limit} bytes"
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _refuse(send, 413, too_large)
            return
        body = bytearray()
        while True:  # read the whole body (it is small) before the app sees any of it
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > limit:
                await _refuse(send, 413, too_large)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # after the body: the disconnect a stream listens for
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)
