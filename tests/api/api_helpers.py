"""What the API tests share: the token, the settings of an API over the cluster, a client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery import Celery
from cluster_fixtures import BUNDLE, Cluster
from fastapi import FastAPI
from fastapi.testclient import TestClient

from structured_agents.api.app import create_app
from structured_agents.settings import ApiSettings, Settings
from structured_agents.store import Store

__all__ = ["AUTH", "JSON", "TOKEN", "api_app", "api_settings", "authorized", "lookup_jobs"]

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {"Content-Type": "application/json"}


def api_settings(roots: list[Path], **api: Any) -> Settings:
    """Settings of an API with the test token, ``roots`` and the test bundles' directory."""
    values: dict[str, Any] = {"token": TOKEN, "roots": roots, "bundle_dirs": [BUNDLE.parent], **api}
    return Settings(api=ApiSettings.model_validate(values))


def api_app(
    cluster: Cluster,
    roots: list[Path] | None = None,
    *,
    store: Store | None = None,
    broker: Celery | None = None,
    **api: Any,
) -> FastAPI:
    """An API over the cluster's database and broker (or ``store``, ``broker``)."""
    settings = api_settings([cluster.root] if roots is None else roots, **api)
    return create_app(settings, store=store or cluster.store, broker=broker or cluster.app)


def authorized(app: FastAPI) -> TestClient:
    """A client of ``app`` that sends the token."""
    return TestClient(app, headers=AUTH)


def lookup_jobs(*keys: str) -> list[dict[str, object]]:
    """Jobs of the test bundle, one per key (their files need not exist)."""
    return [{"kind": "lookup", "path": f"{key}.txt", "inputs": {"key": key}} for key in keys]
