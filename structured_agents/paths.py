"""Where structured-agents keeps its own files, in the user's directories (platformdirs).

* the cache: converted models, ``.pym`` check results; ``$STRUCTURED_AGENTS_CACHE_DIR``
  overrides it (a container's volume, a CI cache);
* the data directory: the embedded store (the SQLite file of ``sa run``).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

__all__ = ["APP_NAME", "CACHE_DIR_ENV", "cache_dir", "data_dir"]

APP_NAME = "structured-agents"
CACHE_DIR_ENV = "STRUCTURED_AGENTS_CACHE_DIR"
"""Environment variable that overrides the cache root (an explicit directory argument wins)."""


def cache_dir() -> Path:
    """``$STRUCTURED_AGENTS_CACHE_DIR`` when set, else the platform's user cache directory."""
    override = os.environ.get(CACHE_DIR_ENV)
    return Path(override).expanduser() if override else Path(platformdirs.user_cache_dir(APP_NAME))


def data_dir() -> Path:
    """The platform's user data directory."""
    return Path(platformdirs.user_data_dir(APP_NAME))
