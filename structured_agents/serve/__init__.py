"""``sa serve``: an OpenAI-compatible HTTP endpoint backed by any engine (see :mod:`.app`)."""

from structured_agents.serve.app import create_app
from structured_agents.serve.thread import serve_in_thread

__all__ = ["create_app", "serve_in_thread"]
