"""Walking a codebase the way git sees it.

``.gitignore`` files are honoured at every level, with git's precedence: a pattern in a deeper
``.gitignore`` overrides one above it, the last matching pattern in a file wins, ``!`` re-includes,
and nothing inside an ignored directory is visited (git cannot re-include it either). The
directories ``.git``, ``.venv`` and ``__pycache__`` are always skipped, and symbolic links are
never followed. Only regular files of at most :data:`~structured_agents.jobs.source.MAX_FILE_BYTES`
come out (a larger one is logged): no task reads more, and the lint discovery would otherwise
have ruff read every one of them whole. Files come out in a stable order (each
directory sorted, files before subdirectories), as POSIX paths relative to the root.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from pathspec import GitIgnoreSpec

from structured_agents.jobs.errors import DiscoveryError
from structured_agents.jobs.source import MAX_FILE_BYTES, read_regular

__all__ = ["ALWAYS_SKIPPED", "iter_source_files"]

logger = logging.getLogger(__name__)

ALWAYS_SKIPPED = frozenset({".git", ".venv", "__pycache__"})


class _IgnoreRules:
    """The ``.gitignore`` specs seen so far, keyed by their directory (relative to the root)."""

    def __init__(self) -> None:
        self._specs: dict[PurePosixPath, GitIgnoreSpec] = {}

    def load(self, directory: Path, relative: PurePosixPath) -> None:
        try:
            lines = read_regular(directory / ".gitignore").decode("utf-8", "replace").splitlines()
        except OSError:  # none, or no regular file
            return
        self._specs[relative] = GitIgnoreSpec.from_lines(lines)

    def ignored(self, path: PurePosixPath, *, is_dir: bool) -> bool:
        verdict = False
        for base in reversed(path.parents):  # the root first, the deepest directory last
            spec = self._specs.get(base)
            if spec is None:
                continue
            relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            include = spec.check_file(relative).include
            if include is not None:
                verdict = include
        return verdict


def iter_source_files(root: Path, suffixes: tuple[str, ...] = (".py",)) -> Iterator[PurePosixPath]:
    """Relative paths of the files under ``root`` with one of ``suffixes`` that git would not ignore."""
    if not root.is_dir():
        raise DiscoveryError(f"codebase root {root} is not a directory")
    rules = _IgnoreRules()
    for dirpath, dirnames, filenames in os.walk(root):
        directory = Path(dirpath)
        relative = PurePosixPath(directory.relative_to(root).as_posix())
        rules.load(directory, relative)
        dirnames[:] = sorted(
            name
            for name in dirnames
            if name not in ALWAYS_SKIPPED
            and not (directory / name).is_symlink()
            and not rules.ignored(relative / name, is_dir=True)
        )
        for name in sorted(filenames):
            if not name.endswith(suffixes) or rules.ignored(relative / name, is_dir=False):
                continue
            try:
                status = os.lstat(directory / name)
            except OSError:  # gone since the folder was listed
                continue
            if not stat.S_ISREG(status.st_mode):
                continue
            if status.st_size > MAX_FILE_BYTES:
                logger.info("skipping %s: %d bytes, over %d", relative / name, status.st_size, MAX_FILE_BYTES)
                continue
            yield relative / name
