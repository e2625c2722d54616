"""The HTTP API over the real cluster: enqueue, follow, read runs, events and results, cancel."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from api_helpers import JSON, api_app, authorized, lookup_jobs
from cluster import wait_for
from cluster_fixtures import BUNDLE, Cluster
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families


@pytest.fixture(scope="module")
def client(cluster: Cluster) -> Iterator[TestClient]:
    """A client of the API over the cluster's database and broker, sending the token."""
    with authorized(api_app(cluster)) as test_client:
        yield test_client


def test_enqueue_follow_and_read_a_batch(cluster: Cluster, client: TestClient) -> None:
    body = {"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": lookup_jobs("api-1", "api-2", "api-3")}
    created = client.post("/batches", json=body)
    assert created.status_code == 201, created.text
    batch_id = created.json()["batch_id"]
    assert created.json()["queued"] == 3
    # the last run's status commits before the batch moves to finished (two transactions)
    wait_for("the batch", lambda: client.get(f"/batches/{batch_id}").json()["status"] == "finished", 60, 0.3)
    batch = client.get(f"/batches/{batch_id}").json()
    assert batch["counts"] == {"succeeded": 3} and batch["done"]

    page = client.get("/runs", params={"batch_id": batch_id, "limit": 2}).json()
    assert len(page["items"]) == 2 and page["next_offset"] == 2
    rest = client.get("/runs", params={"batch_id": batch_id, "limit": 2, "offset": 2}).json()
    assert len(rest["items"]) == 1 and rest["next_offset"] is None
    assert client.get("/runs", params={"batch_id": batch_id, "status": "failed"}).json()["items"] == []

    run_id = page["items"][0]["id"]
    run = client.get(f"/runs/{run_id}").json()
    assert [turn["turn"] for turn in run["turns"]] == [1, 2]
    assert [call["name"] for call in run["tool_calls"]] == ["lookup", "submit_result"]
    first = client.get(f"/runs/{run_id}/events", params={"limit": 5}).json()
    second = client.get(f"/runs/{run_id}/events", params={"after_id": first["next_after_id"]}).json()
    kinds = [event["type"] for event in first["items"] + second["items"]]
    assert kinds[0] == "kernel_start" and kinds[-1] == "kernel_end" and len(kinds) == 12

    results = client.get(f"/batches/{batch_id}/results").json()
    assert [result["summary"] for result in results] == ["done"] * 3

    port = cluster.gpu.env["SA_WORKERS__METRICS_PORT"]
    scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)  # the llm worker's own
    assert scraped.status_code == 200
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.text)
        for sample in family.samples
    }
    assert samples[("sa_turns_total", (("outcome", "committed"),))] >= 6  # two turns a run
    assert samples[("sa_turn_seconds_count", ())] >= 6 and samples[("sa_generation_tokens_total", ())] > 0


def test_malformed_jobs_and_unknown_ids(cluster: Cluster, client: TestClient) -> None:
    bad = {"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": [{"kind": "lookup"}]}
    assert client.post("/batches", json=bad).status_code == 422
    undefined = {"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": [{"kind": "x", "path": "p"}]}
    refused = client.post("/batches", json=undefined)
    assert refused.status_code == 422 and "'key' is undefined" in refused.json()["detail"]
    assert client.get("/batches/nope").status_code == 404
    assert client.get("/runs/nope/events").status_code == 404
    schema = client.get("/openapi.json").json()
    assert "RunDetail" in schema["components"]["schemas"]


def test_cancel_a_batch(cluster: Cluster, client: TestClient) -> None:
    jobs = lookup_jobs(*(f"SLOW-c{i}" for i in range(6)))
    body = {"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": jobs}
    batch_id = client.post("/batches", json=body).json()["batch_id"]
    cancelled = client.post(f"/batches/{batch_id}/cancel", headers=JSON).json()
    assert cancelled["cancelled"] >= 1
    wait_for("the cancelled batch", lambda: client.get(f"/batches/{batch_id}").json()["done"], 30, 0.3)
    batch = client.get(f"/batches/{batch_id}").json()
    assert batch["status"] == "cancelled"
    assert batch["counts"].get("cancelled", 0) == cancelled["cancelled"]
