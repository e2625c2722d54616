"""What a caller may point a batch at: roots under SA_API__ROOTS, bundles by name or under
SA_API__BUNDLE_DIRS, job paths inside their root; resolved (``..``, symlinks) before the check."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from api_helpers import AUTH, api_app, authorized, lookup_jobs
from cluster_fixtures import BUNDLE, SCRIPTED_DOCSTRING, Cluster
from fastapi.testclient import TestClient

from structured_agents.serve import serve_in_thread

SECRET = "hunter2-do-not-leak"
SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_project"


@dataclass
class Places:
    """An allowed root and bundle directory, and what lies outside them."""

    root: Path
    """The allowed root; holds ``project/`` (Python code), ``file.txt`` and ``escape`` (a
    symlink to ``outside``)."""
    outside: Path
    """A directory outside every allowed one, holding ``secret.py``."""
    bundles: Path
    """The allowed bundle directory: ``mine`` (a copy of the test bundle), ``link`` (a symlink to
    the test bundle outside), ``empty`` (no bundle.yaml)."""


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Places:
    base = tmp_path_factory.mktemp("api-paths")
    root, outside, bundles = base / "allowed", base / "outside", base / "bundles"
    for directory in (root, outside, bundles / "mine", bundles / "empty"):
        directory.mkdir(parents=True)
    (outside / "secret.py").write_text(f"def leak():\n    return {SECRET!r}\n", encoding="utf-8")
    (root / "file.txt").write_text("a file", encoding="utf-8")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    # one level down: job ids hold the path, and must differ from test_shipped_bundles' jobs
    shutil.copytree(SAMPLE, root / "project" / "api-copy")
    shutil.copy(BUNDLE / "bundle.yaml", bundles / "mine" / "bundle.yaml")
    (bundles / "link").symlink_to(BUNDLE, target_is_directory=True)
    return Places(root, outside, bundles)


@pytest.fixture(scope="module")
def client(cluster: Cluster, places: Places) -> TestClient:
    return authorized(api_app(cluster, [places.root], bundle_dirs=[places.bundles]))


def _batches(cluster: Cluster) -> int:
    return int(cluster.rows("SELECT count(*) FROM batches")[0][0])


def _refused(client: TestClient, cluster: Cluster, body: dict[str, object], status: int) -> str:
    """POST ``body``, expect ``status`` and no batch written; the answer's detail."""
    before = _batches(cluster)
    answer = client.post("/batches", json=body)
    assert answer.status_code == status, answer.text
    assert _batches(cluster) == before
    assert SECRET not in answer.text
    detail: str = answer.json()["detail"]
    return detail


@pytest.mark.parametrize(
    "root",
    [
        "/etc",
        "/",
        "{outside}",
        "{root}/../outside",
        "{root}/escape",
        "{root}/escape/missing",
        "{root}/project/../..",
    ],
)
def test_roots_outside_the_allowed_ones_are_403(
    client: TestClient, cluster: Cluster, places: Places, root: str
) -> None:
    text = root.format(root=places.root, outside=places.outside)
    # explicit jobs: were the check gone, nothing would walk "/" for jobs
    detail = _refused(client, cluster, {"bundle": "mine", "root": text, "jobs": lookup_jobs("k")}, 403)
    assert "outside the directories SA_API__ROOTS allows" in detail
    assert str(places.outside) not in detail or str(places.outside) in text  # a symlink's target stays hidden


def test_the_issue_case_reads_nothing_outside(client: TestClient, cluster: Cluster, places: Places) -> None:
    """``{"bundle": "docstring", "root": "/any/dir"}`` queued a batch whose results held the source."""
    for root in (places.outside, places.root / "escape"):
        detail = _refused(client, cluster, {"bundle": "docstring", "root": str(root)}, 403)
        assert "outside the directories SA_API__ROOTS allows" in detail


@pytest.mark.parametrize(
    ("root", "problem"),
    [
        ("{root}/missing", "no such directory"),
        ("{root}/file.txt", "not a directory"),
        ("allowed/project", "give an absolute path"),
    ],
)
def test_roots_inside_that_are_no_directory_are_422(
    client: TestClient, cluster: Cluster, places: Places, root: str, problem: str
) -> None:
    body = {"bundle": "docstring", "root": root.format(root=places.root)}
    assert problem in _refused(client, cluster, body, 422)


