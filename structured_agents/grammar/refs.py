"""Local ``$ref`` pointers of a tool's JSON schema (``#``, ``#/$defs/...``), followed with
``referencing`` (the library the tool registry resolves its named schemas with), for every
plugin that turns a schema into a call grammar or reads values back against it."""

from __future__ import annotations

from typing import Any

import referencing
import referencing.exceptions

__all__ = ["resolve_ref"]

_RESOLVER = referencing.Registry().resolver()


def resolve_ref(root: Any, ref: str) -> Any:
    """The part of ``root`` the local JSON pointer ``ref`` names, or None when ``ref`` is not
    local or names nothing."""
    if ref != "#" and not ref.startswith("#/"):
        return None
    try:
        return referencing.Resource.opaque(root).pointer(ref[1:], _RESOLVER).contents
    except referencing.exceptions.Unresolvable:
        return None
