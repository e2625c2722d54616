"""Where structured-agents keeps its own files, in the user's directories (platformdirs).

* the cache: converted models, ``.pym`` check results; the ``cache_dir`` setting
  (``SA_CACHE_DIR`` or ``STRUCTURED_AGENTS_CACHE_DIR``) overrides it;
* the data directory: the embedded store (the SQLite file of ``sa run``).
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

from structured_agents.settings import load_settings

__all__ = ["APP_NAME", "cache_dir", "data_dir"]

APP_NAME = "structured-agents"


def cache_dir() -> Path:
    """The configured cache root (see :class:`~structured_agents.settings.Settings`), else the
    platform's user cache directory."""
    configured = load_settings().cache_dir
    return configured.expanduser() if configured is not None else Path(platformdirs.user_cache_dir(APP_NAME))


def data_dir() -> Path:
    """The platform's user data directory."""
    return Path(platformdirs.user_data_dir(APP_NAME))