def test_without_roots_every_root_is_refused(cluster: Cluster, places: Places) -> None:
    client = authorized(api_app(cluster, []))
    detail = _refused(client, cluster, {"bundle": "docstring", "root": str(places.root)}, 403)
    assert "set SA_API__ROOTS" in detail


def test_a_shipped_bundle_by_name_over_an_allowed_root_runs(
    client: TestClient, cluster: Cluster, places: Places
) -> None:
    created = client.post("/batches", json={"bundle": "docstring", "root": str(places.root / "project")})
    assert created.status_code == 201, created.text
    batch_id = created.json()["batch_id"]
    cluster.wait(batch_id)
    results = client.get(f"/batches/{batch_id}/results").json()
    assert results and all(SCRIPTED_DOCSTRING in result["diff"] for result in results)
    assert client.get(f"/batches/{batch_id}").json()["root_path"] == str((places.root / "project").resolve())


def test_a_pipe_for_a_ruff_config_is_422_promptly_and_the_next_batch_runs(
    cluster: Cluster, places: Places
) -> None:
    """Over a real uvicorn server: discovery, which the API runs while it answers, had ruff
    wait for ever on a ``pyproject.toml`` that is a named pipe, holding the request's thread."""
    root = places.root / "piped"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "flags.py").write_text("import os\n\n\ndef known(email):\n    return email\n")
    os.mkfifo(root / "pkg" / "pyproject.toml")
    app = api_app(cluster, [places.root], bundle_dirs=[places.bundles])
    before = _batches(cluster)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, headers=AUTH, timeout=60) as client:
        answer = client.post("/batches", json={"bundle": "lint", "root": str(root)})
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"]
        assert detail == "pkg/pyproject.toml: not a regular file, where ruff reads its configuration"
        assert _batches(cluster) == before

        (root / "pkg" / "pyproject.toml").unlink()
        created = client.post("/batches", json={"bundle": "lint", "root": str(root)})
        assert created.status_code == 201, created.text
        assert created.json()["queued"] == 1
    cluster.wait(created.json()["batch_id"])


def test_a_lint_batch_reads_a_codebase_whose_ruff_config_fixes_without_writing_it(
    client: TestClient, cluster: Cluster, places: Places
) -> None:
    """``fix = true`` in the codebase's ruff config had discovery, run by the API, fix the
    caller's files while reading them; a file changes only through an explicit apply."""
    root = places.root / "fixing"
    root.mkdir()
    (root / "ruff.toml").write_text('fix = true\nunsafe-fixes = true\n[lint]\nselect = ["F", "E7"]\n')
    text = "import os\n\n\ndef ready(flag):\n    unused = 1\n    return flag == True\n"
    (root / "flags.py").write_text(text)

    created = client.post("/batches", json={"bundle": "lint", "root": str(root)})

    assert created.status_code == 201, created.text
    cluster.wait(created.json()["batch_id"])
    assert (root / "flags.py").read_text() == text


@pytest.mark.parametrize(
    "bundle", ["mine", "{bundles}/mine", "{bundles}/mine/bundle.yaml", "{bundles}/../bundles/mine"]
)
def test_bundles_by_name_or_under_the_bundle_dirs_are_taken(
    client: TestClient, cluster: Cluster, places: Places, bundle: str
) -> None:
    body = {
        "bundle": bundle.format(bundles=places.bundles),
        "root": str(places.root),
        "jobs": lookup_jobs("b"),
    }
    created = client.post("/batches", json=body)
    assert created.status_code == 201, created.text
    cluster.wait(created.json()["batch_id"])


