"""Grammar configuration, artifacts and compilation."""

from structured_agents.grammar.artifacts import (
    EBNFGrammar,
    GrammarArtifact,
    JsonSchemaGrammar,
    StructuralTagGrammar,
    artifact_from_payload,
)
from structured_agents.grammar.config import ArgsFormat, GrammarConfig, GrammarMode

__all__ = [
    "ArgsFormat",
    "EBNFGrammar",
    "GrammarArtifact",
    "GrammarConfig",
    "GrammarMode",
    "JsonSchemaGrammar",
    "StructuralTagGrammar",
    "artifact_from_payload",
]
