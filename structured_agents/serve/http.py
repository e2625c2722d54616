"""uvicorn's HTTP/1.1 protocol with a bound on how long a request may take to arrive.

uvicorn times out idle keep-alive connections but not one that has begun a request and never
finishes it: 20,000 such connections (a slowloris client) held ``sa serve`` at its open-file
limit, so that no one else could connect, while asyncio logged each refused accept (1.5 GB of
log in a minute). :class:`RequestsInTime` closes a connection whose request's line and headers
have not all come within :data:`HEADER_TIMEOUT_S` of its opening, or of the first bytes after
the previous response, and one whose request body has not all come within
:data:`BODY_TIMEOUT_S` of its headers: a client that sent whole headers and then trickled its
body a byte every few seconds held the same 20,000 connections, with no key, since a body is
read before the key is checked (``POST /nonexistent``).

:class:`AcceptErrorsThrottled` keeps the refused accepts that remain possible (more clients than
the open-file limit, each within its time) from flooding the log: one report every
:data:`ACCEPT_ERROR_EVERY_S`, with the count of those held back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

__all__ = [
    "ACCEPT_ERROR_EVERY_S",
    "BODY_TIMEOUT_S",
    "HEADER_TIMEOUT_S",
    "AcceptErrorsThrottled",
    "RequestsInTime",
]

HEADER_TIMEOUT_S = 10.0
"""How long a request's line and headers may take to arrive."""
BODY_TIMEOUT_S = 10.0
"""How long a request's body may take to arrive after its headers (1 MiB, the default body
limit, at 0.8 Mbit/s)."""
ACCEPT_ERROR_EVERY_S = 10.0
"""How often a refused ``accept()`` is logged at most."""


class RequestsInTime(H11Protocol):
    """:class:`H11Protocol` closing a connection whose next request, or its body, does not
    arrive in time."""

    header_timeout_s = HEADER_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._waiting_after: object = None
        """The request cycle the timer waits to see followed by another (None: the first)."""
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_of: RequestResponseCycle | None = None
        """The request cycle whose body the body timer waits for."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        between = self.cycle is None or self.cycle.response_complete
        if between and (self._timer is None or self._waiting_after is not self.cycle):
            self._arm()  # bytes of a next request: its headers have their own time
        super().data_received(data)
        cycle = self.cycle
        if cycle is not None and cycle is not self._body_of and cycle.more_body:
            self._body_of = cycle  # its headers came: its body has its own time
            if self._body_timer is not None:
                self._body_timer.cancel()
            self._body_timer = self.loop.call_later(self.body_timeout_s, self._body_late, cycle)

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._timer, self._body_timer):
            if timer is not None:
                timer.cancel()
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

    def _body_late(self, cycle: RequestResponseCycle) -> None:
        self._body_timer = None
        if self.cycle is cycle and cycle.more_body and not self.transport.is_closing():
            self.transport.close()  # the body has not all come


class AcceptErrorsThrottled(logging.Filter):
    """A filter for the ``asyncio`` logger letting through one refused ``accept()`` (the
    process at its open-file limit) every :data:`ACCEPT_ERROR_EVERY_S`, saying how many were
    held back since the last; every other record passes."""

    def __init__(self, every_s: float = ACCEPT_ERROR_EVERY_S) -> None:
        super().__init__()
        self.every_s = every_s
        self._last = float("-inf")
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("socket.accept() out of system resource"):
            return True
        now = time.monotonic()
        if now - self._last < self.every_s:
            self._held += 1
            return False
        if self._held:
            record.msg = f"{record.msg} ({self._held} more since the last report)"
        self._last, self._held = now, 0
        return True