@pytest.mark.parametrize(
    ("bundle", "status", "problem"),
    [
        ("/etc/passwd", 403, "outside the directories SA_API__BUNDLE_DIRS allows"),
        (str(BUNDLE), 403, "outside the directories SA_API__BUNDLE_DIRS allows"),
        ("{bundles}/link", 403, "outside the directories SA_API__BUNDLE_DIRS allows"),
        ("link", 403, "bundle: the path is outside the directories SA_API__BUNDLE_DIRS allows"),
        ("{bundles}/../allowed", 403, "outside the directories SA_API__BUNDLE_DIRS allows"),
        ("{bundles}/empty", 422, "not a bundle"),
        ("{bundles}/missing", 422, "no such bundle"),
        ("bundles/mine", 422, "give an absolute path"),
        (
            "no-such-bundle",
            422,
            "known bundles: docstring, docstring_calls, docstring_team, link, lint, mine;",
        ),
        ("..", 422, "bundle: no bundle of that name"),
    ],
)
def test_other_bundles_are_refused(
    client: TestClient, cluster: Cluster, places: Places, bundle: str, status: int, problem: str
) -> None:
    body = {
        "bundle": bundle.format(bundles=places.bundles),
        "root": str(places.root),
        "jobs": lookup_jobs("b"),
    }
    assert problem in _refused(client, cluster, body, status)


def test_without_bundle_dirs_bundles_go_by_shipped_name_only(cluster: Cluster, places: Places) -> None:
    client = authorized(api_app(cluster, [places.root], bundle_dirs=[]))
    body = {"bundle": str(places.bundles / "mine"), "root": str(places.root), "jobs": lookup_jobs("b")}
    assert "set SA_API__BUNDLE_DIRS" in _refused(client, cluster, body, 403)
    assert "known bundles: docstring, docstring_calls, docstring_team, lint;" in _refused(
        client, cluster, {**body, "bundle": "mine"}, 422
    )


def test_bundles_of_the_server_working_directory_are_not_found_by_name(
    client: TestClient, cluster: Cluster, places: Places, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bundles" / "cwd-bundle").mkdir(parents=True)
    shutil.copy(BUNDLE / "bundle.yaml", tmp_path / "bundles" / "cwd-bundle" / "bundle.yaml")
    monkeypatch.chdir(tmp_path)
    body = {"bundle": "cwd-bundle", "root": str(places.root), "jobs": lookup_jobs("b")}
    assert "bundle: no bundle of that name" in _refused(client, cluster, body, 422)


@pytest.mark.parametrize(
    "path", ["../outside/secret.py", "escape/secret.py", "/etc/passwd", "project/../../x"]
)
def test_job_paths_must_stay_inside_the_root(
    client: TestClient, cluster: Cluster, places: Places, path: str
) -> None:
    jobs = [*lookup_jobs("fine"), {"kind": "lookup", "path": path, "inputs": {"key": "k"}}]
    detail = _refused(client, cluster, {"bundle": "mine", "root": str(places.root), "jobs": jobs}, 403)
    assert detail.startswith("job paths must stay inside the root: job 2: path")


def test_job_inputs_the_templates_cannot_take_are_422_naming_the_job_and_the_next_batch_runs(
    client: TestClient, cluster: Cluster, places: Places
) -> None:
    """A ``source`` that is no text, none at all, or a nested mapping: the bundle's ``outline``
    filter once raised a TypeError there (a 500). Each is refused naming the job and the
    template line, nothing is stored, and an ordinary batch right after is taken at once."""
    root = str(places.root / "project")
    deep: object = "x"
    for _ in range(5):  # under the depth limit: the template is what refuses it
        deep = {"d": deep}
    for source, why in (
        (3, "filter outline takes text, got int"),
        (None, "'source' is undefined"),
        (deep, "got dict"),
    ):
        inputs = {"path": "a.py", "qualname": "f"} | ({} if source is None else {"source": source})
        body = {
            "bundle": "docstring",
            "root": root,
            "jobs": [{"kind": "docstring", "path": "a.py", "inputs": inputs}],
        }
        detail = _refused(client, cluster, body, 422)
        assert "job 1 (a.py <module>): inputs: docstring/prompts/user.j2:2" in detail and why in detail, (
            detail
        )
    started = time.monotonic()
    ordinary = client.post(
        "/batches", json={"bundle": "mine", "root": str(places.root), "jobs": lookup_jobs("after-bad")}
    )
    assert ordinary.status_code == 201 and time.monotonic() - started < 5
    cluster.wait(ordinary.json()["batch_id"])
