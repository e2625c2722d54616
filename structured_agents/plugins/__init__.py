"""Model plugins: formatting, grammar building and parsing per model family."""

from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.plugins.registry import available_plugins, get_plugin, register_plugin

__all__ = ["ModelPlugin", "available_plugins", "get_plugin", "register_plugin"]
