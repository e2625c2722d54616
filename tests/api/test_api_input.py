"""What a caller may send: bodies limited while read (413, never echoed), validation errors
without the input, every malformed id or parameter a 4xx, and 5xx without the driver's text
(over the real cluster's PostgreSQL and Redis, and a real uvicorn server for the streams)."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from api_helpers import AUTH, JSON, TOKEN, api_app, authorized, lookup_jobs
from cluster_fixtures import BUNDLE, Cluster
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from services import PostgresServer

from structured_agents.api.errors import MAX_REPORTED
from structured_agents.serve import serve_in_thread
from structured_agents.settings import Settings
from structured_agents.store import SqlStore
from structured_agents.workers.celery_app import make_app

MIB = 1024 * 1024
BIGINT_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def app(cluster: Cluster) -> FastAPI:
    return api_app(cluster)


@pytest.fixture(scope="module")
def client(app: FastAPI) -> TestClient:
    return authorized(app)


@pytest.fixture(scope="module")
def server(app: FastAPI) -> Iterator[tuple[str, int]]:
    """The app behind a real uvicorn server: (host, port)."""
    with serve_in_thread(app) as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port)


def _head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: api", f"Authorization: Bearer {TOKEN}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        got = sock.recv(65536)
        if not got:
            break
        data += got
    return data


def test_an_8_mib_body_is_413_and_not_echoed(client: TestClient) -> None:
    body = json.dumps({"bundle": "A" * (8 * MIB), "root": "/code"})
    answer = client.post("/batches", content=body, headers=JSON)
    assert answer.status_code == 413
    assert answer.json() == {"detail": "request body larger than 1048576 bytes (SA_API__MAX_BODY_BYTES)"}
    assert len(answer.content) < 200


def test_a_declared_large_body_is_refused_before_it_is_sent(
    cluster: Cluster, server: tuple[str, int]
) -> None:
    """The answer comes on the headers alone: the endpoint never runs (here: cancel)."""
    batch_id = cluster.enqueue(["declared"])
    cluster.wait(batch_id)  # a cancel would now mark the finished batch cancelled
    with socket.create_connection(server, timeout=30) as sock:
        length = 200 * MIB
        sock.sendall(
            _head(
                "POST",
                f"/batches/{batch_id}/cancel",
                "Content-Type: application/json",
                f"Content-Length: {length}",
            )
        )
        assert _read_head(sock).startswith(b"HTTP/1.1 413 ")
    assert cluster.store.get_batch(batch_id).status == "finished"


def test_a_streamed_200_mib_body_is_refused_while_it_is_read(server: tuple[str, int]) -> None:
    """Chunked, without a length: the server answers 413 long before the client has sent it all."""
    chunk = b"x" * 65536
    frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sent = 0
    answered = threading.Event()
    with socket.create_connection(server, timeout=30) as sock:
        sock.sendall(
            _head("POST", "/batches", "Content-Type: application/json", "Transfer-Encoding: chunked")
        )

        def stream() -> None:
            nonlocal sent
            try:
                while sent < 200 * MIB and not answered.is_set():
                    sock.sendall(frame)
                    sent += len(chunk)
            except OSError:  # the server closed the connection after answering
                pass

        writer = threading.Thread(target=stream)
        writer.start()
        head = _read_head(sock)
        sent_when_answered = sent
        answered.set()
        writer.join(30)
    assert head.startswith(b"HTTP/1.1 413 "), head
    # the limit (1 MiB) plus what the sockets' buffers hold, far below 200 MiB
    assert sent_when_answered < 64 * MIB, sent_when_answered


def test_validation_errors_never_echo_the_input(client: TestClient) -> None:
    big = "Z" * (900 * 1024)
    answers = [
        client.post("/batches", json={"bundle": "docstring", "root": "/code", "extra": big}),
        client.post("/batches", json={"bundle": ["not", "a", "string", big], "root": "/code"}),
        client.post("/batches", json={"bundle": "docstring", "root": "/code", big[:5000]: 1}),
        client.post("/batches", content=b'{"bundle": "' + big.encode(), headers=JSON),
    ]
    for answer in answers:
        assert answer.status_code == 422, answer.text
        assert "Z" * 300 not in answer.text  # a key in a location is cut at 200 characters
        assert len(answer.content) < 2000
        assert all(set(problem) == {"type", "loc", "msg"} for problem in answer.json()["detail"])


def test_many_problems_are_counted_not_listed(client: TestClient, cluster: Cluster) -> None:
    jobs = [{"kind": "lookup"}] * 5000
    answer = client.post("/batches", json={"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": jobs})
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert len(detail) == MAX_REPORTED + 1
    assert detail[-1]["msg"] == f"... and {5000 - MAX_REPORTED} more problems"


LONG = "a" * 65
BAD = [
    ("GET", "/batches/a%00b"),
    ("GET", "/batches/a%00b/results"),
    ("POST", "/batches/a%00b/cancel"),
    ("GET", "/runs/a%00b"),
    ("GET", "/runs/a%00b/events"),
    ("GET", f"/batches/{LONG}"),
    ("GET", f"/batches/{LONG}/results"),
    ("POST", f"/batches/{LONG}/cancel"),
    ("GET", f"/runs/{LONG}"),
    ("GET", f"/runs/{LONG}/events"),
    ("GET", "/runs?batch_id=a%00b"),
    ("GET", f"/runs?batch_id={LONG}"),
    ("GET", "/runs?batch_id="),
    ("GET", "/runs"),
    ("GET", f"/runs?batch_id={{batch}}&offset={BIGINT_MAX + 1}"),
    ("GET", "/runs?batch_id={batch}&offset=99999999999999999999999999999"),
    ("GET", "/runs?batch_id={batch}&offset=-1"),
    ("GET", "/runs?batch_id={batch}&offset=1e3"),
    ("GET", "/runs?batch_id={batch}&limit=0"),
    ("GET", "/runs?batch_id={batch}&limit=1001"),
    ("GET", f"/runs?batch_id={{batch}}&limit={2**31}"),
    ("GET", "/runs?batch_id={batch}&status=nope"),
    ("GET", f"/runs/{{run}}/events?after_id={BIGINT_MAX + 1}"),
    ("GET", "/runs/{run}/events?after_id=-1"),
    ("GET", "/runs/{run}/events?limit=0"),
    ("GET", "/batches/{batch}/results?status=nope"),
]


@pytest.fixture(scope="module")
def finished(cluster: Cluster) -> tuple[str, str]:
    """A finished batch of one run: (batch id, run id)."""
    batch_id = cluster.enqueue(["ids"])
    cluster.wait(batch_id)
    return batch_id, cluster.store.list_runs(batch_id)[0].id


@pytest.mark.parametrize(("method", "path"), BAD)
def test_malformed_ids_and_parameters_are_422(
    client: TestClient, finished: tuple[str, str], method: str, path: str
) -> None:
    batch_id, run_id = finished
    answer = client.request(method, path.format(batch=batch_id, run=run_id), headers=JSON)
    assert answer.status_code == 422, answer.text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"/runs?batch_id={{batch}}&offset={BIGINT_MAX}", 200),
        (f"/runs/{{run}}/events?after_id={BIGINT_MAX}", 200),
        ("/batches/" + "b" * 64, 404),
        ("/batches/" + quote("é\u2028\x01"), 404),
        ("/batches/%ED%A0%80", 404),
        ("/runs?batch_id=%ED%A0%80", 404),
    ],
)
def test_ids_and_parameters_up_to_the_bounds_reach_postgresql(
    client: TestClient, finished: tuple[str, str], path: str, status: int
) -> None:
    batch_id, run_id = finished
    answer = client.get(path.format(batch=batch_id, run=run_id))
    assert answer.status_code == status, answer.text


@pytest.mark.parametrize(
    "job",
    [
        {"kind": "lookup", "path": "a.txt", "inputs": {"key": "a\x00b"}},
        {"kind": "lookup", "path": "a.txt", "inputs": {"key\x00": "k"}},
        {"kind": "lookup", "path": "a\x00.txt", "inputs": {"key": "k"}},
        {"kind": "lookup", "path": "a.txt", "inputs": {"key": "k"}, "job_id": "x\x00"},
        {"kind": "lookup", "path": "a.txt", "inputs": {"key": "\ud800"}},
        {"kind": "lookup", "path": "a.txt", "inputs": {"key": "k"}, "job_id": "j" * 65},
    ],
)
def test_text_postgresql_cannot_store_is_422(
    client: TestClient, cluster: Cluster, job: dict[str, object]
) -> None:
    body = json.dumps({"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": [job]})
    answer = client.post("/batches", content=body, headers=JSON)
    assert answer.status_code == 422, answer.text


def test_5xx_say_what_is_down_and_log_the_driver_text(
    cluster: Cluster, pg_server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    missing = SqlStore(pg_server.database_url("no_such_database"), migrate=False)
    down = authorized(api_app(cluster, store=missing))
    with caplog.at_level(logging.ERROR, logger="structured_agents.api.errors"):
        for path in ("/batches/x", "/runs/x", "/runs?batch_id=x"):
            answer = down.get(path)
            assert (answer.status_code, answer.json()) == (503, {"detail": "database unavailable"})
    assert "no_such_database" in caplog.text and "OperationalError" in caplog.text

    broker = make_app(Settings(redis_url="redis://127.0.0.1:1/0"))
    unreachable = authorized(api_app(cluster, broker=broker))
    body = {"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": lookup_jobs("broker-down")}
    answer = unreachable.post("/batches", json=body)
    assert (answer.status_code, answer.json()) == (503, {"detail": "broker unavailable"})
    assert "Connection refused" not in answer.text
    # nothing was stored: once the broker is back, the same batch is queued, not "skipped"
    again = authorized(api_app(cluster)).post("/batches", json=body)
    assert again.status_code == 201 and again.json()["skipped"] == 0, again.text


def test_a_chunked_body_over_the_limit_is_413_on_a_route_that_reads_none(cluster: Cluster) -> None:
    chunk = b"x" * 10 * 1024  # 10 KiB over a 4 KiB limit, to a route that reads no body
    frame = b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunk), chunk)
    head = _head("POST", "/batches/b1/cancel", "Content-Type: application/json", "Transfer-Encoding: chunked")
    with serve_in_thread(api_app(cluster, max_body_bytes=4096)) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head + frame)
            answer = _read_head(sock)
    assert answer.startswith(b"HTTP/1.1 413 "), answer


def test_deep_job_inputs_are_422_and_no_later_read_breaks(client: TestClient, cluster: Cluster) -> None:
    jobs = lookup_jobs("deep-inputs")
    deep: object = "leaf"
    for _ in range(400):
        deep = {"k": deep}
    jobs[0]["inputs"] = {**jobs[0]["inputs"], "extra": deep}
    body = json.dumps({"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": jobs})
    answer = client.post("/batches", content=body, headers=JSON)
    assert answer.status_code == 422 and "nested deeper than 32 levels" in answer.text, answer.text
    assert len(answer.text) < 2000
    deeper: object = "leaf"
    for _ in range(650):
        deeper = [deeper]
    jobs[0]["inputs"] = {"key": "a", "extra": deeper}
    body = json.dumps({"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": jobs})
    assert client.post("/batches", content=body, headers=JSON).status_code == 422
    assert client.get("/runs", params={"batch_id": "x"}).status_code in (200, 404)


def test_a_root_with_an_overlong_component_is_422_naming_the_field_not_the_path(
    client: TestClient, cluster: Cluster
) -> None:
    long = "a" * 300
    for body in (
        {"bundle": str(BUNDLE), "root": f"{cluster.root}/{long}", "jobs": lookup_jobs("long")},
        {"bundle": f"{BUNDLE.parent}/{long}", "root": str(cluster.root), "jobs": lookup_jobs("long")},
    ):
        answer = client.post("/batches", json=body)
        assert answer.status_code in (403, 422), answer.text
        assert long not in answer.text and "255 bytes" in answer.text


def test_unknown_routes_and_methods_stay_4xx(client: TestClient) -> None:
    assert client.get("/nope", headers=AUTH).status_code == 404
    assert client.delete("/batches/x", headers=JSON).status_code == 405


def test_metrics_count_runs_batches_and_queues(client: TestClient, cluster: Cluster) -> None:
    scraped = client.get("/metrics")
    assert scraped.status_code == 200, scraped.text
    families = {family.name: family for family in text_string_to_metric_families(scraped.text)}
    queues = {sample.labels["queue_name"]: sample.value for sample in families["celery_queue_length"].samples}
    assert set(queues) == {"llm", "tools", "control"} and all(value >= 0 for value in queues.values())
    assert families["sa_broker_up"].samples[0].value == 1
    runs = {sample.labels["status"]: sample.value for sample in families["sa_runs"].samples}
    assert sum(runs.values()) == sum(cluster.store.status_counts()[0].values())
    assert authorized(api_app(cluster)).get("/metrics").status_code == 200
    assert TestClient(api_app(cluster)).get("/metrics").status_code == 401  # the token, as every route
