"""Grammar artifacts: what a plugin builds and what engines consume.

An artifact is plain data (text or JSON), so it pickles, crosses queues and is stored as is.
Each artifact knows two renderings:

* ``to_vllm_payload()``: ``{"structured_outputs": {...}}`` with the field names of vLLM's
  ``vllm.sampling_params.StructuredOutputsParams`` (``grammar``, ``structural_tag`` as a JSON
  string, ``json``), usable as ``StructuredOutputsParams(**payload["structured_outputs"])``
  in-process or as ``extra_body`` of an OpenAI-compatible request.
* ``compile(compiler)``: an ``xgrammar.CompiledGrammar`` for the local engines.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import xgrammar

__all__ = [
    "EBNFGrammar",
    "GrammarArtifact",
    "JsonSchemaGrammar",
    "StructuralTagGrammar",
    "artifact_from_payload",
]


def _digest(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class EBNFGrammar:
    """An XGrammar EBNF grammar whose start rule is ``root``."""

    grammar: str
    kind: Literal["ebnf"] = field(default="ebnf", init=False)

    @property
    def cache_key(self) -> str:
        return _digest(self.kind, self.grammar)

    def to_vllm_payload(self) -> dict[str, Any]:
        return {"structured_outputs": {"grammar": self.grammar}}

    def parse(self) -> xgrammar.Grammar:
        """The grammar as XGrammar reads it (normalized), not yet compiled."""
        import xgrammar

        return xgrammar.Grammar.from_ebnf(self.grammar)


@dataclass(frozen=True, slots=True)
class StructuralTagGrammar:
    """An XGrammar structural tag, kept as its JSON form (``{"type": "structural_tag", ...}``)."""

    tag: dict[str, Any]
    kind: Literal["structural_tag"] = field(default="structural_tag", init=False)

    @property
    def tag_json(self) -> str:
        """The tag as the JSON string vLLM and XGrammar read.

        Keys keep their order: XGrammar reads a JSON schema's ``properties`` in declared order
        (nested ``json_schema`` contents included), so sorting them would change the grammar.
        """
        return json.dumps(self.tag, ensure_ascii=False)

    @property
    def cache_key(self) -> str:
        return _digest(self.kind, self.tag_json)

    def to_vllm_payload(self) -> dict[str, Any]:
        return {"structured_outputs": {"structural_tag": self.tag_json}}

    def parse(self) -> xgrammar.Grammar:
        """The grammar as XGrammar reads it (normalized), not yet compiled."""
        import xgrammar

        return xgrammar.Grammar.from_structural_tag(self.tag_json)


@dataclass(frozen=True, slots=True)
class JsonSchemaGrammar:
    """A JSON schema the whole output must satisfy."""

    schema: dict[str, Any]
    kind: Literal["json_schema"] = field(default="json_schema", init=False)

    @property
    def schema_json(self) -> str:
        """The schema as JSON, keys in their order (XGrammar keeps ``properties`` in that order)."""
        return json.dumps(self.schema, ensure_ascii=False)

    @property
    def cache_key(self) -> str:
        return _digest(self.kind, self.schema_json)

    def to_vllm_payload(self) -> dict[str, Any]:
        return {"structured_outputs": {"json": self.schema}}

    def parse(self) -> xgrammar.Grammar:
        """The grammar as XGrammar reads it (normalized), not yet compiled."""
        import xgrammar

        return xgrammar.Grammar.from_json_schema(self.schema_json, strict_mode=True)


GrammarArtifact = EBNFGrammar | StructuralTagGrammar | JsonSchemaGrammar


def artifact_from_payload(payload: dict[str, Any]) -> GrammarArtifact:
    """Rebuild an artifact from a vLLM-style ``structured_outputs`` object.

    Accepts either the inner object or the ``{"structured_outputs": {...}}`` wrapper; exactly
    one of ``grammar``, ``structural_tag`` or ``json`` must be set (as vLLM requires).
    """
    from structured_agents.errors import GrammarError

    inner = payload.get("structured_outputs", payload)
    if not isinstance(inner, dict):
        raise GrammarError(f"structured_outputs must be an object, got {type(inner).__name__}")
    kinds = [k for k in ("grammar", "structural_tag", "json") if inner.get(k) is not None]
    if len(kinds) != 1:
        raise GrammarError(
            "structured_outputs must set exactly one of 'grammar', 'structural_tag', 'json'; "
            f"got {kinds or 'none'} (keys: {sorted(inner)})"
        )
    value = inner[kinds[0]]
    if kinds[0] == "grammar":
        if not isinstance(value, str):
            raise GrammarError("structured_outputs.grammar must be a string")
        return EBNFGrammar(value)
    if kinds[0] == "structural_tag":
        tag = json.loads(value) if isinstance(value, str) else value
        if not isinstance(tag, dict):
            raise GrammarError("structured_outputs.structural_tag must be a JSON object")
        return StructuralTagGrammar(tag)
    schema = json.loads(value) if isinstance(value, str) else value
    if not isinstance(schema, dict):
        raise GrammarError("structured_outputs.json must be a JSON schema object")
    return JsonSchemaGrammar(schema)
