"""``GET /batches/{id}/report``: the page ``sa report`` writes, served by the API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from scripted_batch import Filled

from structured_agents.api.app import create_app
from structured_agents.settings import ApiSettings, Settings

TOKEN = "report-token-0123456789"


@pytest.fixture
def client(sqlite_filled: Filled) -> Iterator[TestClient]:
    store, _ = sqlite_filled
    settings = Settings(database_url=store.url, api=ApiSettings(token=TOKEN))
    with TestClient(create_app(settings, store=store)) as test_client:
        test_client.headers["Authorization"] = f"Bearer {TOKEN}"
        yield test_client


def test_the_report_needs_the_token(client: TestClient, sqlite_filled: Filled) -> None:
    _, batch = sqlite_filled
    response = client.get(f"/batches/{batch.batch_id}/report", headers={"Authorization": "Bearer wrong"})

    assert response.status_code == 401 and "Batch" not in response.text


def test_the_api_serves_the_report_page(client: TestClient, sqlite_filled: Filled) -> None:
    _, batch = sqlite_filled
    response = client.get(f"/batches/{batch.batch_id}/report")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert f"Batch <code>{batch.batch_id}</code>" in response.text
    assert response.text.count('<img src="data:image/svg+xml;base64,') == 6
    # no model was given with the batch: the page names the one that decoded its turns
    assert "<dt>model</dt><dd>scripted</dd>" in response.text


def test_the_report_of_an_unknown_batch_is_a_404(client: TestClient) -> None:
    response = client.get("/batches/nope/report")

    assert response.status_code == 404 and "nope" in response.json()["detail"]


def test_the_report_route_is_documented_as_html(client: TestClient) -> None:
    route = client.get("/openapi.json").json()["paths"]["/batches/{batch_id}/report"]["get"]

    assert "text/html" in route["responses"]["200"]["content"]
