"""A connection whose request headers or body do not come in time is closed (slowloris), on a
real uvicorn server; complete requests, and the next request on a kept-alive connection, are
served; refused accepts are logged once in a while, not each time."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from structured_agents.serve import serve_in_thread
from structured_agents.serve.http import AcceptErrorsThrottled, RequestsInTime

TIMEOUT_S = 0.5


@pytest.fixture
def address(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int]]:
    monkeypatch.setattr(RequestsInTime, "header_timeout_s", TIMEOUT_S)
    monkeypatch.setattr(RequestsInTime, "body_timeout_s", TIMEOUT_S)

    async def echo(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"got {len(await request.body())}")

    app = Starlette(
        routes=[Route("/", lambda _request: PlainTextResponse("ok")), Route("/echo", echo, methods=["POST"])]
    )
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


def test_connections_that_trickle_their_body_are_closed(address: tuple[str, int]) -> None:
    """The probe's ``sa serve`` attack: whole headers, then a body a byte every few seconds;
    with no key, on a path outside ``/v1``, 20,000 such connections held the server at its
    open-file limit. A body sent in time is read whole."""
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
    trickling = [socket.create_connection(address) for _ in range(20)]
    started = time.monotonic()
    for client in trickling:
        client.sendall(head + b"{")
    time.sleep(TIMEOUT_S / 2)
    for client in trickling:
        client.sendall(b"x")  # it keeps coming, too slowly to end in time
    assert all(_closed(client, 5) for client in trickling)
    assert TIMEOUT_S <= time.monotonic() - started < 5
    with socket.create_connection(address) as client:
        client.sendall(head.replace(b"Host: x", b"Host: x\r\nConnection: close") + b"y" * 1000)
        client.settimeout(5)
        received = b""
        while chunk := client.recv(4096):
            received += chunk
        assert received.startswith(b"HTTP/1.1 200") and received.endswith(b"got 1000")


def test_refused_accepts_are_logged_once_in_a_while_with_the_count_held_back() -> None:
    """asyncio logs each ``accept()`` refused at the open-file limit with its traceback: the
    probe's 20,000 connections wrote 154 MB of log in a minute."""
    throttle = AcceptErrorsThrottled(every_s=60)

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)

    refused = [record("socket.accept() out of system resource\nsocket: <...>") for _ in range(1000)]
    passed = [item for item in refused if throttle.filter(item)]
    other = record("Task exception was never retrieved")

    assert len(passed) == 1 and throttle.filter(other)
    throttle.every_s = 0
    later = record("socket.accept() out of system resource")
    assert throttle.filter(later) and "(999 more since the last report)" in str(later.msg)
