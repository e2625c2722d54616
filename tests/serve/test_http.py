"""A connection whose request headers do not come in time is closed (slowloris), on a real
uvicorn server; complete requests, and the next request on a kept-alive connection, are served."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from structured_agents.serve import serve_in_thread
from structured_agents.serve.http import HeadersInTime

TIMEOUT_S = 0.5


@pytest.fixture
def address(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int]]:
    monkeypatch.setattr(HeadersInTime, "header_timeout_s", TIMEOUT_S)
    app = Starlette(routes=[Route("/", lambda _request: PlainTextResponse("ok"))])
    with serve_in_thread(app) as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port)


def _closed(client: socket.socket, within_s: float) -> bool:
    """Whether the server closes ``client`` within ``within_s`` (all it sends is read)."""
    client.settimeout(within_s)
    try:
        while client.recv(4096):
            pass
    except TimeoutError:
        return False
    return True


def test_connections_that_never_finish_their_headers_are_closed(address: tuple[str, int]) -> None:
    started = time.monotonic()  # before the server can start a connection's clock
    partial = [socket.create_connection(address) for _ in range(20)]
    for client in partial:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # no blank line: the headers never end
    assert all(_closed(client, 5) for client in partial)
    assert TIMEOUT_S <= time.monotonic() - started < 5
    with socket.create_connection(address) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _closed(client, 5)


def _response(client: socket.socket) -> bytes:
    """One whole response to a ``GET /`` (its headers, then the two bytes of ``ok``), however
    the server's writes arrive."""
    client.settimeout(5)
    received = b""
    while not received.endswith(b"\r\n\r\nok"):
        chunk = client.recv(4096)
        assert chunk, received
        received += chunk
    return received


def test_a_kept_alive_connection_has_its_next_headers_timed_too(address: tuple[str, int]) -> None:
    with socket.create_connection(address) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _response(client).startswith(b"HTTP/1.1 200")
        time.sleep(2 * TIMEOUT_S)  # idle, under uvicorn's own keep-alive timeout
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _response(client).startswith(b"HTTP/1.1 200")
        client.sendall(b"GET / HTTP/1.1\r\n")
        assert _closed(client, 5)
