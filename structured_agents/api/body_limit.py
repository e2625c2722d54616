"""An ASGI middleware that refuses request bodies larger than a limit while they are read.

A body whose ``Content-Length`` exceeds the limit is answered 413 before the application runs,
so no endpoint acts on it and nothing of it is read. A body without one (chunked) is counted as
the application reads it: the read that passes the limit raises :class:`BodyTooLarge` (an
``HTTPException``, which FastAPI passes on instead of calling it a parse error), and the answer
is 413. Either way at most ``max_bytes`` plus one chunk is read, and the body is never echoed.

Starlette's own ``RequestBodyLimitMiddleware`` (1.6+) runs the endpoint before it refuses a
declared-too-large body the endpoint does not read (``POST /batches/{id}/cancel`` would cancel,
then answer 413); this one refuses first.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "BodyTooLarge"]


class BodyTooLarge(HTTPException):
    """The request body is larger than the limit (413)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            status_code=413, detail=f"request body larger than {max_bytes} bytes (SA_API__MAX_BODY_BYTES)"
        )


class BodyLimit:
    """Refuse HTTP request bodies over ``max_bytes`` with 413, reading at most that much of them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        too_large = BodyTooLarge(self.max_bytes)
        response = JSONResponse(
            {"detail": too_large.detail}, status_code=413, headers={"Connection": "close"}
        )
        await response(scope, receive, send)
