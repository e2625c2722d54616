"""On-disk cache of check results and schemas, keyed by the SHA-256 of a script's content.

Where the cache lives, first match wins:

1. the ``directory`` given to :class:`PymCache`;
2. the ``cache_dir`` setting (``SA_CACHE_DIR`` or ``STRUCTURED_AGENTS_CACHE_DIR``);
3. the platform's user cache dir (``~/.cache/structured-agents`` on Linux).

Entries live under ``<dir>/pym/<first two hex digits>/<hash>.json`` and are written atomically
(temp file, then rename), so concurrent workers may share a directory. Entries of another
format version, or unreadable ones, count as misses and are rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from structured_agents.paths import cache_dir
from structured_agents.types import JsonDict

__all__ = ["CACHE_FORMAT", "PymCache", "content_hash"]

CACHE_FORMAT = 1
"""Bump when the checker or the entry layout changes: old entries then miss."""


def content_hash(source: str) -> str:
    """The cache key of a source text (its checker format version included)."""
    digest = hashlib.sha256(f"pym-cache-{CACHE_FORMAT}\0".encode())
    digest.update(source.encode("utf-8"))
    return digest.hexdigest()


class PymCache:
    """JSON entries by content hash; ``hits`` and ``misses`` count lookups of this instance."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = (Path(directory) if directory is not None else cache_dir()) / "pym"
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> JsonDict | None:
        """The entry stored under ``key``, or None (a miss) when absent or unreadable."""
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            entry = None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, entry: JsonDict) -> None:
        """Store ``entry`` under ``key``; a cache that cannot be written is skipped silently."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({**entry, "format": CACHE_FORMAT}, handle)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
