"""Getting a package: archives by name and version, a local folder, the cache, unpacking."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from eval_tiny_package import build_sdist

from structured_agents.evaluation import EvaluationError, parse_spec
from structured_agents.evaluation.fetch import archive_matches, fetch_package, package_cache
from structured_agents.evaluation.unpack import unpack
from structured_agents.settings import CACHE_DIR_ENV

SPEC = parse_spec("sa-eval-fixture==1.0")


def test_archives_match_by_normalised_name_and_version() -> None:
    assert archive_matches(Path("sa_eval_fixture-1.0.tar.gz"), SPEC)
    assert archive_matches(Path("SA.Eval.Fixture-1.0.0.zip"), SPEC)
    assert archive_matches(Path("sa_eval_fixture-1.0-py3-none-any.whl"), SPEC)
    assert not archive_matches(Path("sa_eval_fixture-1.1.tar.gz"), SPEC)
    assert not archive_matches(Path("sa_eval_fixture-1.0.tar.bz2"), SPEC)
    assert not archive_matches(Path("other-1.0.tar.gz"), SPEC)


def test_a_local_folder_gives_the_sdist_before_the_wheel(tmp_path: Path) -> None:
    for name in ("sa_eval_fixture-1.0-py3-none-any.whl", "sa_eval_fixture-1.0.tar.gz", "other-1.0.tar.gz"):
        (tmp_path / name).write_bytes(b"")
    assert fetch_package(SPEC, from_dir=tmp_path) == tmp_path / "sa_eval_fixture-1.0.tar.gz"
    (tmp_path / "sa_eval_fixture-1.0.tar.gz").unlink()
    assert fetch_package(SPEC, from_dir=tmp_path).name.endswith(".whl")


def test_a_package_missing_from_the_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match=r"sa-eval-fixture==1.0: no sdist or wheel of it in"):
        fetch_package(SPEC, from_dir=tmp_path)


def test_a_cached_archive_is_used_without_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    folder = package_cache() / "sa-eval-fixture-1.0"
    folder.mkdir(parents=True)
    (folder / "sa_eval_fixture-1.0.tar.gz").write_bytes(b"cached")

    assert package_cache() == tmp_path / "cache" / "eval" / "packages"
    assert fetch_package(SPEC).read_bytes() == b"cached"  # pip would fail: no such project


def test_an_sdist_unpacks_to_its_project_folder(tmp_path: Path) -> None:
    archive = build_sdist(tmp_path / "dist")
    root = unpack(archive, tmp_path / "unpacked")
    assert root == tmp_path / "unpacked" / "tinypkg-0.1.0"
    assert (root / "tinypkg" / "core.py").is_file()


def test_a_wheel_unpacks_in_place(tmp_path: Path) -> None:
    wheel = tmp_path / "sa_eval_fixture-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("fixture/__init__.py", "")
        zipped.writestr("sa_eval_fixture-1.0.dist-info/METADATA", "")
    root = unpack(wheel, tmp_path / "unpacked")
    assert root == tmp_path / "unpacked" and (root / "fixture" / "__init__.py").is_file()


def test_a_member_outside_the_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.py")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(EvaluationError, match=r"evil-1\.0\.tar\.gz: cannot unpack"):
        unpack(archive, tmp_path / "unpacked")
    assert not (tmp_path / "escaped.py").exists()


def test_an_unknown_archive_kind_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.rar"
    archive.write_bytes(b"")
    with pytest.raises(EvaluationError, match="not an archive this reads"):
        unpack(archive, tmp_path / "unpacked")
