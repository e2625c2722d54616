"""docker-compose.yml and the Dockerfiles, checked without Docker (there is no Docker engine here).

What would break ``docker compose up`` or leave the stack silently wrong: a Dockerfile or a
copied path that does not exist, a dependency on an unknown service or on a health check that
is not there, a GPU worker without its device reservation, a scaled service with a fixed name
or port, an ``SA_*`` variable the settings do not know, a bundle path the images do not mount.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from structured_agents.settings import load_settings

REPO = Path(__file__).resolve().parents[1]
COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]


def test_the_stack_has_every_part() -> None:
    assert set(SERVICES) == {
        "redis",
        "postgres",
        "migrations",
        "api",
        "flower",
        "beat",
        "cpu-worker",
        "gpu-worker",
        "cpu-model-worker",
    }


@pytest.mark.parametrize(
    "name", sorted({s["build"]["dockerfile"] for s in SERVICES.values() if "build" in s})
)
def test_dockerfiles_exist_and_copy_only_what_exists(name: str) -> None:
    dockerfile = REPO / name
    copies = re.findall(r"^COPY\s+(.+?)\s+\S+\s*$", dockerfile.read_text(encoding="utf-8"), re.MULTILINE)
    assert copies, name
    for sources in copies:
        for source in sources.split():
            assert (REPO / source).exists(), f"{name}: COPY {source}"


def test_dependencies_are_services_with_the_health_checks_they_wait_for() -> None:
    for name, service in SERVICES.items():
        for dependency, rule in (service.get("depends_on") or {}).items():
            assert dependency in SERVICES, f"{name} depends on unknown {dependency}"
            if rule["condition"] == "service_healthy":
                assert "healthcheck" in SERVICES[dependency], f"{name} waits for {dependency}'s health"
            if rule["condition"] == "service_completed_successfully":
                assert SERVICES[dependency].get("restart") == "no", f"{dependency} must run once"


def test_workers_run_the_right_queues_and_the_gpu_worker_gets_a_gpu() -> None:
    gpu = SERVICES["gpu-worker"]
    assert gpu["command"] == ["sa", "worker", "gpu"] and gpu["profiles"] == ["gpu"]
    (device,) = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
    assert gpu["environment"]["SA_ENGINE__NAME"] == "vllm"
    laptop = SERVICES["cpu-model-worker"]
    assert laptop["command"] == ["sa", "worker", "gpu"] and laptop["profiles"] == ["cpu"]
    assert laptop["environment"]["SA_ENGINE__NAME"] == "transformers"
    assert SERVICES["cpu-worker"]["command"][:3] == ["sa", "worker", "cpu"]
    for scaled in ("cpu-worker",):  # `--scale` needs no fixed name or host port
        assert "container_name" not in SERVICES[scaled] and "ports" not in SERVICES[scaled]


def test_every_sa_variable_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, service in SERVICES.items():
        environment = service.get("environment") or {}
        with monkeypatch.context() as env:
            for key, value in environment.items():
                if key.startswith("SA_"):
                    env.setenv(key, re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(value)))
            load_settings()  # raises ConfigError on an unknown or invalid SA_ variable
        assert any(key.startswith("SA_") for key in environment) or name in ("redis", "postgres"), name


def test_named_volumes_are_declared_and_bundles_mounted_where_the_header_says() -> None:
    declared = set(COMPOSE["volumes"])
    for service in SERVICES.values():
        for volume in service.get("volumes") or []:
            source = volume.split(":", 1)[0]
            if not source.startswith((".", "$", "~", "/")):
                assert source in declared, volume
    for name in ("api", "cpu-worker", "gpu-worker", "cpu-model-worker"):
        assert "./bundles:/bundles:ro" in SERVICES[name]["volumes"], name
    header = (REPO / "docker-compose.yml").read_text(encoding="utf-8").split("services:", 1)[0]
    for bundle in re.findall(r"/bundles/(\w+)", header):
        assert (REPO / "bundles" / bundle / "bundle.yaml").is_file(), f"/bundles/{bundle} in the header"
