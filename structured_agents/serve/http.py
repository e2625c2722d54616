"""uvicorn's HTTP/1.1 protocol with a bound on how long a request's headers may take.

uvicorn times out idle keep-alive connections but not one that has begun a request and never
finishes its headers: 20,000 such connections (a slowloris client) held ``sa serve`` at its
open-file limit, so that no one else could connect, while asyncio logged each refused accept
(1.5 GB of log in a minute). :class:`HeadersInTime` closes a connection whose request has not
begun within :data:`HEADER_TIMEOUT_S` of its opening, or of the first bytes after the previous
response.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT_S", "HeadersInTime"]

HEADER_TIMEOUT_S = 10.0
"""How long a request's line and headers may take to arrive."""


class HeadersInTime(H11Protocol):
    """:class:`H11Protocol` closing a connection whose next request does not begin in time."""

    header_timeout_s = HEADER_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._waiting_after: object = None
        """The request cycle the timer waits to see followed by another (None: the first)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        between = self.cycle is None or self.cycle.response_complete
        if between and (self._timer is None or self._waiting_after is not self.cycle):
            self._arm()  # bytes of a next request: its headers have their own time
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._waiting_after = self.cycle
        self._timer = self.loop.call_later(self.header_timeout_s, self._late)

    def _late(self) -> None:
        self._timer = None
        if self.cycle is self._waiting_after and not self.transport.is_closing():
            self.transport.close()  # no request began since the timer was set
