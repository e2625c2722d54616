"""Get a package's archive: from the cache, from a local folder, or with ``pip download``.

::

    archive = fetch_package(parse_spec("humanize==4.9.0"))            # cached after the first
    archive = fetch_package(spec, from_dir=Path("dist"))               # no network at all

``pip download --no-deps --no-binary NAME`` fetches the sdist (the source as released, tests
included); a package without one falls back to its wheel (``--only-binary :all:``). Only the
package itself is built from source: ``--no-binary :all:`` would build pip's build
dependencies (hatchling, setuptools...) from source too, which takes minutes. Downloads are
kept in ``<cache>/eval/packages/NAME-VERSION/``, so a second run needs no network.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from structured_agents.evaluation.errors import EvaluationError
from structured_agents.evaluation.packages import PackageSpec
from structured_agents.paths import cache_dir

__all__ = ["DOWNLOAD_TIMEOUT_S", "archive_matches", "fetch_package", "package_cache"]

DOWNLOAD_TIMEOUT_S = 600
"""Longest one ``pip download`` may take (it may build the sdist's metadata)."""


def package_cache() -> Path:
    """Where downloaded archives are kept."""
    return cache_dir() / "eval" / "packages"


def archive_matches(path: Path, spec: PackageSpec) -> bool:
    """Whether ``path`` is an sdist (``.tar.gz``, ``.zip``) or wheel of exactly ``spec``."""
    try:
        if path.name.endswith(".whl"):
            name, version, *_ = parse_wheel_filename(path.name)
        elif path.name.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(path.name)
        else:
            return False
        return canonicalize_name(name) == spec.name and version == Version(spec.version)
    except (InvalidSdistFilename, InvalidWheelFilename, InvalidVersion):
        return False


def _found(folder: Path, spec: PackageSpec) -> Path | None:
    """The sdist of ``spec`` in ``folder``, else its wheel, else None."""
    if not folder.is_dir():
        return None
    matches = sorted(path for path in folder.iterdir() if path.is_file() and archive_matches(path, spec))
    sdists = [path for path in matches if not path.name.endswith(".whl")]
    return (sdists or matches)[0] if matches else None


def _pip_download(spec: PackageSpec, dest: Path, *options: str) -> str | None:
    """Run ``pip download`` of ``spec`` into ``dest``; None when it worked, else pip's last words."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    command += ["--dest", str(dest), *options, str(spec)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {DOWNLOAD_TIMEOUT_S} s"
    except OSError as exc:
        return f"cannot run pip: {exc}"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
    return " / ".join(lines[-3:]) or f"exit {done.returncode}"


def _download(spec: PackageSpec, folder: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{spec.name}-") as temp:
        staging = Path(temp) / "archive"
        problem = _pip_download(spec, staging, "--no-binary", spec.name)
        if problem is not None:  # no sdist: the wheel still has the code
            wheel_problem = _pip_download(spec, staging, "--only-binary", ":all:")
            if wheel_problem is not None:
                raise EvaluationError(
                    f"package {spec}: pip download failed: sdist: {problem}; wheel: {wheel_problem}"
                )
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    archive = _found(folder, spec)
    if archive is None:
        raise EvaluationError(f"package {spec}: pip download left no archive of it in {folder}")
    return archive


def fetch_package(spec: PackageSpec, *, from_dir: Path | None = None) -> Path:
    """The archive of ``spec``: found in ``from_dir`` when given (never downloading), else the
    cached download, else downloaded now (and cached)."""
    if from_dir is not None:
        archive = _found(from_dir, spec)
        if archive is None:
            raise EvaluationError(
                f"package {spec}: no sdist or wheel of it in {from_dir} (NAME-VERSION.tar.gz, .zip or .whl)"
            )
        return archive
    folder = package_cache() / f"{spec.name}-{spec.version}"
    return _found(folder, spec) or _download(spec, folder)
