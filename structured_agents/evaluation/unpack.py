"""Unpack a package archive (sdist or wheel) into a scratch folder.

Tar members go through :func:`tarfile.data_filter` (no links out of the folder, no absolute
paths, no device files); zip members are sanitised by :mod:`zipfile` itself. An sdist holds
one ``NAME-VERSION/`` folder, which is the project root; a wheel's root is the folder itself.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

from structured_agents.evaluation.errors import EvaluationError

__all__ = ["unpack"]


def unpack(archive: Path, dest: Path) -> Path:
    """Extract ``archive`` into the new folder ``dest``; the project root inside it."""
    dest.mkdir(parents=True)
    try:
        if archive.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(dest, filter="data")
        elif archive.name.endswith((".zip", ".whl")):
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(dest)
        else:
            raise EvaluationError(f"{archive}: not an archive this reads (.tar.gz, .zip, .whl)")
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise EvaluationError(f"{archive}: cannot unpack: {exc}") from exc
    entries = list(dest.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else dest
