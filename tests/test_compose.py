"""docker-compose.yml and the Dockerfiles, checked without Docker (tests/compose/ brings the stack up).

What would break ``docker-compose up`` or leave the stack silently wrong: a Dockerfile, a build
target or a copied path that does not exist, a path the package build needs that an image does
not copy (or the build context leaves out), defaults that differ between the compose file and a
Dockerfile, a dependency on an unknown service or on a health check that is not there, a GPU
worker without its device reservation, a scaled service with a fixed name or port, an ``SA_*``
variable the settings do not know, a bundle path the images do not mount, Flower without a login.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from structured_agents.settings import load_settings

REPO = Path(__file__).resolve().parents[1]
COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
BUILDS: dict[str, dict[str, Any]] = {name: s["build"] for name, s in SERVICES.items() if "build" in s}
DOCKERFILES = sorted({build.get("dockerfile", "Dockerfile") for build in BUILDS.values()})
IGNORED = [
    line.strip()
    for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]


def copied(dockerfile: str) -> list[str]:
    """Source paths of the Dockerfile's COPY instructions."""
    text = (REPO / dockerfile).read_text(encoding="utf-8")
    return [
        source
        for sources in re.findall(r"^COPY\s+(.+?)\s+\S+\s*$", text, re.MULTILINE)
        for source in sources.split()
    ]


def arg_default(dockerfile: str, name: str) -> str:
    """The default of build argument ``name`` in the Dockerfile."""
    found = re.search(rf"^ARG {name}=(\S*)$", (REPO / dockerfile).read_text(encoding="utf-8"), re.MULTILINE)
    assert found, f"{dockerfile} has no ARG {name} with a default"
    return found.group(1)


def interpolated_default(value: str) -> str:
    """The default of a compose value ``${VAR:-default}`` or ``${VAR-default}``."""
    found = re.fullmatch(r"\$\{\w+:?-([^}]*)\}", value)
    assert found, f"{value!r} is not ${{VAR:-default}}"
    return found.group(1)


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


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfiles_copy_what_exists_and_what_the_package_build_needs(name: str) -> None:
    sources = copied(name)
    for source in sources:
        assert (REPO / source).exists(), f"{name}: COPY {source}"
        assert source.rstrip("/") not in IGNORED, f"{name}: COPY {source}, left out by .dockerignore"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {"pyproject.toml", pyproject["project"]["readme"], *wheel["packages"], *wheel["force-include"]}
    assert needed <= {source.rstrip("/") for source in sources}, (
        f"{name} builds the package without all of it"
    )


def test_build_targets_exist_and_defaults_agree_with_the_dockerfiles() -> None:
    for name, build in BUILDS.items():
        dockerfile = build.get("dockerfile", "Dockerfile")
        text = (REPO / dockerfile).read_text(encoding="utf-8")
        if "target" in build:
            assert re.search(rf"^FROM \S+ AS {build['target']}$", text, re.MULTILINE), f"{name}: target"
        for arg, value in (build.get("args") or {}).items():
            assert interpolated_default(value) == arg_default(dockerfile, arg), f"{name}: {arg}"
    assert {build.get("target") for build in BUILDS.values() if "dockerfile" not in build} == {"app", "model"}


def test_base_images_can_be_replaced_and_the_context_leaves_out_local_state() -> None:
    assert SERVICES["redis"]["image"] == "${SA_REDIS_IMAGE:-redis:7-alpine}"
    assert SERVICES["postgres"]["image"] == "${SA_POSTGRES_IMAGE:-postgres:15}"
    for build in BUILDS.values():
        if "dockerfile" not in build:
            assert build["args"]["BASE_IMAGE"] == "${SA_BASE_IMAGE:-python:3.11-slim}"
    assert {"**/.venv", ".git", ".env", "**/__pycache__"} <= set(IGNORED)


def test_flower_wants_a_login() -> None:
    flower = SERVICES["flower"]
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")
    assert "FLOWER_UNAUTHENTICATED_API" not in flower["environment"]


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
                    value = re.sub(r"\$\{\w+:?-([^}]*)\}", r"\1", str(value))  # the default
                    env.setenv(key, re.sub(r"\$\{\w+:?\?[^}]*\}", "a-value-the-user-must-set", value))
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
