"""The repository's docker-compose.yml, driven for the tests through Debian's docker-compose.

``docker_problem()`` makes Docker usable here (``scripts/docker.sh ready`` installs docker.io and
docker-compose and starts dockerd) or says why it cannot; ``base_images()`` names the images the
stack builds on (the upstream ones, or local ones built from a debootstrap rootfs when no image
registry answers). ``ComposeStack`` is one compose project: build, up, health, SQL through psql in
its ``postgres`` service, logs, and down with its volumes. ``remove_abandoned()`` takes down the
stacks of test runs that were killed before their own teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PROJECT_PREFIX",
    "REPO",
    "TIMINGS",
    "ComposeStack",
    "base_images",
    "docker_problem",
    "remove_abandoned",
]

REPO = Path(__file__).resolve().parents[2]
DOCKER_SH = REPO / "scripts" / "docker.sh"
PROJECT_PREFIX = "sa-test-"
"""Compose projects of this test are named PREFIX + the pid of the pytest process."""
TIMINGS: dict[str, float] = {}
"""Seconds each phase of the compose test took, in order (printed at the end of the session)."""


def docker_problem() -> str | None:
    """None when Docker and docker-compose are usable (installing and starting them if need be),
    else why not, in scripts/docker.sh's words."""
    try:
        done = subprocess.run(["bash", str(DOCKER_SH), "ready"], capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return "scripts/docker.sh ready did not finish in 15 minutes"
    if done.returncode == 0:
        return None
    return f"Docker cannot run here: {(done.stderr or done.stdout).strip()[-2000:]}"


def base_images() -> dict[str, str]:
    """``SA_BASE_IMAGE``, ``SA_REDIS_IMAGE`` and ``SA_POSTGRES_IMAGE`` for the stack."""
    done = subprocess.run(
        ["bash", str(DOCKER_SH), "base-images"], capture_output=True, text=True, timeout=1800, check=False
    )
    assert done.returncode == 0, f"scripts/docker.sh base-images failed:\n{done.stderr[-4000:]}"
    return dict(line.split("=", 1) for line in done.stdout.split())


@dataclass
class ComposeStack:
    """One project of docker-compose.yml with the given interpolation variables."""

    project: str
    variables: dict[str, str]
    profile: str = "cpu"
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.env = {**os.environ, **self.variables}

    def compose(
        self, *args: str, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``docker-compose ARGS`` on this project; AssertionError with its output when it fails."""
        command = ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "-p", self.project]
        done = subprocess.run(
            [*command, "--profile", self.profile, *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"docker-compose {' '.join(args)} failed:\n{(done.stderr + done.stdout)[-4000:]}"
            )
        return done

    def state(self, service: str) -> dict[str, Any]:
        """``docker inspect``'s State of the service's (first) container; {} when it has none."""
        container = self.compose("ps", "-q", service).stdout.split()
        if not container:
            return {}
        out = subprocess.run(
            ["docker", "inspect", "-f", "{{json .State}}", container[0]], capture_output=True, text=True
        )
        return dict(json.loads(out.stdout)) if out.returncode == 0 else {}

    def healthy(self, service: str) -> bool:
        """Whether the service's container reports itself healthy."""
        return self.state(service).get("Health", {}).get("Status") == "healthy"

    def sql(self, query: str) -> list[dict[str, Any]]:
        """Rows of ``query`` on the stack's database, as dicts (through psql in ``postgres``)."""
        wrapped = f"SELECT coalesce(json_agg(q), '[]') FROM ({query}) q"
        psql = ["psql", "-U", "sa", "-d", "sa", "-At", "-v", "ON_ERROR_STOP=1", "-c", wrapped]
        return list(json.loads(self.compose("exec", "-T", "postgres", *psql).stdout))

    def logs(self) -> str:
        """Every service's log."""
        return self.compose("logs", "--no-color", "--timestamps", check=False).stdout

    def down(self) -> None:
        """Stop and remove the containers, networks and volumes of the project."""
        self.compose("down", "--volumes", "--remove-orphans", "--timeout", "10", timeout=300)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_abandoned(variables: dict[str, str]) -> list[str]:
    """Take down the stacks of this test whose pytest process is gone; their project names."""
    listed = subprocess.run(
        ["docker", "ps", "-a", "--format", '{{.Label "com.docker.compose.project"}}'],
        capture_output=True,
        text=True,
        check=False,
    )
    pattern = re.compile(rf"^{re.escape(PROJECT_PREFIX)}(\d+)$")
    abandoned = sorted(
        {name for name in listed.stdout.split() if (m := pattern.match(name)) and not _alive(int(m.group(1)))}
    )
    for project in abandoned:
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            ComposeStack(project, variables).down()
    return abandoned
