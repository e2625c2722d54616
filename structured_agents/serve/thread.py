"""Run an ASGI app (``sa serve``'s or any other) with uvicorn in a background thread.

For embedding a server in a process that does other work (a notebook, a worker, a test)::

    with serve_in_thread(create_app(engine)) as base_url:
        engine = OpenAICompatEngine(base_url + "/v1")

The listening socket is bound before the server starts (port 0 picks a free one), so the
URL is known and reserved up front; the context waits until the app's startup has run and
shuts the server down gracefully on exit. Connections whose request headers or body do not come in
time are closed (:class:`~structured_agents.serve.http.RequestsInTime`), as ``sa serve``'s are.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from structured_agents.errors import StructuredAgentsError
from structured_agents.serve.http import RequestsInTime

__all__ = ["serve_in_thread"]


@contextmanager
def serve_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout_s: float = 10.0,
    shutdown_timeout_s: float = 5.0,
) -> Iterator[str]:
    """Serve ``app`` on ``host:port`` while the context is open; yields ``http://host:port``."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=int(shutdown_timeout_s),
        http=RequestsInTime,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="uvicorn", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout_s
        while not server.started:
            if not thread.is_alive():
                raise StructuredAgentsError(f"the server on {host}:{sock.getsockname()[1]} failed to start")
            if time.monotonic() > deadline:
                raise StructuredAgentsError(f"the server did not start within {startup_timeout_s} s")
            time.sleep(0.01)
        yield f"http://{f'[{host}]' if ':' in host else host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(shutdown_timeout_s + 1)
        sock.close()
