"""Who may call the API: the bearer token on every route, no start without one, JSON-only
state changes, CORS only for configured origins (over the real cluster's PostgreSQL and Redis)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from api_helpers import AUTH, JSON, TOKEN, api_app, authorized, lookup_jobs
from cluster_fixtures import BUNDLE, Cluster
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from structured_agents.api.app import create_app
from structured_agents.errors import ConfigError
from structured_agents.settings import ApiSettings, Settings

DOCS = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
"""The only routes open without the token."""
FORMS = [
    None,
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "text/json",
]
"""Content types refused on state changes (None: no Content-Type header)."""
WRONG = [
    {},
    {"Authorization": "Bearer wrong-token-0123456789abcdef"},
    {"Authorization": f"Bearer {TOKEN}x"},
    {"Authorization": f"Basic {TOKEN}"},
    {"Authorization": "Bearer"},
]


def test_every_route_but_the_docs_requires_the_token(cluster: Cluster) -> None:
    app = api_app(cluster)
    anonymous = TestClient(app)
    checked = 0
    for route in app.routes:
        if not isinstance(route, APIRoute):
            assert getattr(route, "path", None) in DOCS, route
            assert anonymous.get(getattr(route, "path", "")).status_code == 200, route
            continue
        path = re.sub(r"\{\w+\}", "some-id", route.path)
        for method in sorted(route.methods):
            for headers in WRONG:
                answer = anonymous.request(method, path, headers={**headers, **JSON})
                assert answer.status_code == 401, (method, path, headers, answer.text)
                assert answer.headers["WWW-Authenticate"] == "Bearer"
                assert answer.json() == {"detail": "missing or wrong bearer token"}
            checked += 1
    assert checked >= 7
    assert anonymous.get("/batches/some-id", headers=AUTH).status_code == 404


def test_openapi_declares_the_bearer_scheme_on_every_operation(cluster: Cluster) -> None:
    schema = TestClient(api_app(cluster)).get("/openapi.json").json()
    scheme = schema["components"]["securitySchemes"]["HTTPBearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    operations = [op for path in schema["paths"].values() for op in path.values()]
    assert len(operations) >= 7
    assert all(op["security"] == [{"HTTPBearer": []}] for op in operations)


def test_the_api_does_not_start_without_a_token(cluster: Cluster) -> None:
    with pytest.raises(ConfigError, match="SA_API__TOKEN is not set"):
        create_app(Settings(api=ApiSettings()), store=cluster.store, broker=cluster.app)
    both = ApiSettings(auth="none", token=TOKEN)
    with pytest.raises(ConfigError, match="SA_API__AUTH=none and SA_API__TOKEN are both set"):
        create_app(Settings(api=both), store=cluster.store, broker=cluster.app)
    env = {name: value for name, value in os.environ.items() if not name.startswith("SA_API__")}
    served = subprocess.run(
        [sys.executable, "-m", "uvicorn", "--factory", "structured_agents.api.app:create_app", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert served.returncode != 0
    assert "SA_API__TOKEN is not set" in served.stderr


def test_auth_none_serves_without_a_token(cluster: Cluster) -> None:
    settings = Settings(api=ApiSettings(auth="none", roots=(cluster.root,)))
    open_api = TestClient(create_app(settings, store=cluster.store, broker=cluster.app))
    assert open_api.get("/batches/some-id").status_code == 404
    assert "securitySchemes" not in open_api.get("/openapi.json").json().get("components", {})


def test_state_changes_without_a_json_content_type_are_415_and_change_nothing(cluster: Cluster) -> None:
    client = authorized(api_app(cluster))
    body = {"bundle": str(BUNDLE), "root": str(cluster.root), "jobs": lookup_jobs("cancel-415")}
    batch_id = client.post("/batches", json=body).json()["batch_id"]
    cluster.wait(batch_id)  # a cancel would now mark the finished batch cancelled
    batches = cluster.rows("SELECT count(*) FROM batches")
    for content_type in FORMS:  # what a browser sends cross-origin without a preflight, and no type
        headers = {} if content_type is None else {"Content-Type": content_type}
        refused = client.post(f"/batches/{batch_id}/cancel", headers=headers, content=b"a=1")
        assert refused.status_code == 415, (content_type, refused.text)
        assert "Content-Type: application/json" in refused.json()["detail"]
        refused = client.post("/batches", headers=headers, content=json.dumps(body))
        assert refused.status_code == 415, (content_type, refused.text)
    assert cluster.store.get_batch(batch_id).status == "finished"
    assert cluster.rows("SELECT count(*) FROM batches") == batches


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "application/merge-patch+json"])
def test_json_content_types_pass(cluster: Cluster, content_type: str) -> None:
    client = authorized(api_app(cluster))
    answer = client.post("/batches/some-id/cancel", headers={"Content-Type": content_type})
    assert answer.status_code == 404, answer.text


def test_cors_is_off_unless_origins_are_configured(cluster: Cluster) -> None:
    preflight = {
        "Origin": "https://ui.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    closed = authorized(api_app(cluster))
    assert "access-control-allow-origin" not in closed.options("/batches", headers=preflight).headers
    assert (
        "access-control-allow-origin"
        not in closed.get("/batches/x", headers={"Origin": "https://ui.example"}).headers
    )

    opened = authorized(api_app(cluster, cors_origins=["https://ui.example"]))
    allowed = opened.options("/batches", headers=preflight)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://ui.example"
    other = opened.options("/batches", headers={**preflight, "Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    read = opened.get("/batches/x", headers={"Origin": "https://ui.example"})
    assert read.headers["access-control-allow-origin"] == "https://ui.example"
