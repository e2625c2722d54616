"""Reading and writing registry files (JSON or YAML), with errors that say where.

``.json`` files are read with :mod:`json`; anything else as YAML, keeping the line and column
of every node, so an error in a YAML file reads ``registry.yaml:12:7: tools[3].inputSchema.$ref:
...``; in a JSON file, ``registry.json: tools[3].inputSchema.$ref: ...``. Files are written as
JSON or YAML by their extension, camelCase keys, only the fields the document sets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from structured_agents.errors import ConfigError
from structured_agents.registry.errors import RegistryError, format_loc
from structured_agents.registry.models import RegistryDocument
from structured_agents.yaml_lines import LocatedYaml, load_located_yaml

__all__ = ["RawDocument", "parse_document", "read_document", "write_document"]

_UNION_TAG = re.compile(r"^(str|int|float|bool|none|list\[.*\]|dict\[.*\]|function-\w+\[.*\])$")
"""Pydantic adds the union member tried to an error's location; the file has no such key."""


@dataclass(frozen=True, slots=True)
class RawDocument:
    """A document as read, before validation, and how to say where a location is in it."""

    source: str
    """The file name, or ``<dict>`` for data given in memory."""
    data: Any
    located: LocatedYaml | None = None

    def where(self, loc: Sequence[str | int]) -> str:
        """``file:line:col`` of ``loc`` in a YAML file, else the file name."""
        return self.located.where(loc) if self.located is not None else self.source

    def locate(self, error: RegistryError) -> RegistryError:
        """``error`` with this document's file (and line) in its message."""
        return error.located(self.where(error.loc))


def read_document(path: Path) -> RawDocument:
    """Parse ``path``; unreadable or malformed files are RegistryErrors naming the file and line."""
    try:
        if path.suffix.lower() == ".json":
            return RawDocument(str(path), json.loads(path.read_text(encoding="utf-8")))
        located = load_located_yaml(path)
    except OSError as exc:
        raise RegistryError(f"cannot read the registry file: {exc.strerror or exc}").located(
            str(path)
        ) from exc
    except json.JSONDecodeError as exc:
        raise RegistryError(f"malformed JSON: {exc.msg}").located(f"{path}:{exc.lineno}:{exc.colno}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise RegistryError(f"malformed YAML: {getattr(exc, 'problem', None) or exc}").located(where) from exc
    return RawDocument(str(path), located.data, located)


def parse_document(data: dict[str, Any], raw: RawDocument) -> RegistryDocument:
    """Validate (migrated) data as a v2 document; every problem is listed with where it is."""
    try:
        return RegistryDocument.model_validate(data)
    except ValidationError as exc:
        problems = [
            (tuple(p for p in err["loc"] if not (isinstance(p, str) and _UNION_TAG.match(p))), err["msg"])
            for err in exc.errors()
        ]
        first_loc, first_msg = problems[0]
        more = [f"\n  {raw.where(loc)}: {format_loc(loc)}: {msg}" for loc, msg in problems[1:]]
        detail = first_msg + (f" (and {len(more)} more problems:{''.join(more)})" if more else "")
        raise raw.locate(RegistryError(detail, first_loc)) from None


def write_document(document: RegistryDocument, path: Path) -> None:
    """Write ``document`` as JSON (``.json``) or YAML (``.yaml``/``.yml``)."""
    data = document.model_dump(mode="json", by_alias=True, exclude_unset=True)
    suffix = path.suffix.lower()
    if suffix == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    elif suffix in (".yaml", ".yml"):
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        raise ConfigError(f"registry output {path}: the extension must be .json, .yaml or .yml")
    path.write_text(text, encoding="utf-8")
