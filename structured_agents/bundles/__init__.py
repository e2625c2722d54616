"""Bundles: an agent packaged as a manifest, ``.pym`` tools, prompts and worked examples.

``load_bundle(name_or_path)`` validates the manifest, resolves every tool through its
registries, checks the plugin and grammar mode, compiles the prompts, and returns a
:class:`Bundle` that builds kernels and renders each job's first messages.
"""

from __future__ import annotations

from structured_agents.bundles.finder import bundle_search_path, find_bundle, list_bundles
from structured_agents.bundles.loader import Bundle, load_bundle
from structured_agents.bundles.manifest import BundleError, BundleManifest, load_manifest
from structured_agents.bundles.toolset import BundleToolSource

__all__ = [
    "Bundle",
    "BundleError",
    "BundleManifest",
    "BundleToolSource",
    "bundle_search_path",
    "find_bundle",
    "list_bundles",
    "load_bundle",
    "load_manifest",
]
